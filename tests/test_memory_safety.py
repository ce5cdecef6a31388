"""Canaries around every argument: no stencil call, flag or cache lets gridbuf read or write
outside the arrays it was handed.

Every argument is carved out of one larger byte buffer filled with a sentinel pattern, with a gap
before and after each; after the call, every byte that does not belong to an element of an
argument must still hold the sentinel, and a call that raises must have changed nothing at all.
The calls cover gtscript stencils, ``gb.stencil`` Python kernels, the native kernels and the halo
exchange's pack and unpack, with dtypes of other element sizes than the stencil's (the case
``validate_args=False`` once let through), big-endian arrays, negative, zero and padded strides,
and both orders of skipped and validated checks (the binding cache keeps them apart).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gridbuf as gb
from gridbuf import gtscript
from gridbuf.gtscript import PARALLEL, Field, K, computation, interval

SENTINEL = 0xA5
GAP = 24  # bytes of sentinel before and after every argument


class Arena:
    """Arguments laid out one after the other in one byte buffer, with sentinel gaps around each."""

    def __init__(self, specs):
        """`specs`: per argument (shape, dtype, byte strides or None for C order, misalign)."""
        layouts = []
        size = 0
        for shape, dtype, strides, misalign in specs:
            dtype = np.dtype(dtype)
            if strides is None:
                strides = tuple(int(s) for s in np.empty(shape, dtype).strides)
            if 0 in shape:
                lo, hi = 0, 0
            else:
                lo = sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
                hi = sum(max(0, (n - 1) * s) for n, s in zip(shape, strides)) + dtype.itemsize
            start = -(-(size + GAP) // 16) * 16 + misalign  # aligned unless asked otherwise
            layouts.append((shape, dtype, strides, start - lo))
            size = start + (hi - lo)
        self.buf = np.full(size + GAP, SENTINEL, np.uint8)
        self.owned = np.zeros(self.buf.size, bool)
        self.arrays = []
        for shape, dtype, strides, offset in layouts:
            a = np.ndarray(shape, dtype, buffer=self.buf, offset=offset, strides=strides)
            self.arrays.append(a)
            if a.size:
                idx = np.indices(shape).reshape(len(shape), -1)
                first = offset + (np.asarray(strides)[:, None] * idx).sum(axis=0)
                self.owned[(first[:, None] + np.arange(dtype.itemsize)).ravel()] = True

    def fill(self, rng):
        """Random contents for every argument (sentinel gaps untouched), then a snapshot."""
        for a in self.arrays:
            if a.size == 0:
                continue
            if a.dtype.kind == "b":
                a[...] = rng.random(a.shape) < 0.5
            elif a.dtype.kind in "iu":
                a[...] = rng.integers(-100, 100, a.shape).astype(a.dtype)
            else:
                a[...] = rng.random(a.shape)
        self.before = self.buf.copy()

    def check_gaps(self):
        """Every byte outside the arguments' elements still holds the sentinel."""
        changed = np.flatnonzero((self.buf != self.before) & ~self.owned)
        assert changed.size == 0, f"bytes outside the arguments written at {changed[:8].tolist()}"
        assert (self.buf[~self.owned] == SENTINEL).all()

    def check_unchanged(self):
        changed = np.flatnonzero(self.buf != self.before)
        assert changed.size == 0, f"a refused call wrote bytes {changed[:8].tolist()}"


def call_checked(arena, call):
    """Runs `call`; if it raises a gridbuf error, nothing may have changed, else no gap byte."""
    try:
        call()
    except gb.GridbufError:
        arena.check_unchanged()
        return False
    arena.check_gaps()
    return True


# --- gtscript stencils of each element type -------------------------------------------------

@gtscript.stencil(backend="numpy")
def copy_f64(inp: Field[np.float64], out: Field[np.float64]):
    with computation(PARALLEL), interval(...):
        out = inp


@gtscript.stencil(backend="numpy")
def copy_f32(inp: Field[np.float32], out: Field[np.float32]):
    with computation(PARALLEL), interval(...):
        out = inp


@gtscript.stencil(backend="numpy")
def copy_i32(inp: Field[np.int32], out: Field[np.int32]):
    with computation(PARALLEL), interval(...):
        out = inp


@gtscript.stencil(backend="numpy")
def copy_i8(inp: Field[np.int8], out: Field[np.int8]):
    with computation(PARALLEL), interval(...):
        out = inp


@gtscript.stencil(backend="numpy")
def copy_bool(inp: Field[np.bool_], out: Field[np.bool_]):
    with computation(PARALLEL), interval(...):
        out = inp


@gtscript.stencil(backend="numpy")
def shift_f64(inp: Field[np.float64], out: Field[np.float64]):
    with computation(PARALLEL), interval(...):
        out = inp[1, 0, 0] + inp[-1, 0, 0] + inp[0, 1, 0]


GT_STENCILS = {
    "float64": copy_f64,
    "float32": copy_f32,
    "int32": copy_i32,
    "int8": copy_i8,
    "bool": copy_bool,
}
ARRAY_DTYPES = ["float64", "float32", "int32", "int8", "bool", ">f8", "int64", "float16"]


def test_the_reported_float32_write_past_the_array_is_refused():
    # issue 36, 1: a float32 output with validate_args=False once had float64 stored into it.
    big = np.full(4 * 3 * 4 + 5, -1.0, np.float32)
    out = big[1:49].reshape(4, 3, 4)[:, :, 1::2]
    with pytest.raises(gb.GridbufValueError, match='field "out" has dtype float32') as e:
        copy_f64(np.ones((4, 3, 2)), out, validate_args=False)
    assert isinstance(e.value, ValueError)
    assert "validate_args=False" in str(e.value)
    assert (big == -1.0).all()
    # The read side: a float32 input is refused too, nothing written.
    out64 = np.zeros((4, 3, 2))
    with pytest.raises(gb.GridbufValueError, match='field "inp"'):
        copy_f64(np.ones((4, 3, 2), np.float32), out64, validate_args=False)
    assert (out64 == 0).all()


@pytest.mark.parametrize("stencil_dtype", list(GT_STENCILS))
@pytest.mark.parametrize("array_dtype", ARRAY_DTYPES)
@pytest.mark.parametrize("validate", [True, False])
def test_gtscript_canaries_by_dtype(stencil_dtype, array_dtype, validate):
    st = GT_STENCILS[stencil_dtype]
    arena = Arena([((5, 4, 3), array_dtype, None, 0), ((5, 4, 3), array_dtype, None, 0)])
    arena.fill(np.random.default_rng(1))
    inp, out = arena.arrays
    ran = call_checked(arena, lambda: st(inp, out, validate_args=validate))
    same_size = np.dtype(array_dtype).itemsize == np.dtype(stencil_dtype).itemsize
    same = np.dtype(array_dtype) == np.dtype(stencil_dtype)
    # Refused: any other element size always, any other dtype when validated.
    assert ran == (same if validate else same_size)
    if same:
        assert (out == inp).all()


@pytest.mark.parametrize("first_validated", [False, True])
def test_skipped_and_validated_checks_are_cached_apart(first_validated):
    # int64 has float64's size: with validate_args=False it runs (bits read as float64, inside
    # the arrays); a validated call with the same layout must still refuse it, in either order.
    arena = Arena([((6, 5, 4), np.int64, None, 0), ((6, 5, 4), np.int64, None, 0)])
    arena.fill(np.random.default_rng(2))
    inp, out = arena.arrays
    st = gtscript.stencil(backend="numpy", definition=copy_f64.definition_func)
    for validate in ([True, False] if first_validated else [False, True]) * 2:
        arena.before = arena.buf.copy()
        ran = call_checked(arena, lambda: st(inp, out, validate_args=validate))
        assert ran is (not validate)
    # float32 (another size) is refused in either order, whatever was cached before.
    arena32 = Arena([((6, 5, 4), np.float32, None, 0), ((6, 5, 4), np.float32, None, 0)])
    arena32.fill(np.random.default_rng(3))
    for validate in (False, True, False):
        assert not call_checked(arena32, lambda: st(*arena32.arrays, validate_args=validate))


def test_big_endian_arrays_stay_inside():
    arena = Arena([((5, 4, 3), ">f8", None, 0), ((5, 4, 3), ">f8", None, 0)])
    arena.fill(np.random.default_rng(4))
    assert not call_checked(arena, lambda: copy_f64(*arena.arrays))  # another dtype: refused
    assert call_checked(arena, lambda: copy_f64(*arena.arrays, validate_args=False))


def test_offset_reads_stay_inside_with_an_origin():
    arena = Arena([((8, 7, 3), np.float64, None, 0), ((8, 7, 3), np.float64, None, 0)])
    arena.fill(np.random.default_rng(5))
    inp, out = arena.arrays
    for validate in (True, False):
        assert call_checked(arena, lambda: shift_f64(inp, out, origin=(1, 0, 0), domain=(6, 6, 3), validate_args=validate))
        # One point too far: refused before anything is written.
        arena.before = arena.buf.copy()
        assert not call_checked(arena, lambda: shift_f64(inp, out, origin=(1, 0, 0), domain=(7, 6, 3), validate_args=validate))
        assert not call_checked(arena, lambda: shift_f64(inp, out, origin=(0, 0, 0), domain=(6, 6, 3), validate_args=validate))


@gtscript.stencil(backend="numpy")
def var_k_read(src: Field[np.float64], idx: Field[np.int32], out: Field[np.float64]):
    with computation(PARALLEL), interval(...):
        out = src[0, 0, idx]


@pytest.mark.parametrize("k_stride", ["C", "K outermost", "K reversed"])
def test_run_time_k_reads_stay_inside_the_array(k_stride):
    """A read at a run-time K level may reach any level of the field's array (the binder's view
    spans its whole K axis), never one beyond it: the sentinel bytes around it, where the level
    before the first and after the last would lie, are never read into the output."""
    shape = (3, 2, 6)
    item = 8
    strides = {
        "C": None,
        "K outermost": (shape[1] * item, item, shape[0] * shape[1] * item),
        "K reversed": (shape[1] * shape[2] * item, shape[2] * item, -item),
    }[k_stride]
    arena = Arena([(shape, np.float64, strides, 0), (shape, np.int32, None, 0), (shape, np.float64, None, 0)])
    arena.fill(np.random.default_rng(7))
    src, idx, out = arena.arrays
    origin, domain = (0, 0, 1), (3, 2, 4)
    for level in range(shape[2]):
        idx[...] = 0
        idx[:, :, 1:5] = level - np.arange(1, 5)  # every point reads array level `level`
        arena.before = arena.buf.copy()
        assert call_checked(arena, lambda: var_k_read(src, idx, out, origin=origin, domain=domain))
        np.testing.assert_array_equal(out[:, :, 1:5], np.repeat(src[:, :, level : level + 1], 4, axis=2))
    for level in (-1, shape[2]):  # one level beyond either end of the array: refused
        idx[:, :, 1:5] = level - np.arange(1, 5)
        before_out = out.copy()
        with pytest.raises(gb.GridbufValueError, match="src"):
            var_k_read(src, idx, out, origin=origin, domain=domain)
        arena.check_gaps()
        assert not np.isin(out, [np.frombuffer(bytes([SENTINEL] * 8), np.float64)[0]]).any() or (out == before_out).all()


@gtscript.stencil(backend="numpy")
def var_k_write(src: Field[np.float64], idx: Field[np.int32], out: Field[np.float64]):
    with computation(FORWARD), interval(...):
        out[0, 0, idx] = src
        out = out + src


@pytest.mark.parametrize("k_stride", ["C", "K outermost", "K reversed", "F"])
def test_run_time_k_writes_stay_inside_the_array(k_stride):
    """A write at a run-time K level may reach any level of the field's array, never one beyond
    it: the sentinel bytes where the level before the first and after the last would lie keep
    their value, and a level beyond is refused naming the field and the level."""
    shape = (3, 2, 6)
    item = 8
    strides = {
        "C": None,
        "K outermost": (shape[1] * item, item, shape[0] * shape[1] * item),
        "K reversed": (shape[1] * shape[2] * item, shape[2] * item, -item),
        "F": (item, shape[0] * item, shape[0] * shape[1] * item),
    }[k_stride]
    arena = Arena([(shape, np.float64, None, 0), (shape, np.int32, None, 0), (shape, np.float64, strides, 0)])
    arena.fill(np.random.default_rng(8))
    src, idx, out = arena.arrays
    origin, domain = (0, 0, 1), (3, 2, 4)
    for level in range(shape[2]):
        idx[...] = 0
        idx[:, :, 1:5] = level - np.arange(1, 5)  # every point writes array level `level`
        out[...] = 0.0
        arena.before = arena.buf.copy()
        assert call_checked(arena, lambda: var_k_write(src, idx, out, origin=origin, domain=domain))
    for level in (-1, shape[2]):  # one level beyond either end of the array: refused
        idx[:, :, 1:5] = level - np.arange(1, 5)
        arena.before = arena.buf.copy()
        with pytest.raises(gb.GridbufValueError, match=f'level {level - origin[2]}.*"out"'):  # from the domain's first
            var_k_write(src, idx, out, origin=origin, domain=domain)
        arena.check_gaps()


@gtscript.stencil(backend="numpy")
def reads_after_origin(a: Field[np.float64], out: Field[np.float64]):
    with computation(PARALLEL), interval(...):
        out = a[1, 0, 1] + a[2, 1, 2]


def test_negative_origins_read_only_inside_the_array():
    """A field read only after its origin (`a[1, 0, 1]`, `a[2, 1, 2]`) may take an origin as low
    as minus the smallest offset (GT4Py's boundary); its view starts inside the array, and an
    origin one lower is refused before anything is written."""
    arena = Arena([((4, 4, 5), np.float64, None, 0), ((2, 3, 3), np.float64, None, 0)])
    arena.fill(np.random.default_rng(9))
    a, out = arena.arrays
    for validate in (True, False):
        arena.before = arena.buf.copy()
        assert call_checked(arena, lambda: reads_after_origin(a, out, origin={"a": (-1, 0, -1), "out": (0, 0, 0)}, validate_args=validate))
        np.testing.assert_array_equal(out, a[0:2, 0:3, 0:3] + a[1:3, 1:4, 1:4])
        for bad in ((-2, 0, -1), (-1, -1, -1), (-1, 0, -2)):
            arena.before = arena.buf.copy()
            assert not call_checked(arena, lambda: reads_after_origin(a, out, origin={"a": bad, "out": (0, 0, 0)}, validate_args=validate))
        # The largest domain from the origin: a's upper side bounds it.
        arena.before = arena.buf.copy()
        assert not call_checked(arena, lambda: reads_after_origin(a, out, origin={"a": (-1, 0, -1), "out": (0, 0, 0)}, domain=(2, 3, 4)))


@gtscript.stencil(backend="numpy")
def run_time_component(v: Field[(np.float64, (3,))], w: Field[(np.float64, (3,))], *, index: int):
    with computation(PARALLEL), interval(...):
        w[0, 0, 0][index] = v[0, 0, 0][index] * 2.0


@pytest.mark.parametrize("index", [-1, 0, 1, 2, 3])
def test_run_time_data_dim_indices_stay_inside(index):
    """A data-dim index that is a scalar parameter reads and writes only components of the
    fields; one that names no component is refused before anything is written."""
    arena = Arena([((4, 3, 2, 3), np.float64, None, 0), ((4, 3, 2, 3), np.float64, None, 0)])
    arena.fill(np.random.default_rng(index + 1))
    v, w = arena.arrays
    want = w.copy()
    ok = call_checked(arena, lambda: run_time_component(v, w, index=index))
    assert ok == (0 <= index < 3)
    if ok:
        want[..., index] = v[..., index] * 2.0
        np.testing.assert_array_equal(w, want)


@gtscript.stencil(backend="numpy")
def k_as_value(a: Field[np.float64], out: Field[np.float64]):
    with computation(PARALLEL), interval(...):
        out = a * K


@gtscript.stencil(backend="numpy")
def aliased(q_in: Field[np.float64], q_out: Field[np.float64]):
    with computation(PARALLEL), interval(...):
        q_out = q_in + 1.0


def test_k_as_a_value_and_one_array_as_two_fields_stay_inside():
    """`K` read as a value (a hidden field of level numbers the call adds) and one array passed
    as input and output (the variant with the two fields as one) touch only their arrays."""
    arena = Arena([((5, 4, 6), np.float64, None, 0), ((5, 4, 6), np.float64, (8, 40, 160), 0), ((5, 4, 6), np.float64, None, 0)])
    arena.fill(np.random.default_rng(11))
    a, out, q = arena.arrays
    want = a * np.arange(-1, 5)  # origin 1 in K: the domain's first level is K == 0
    assert call_checked(arena, lambda: k_as_value(a, out, origin=(0, 0, 1), domain=(5, 4, 5)))
    np.testing.assert_array_equal(out[:, :, 1:], want[:, :, 1:])
    q0 = q.copy()
    arena.before = arena.buf.copy()
    assert call_checked(arena, lambda: aliased(q, q, origin=(1, 1, 0), domain=(3, 2, 6)))
    q0[1:4, 1:3, :] += 1.0
    np.testing.assert_array_equal(q, q0)


# --- hypothesis: dtypes, strides, offsets, the flag -------------------------------------------

def strided(draw, shape, dtype):
    """Byte strides for `shape`: a permutation of C order with padding, some axes reversed or
    (for extent-1 or broadcast axes) zero."""
    itemsize = np.dtype(dtype).itemsize
    order = draw(st.permutations(range(len(shape))))
    strides = [0] * len(shape)
    step = itemsize * draw(st.sampled_from([1, 1, 2, 3]))
    for ax in reversed(order):
        strides[ax] = step
        step *= shape[ax] + draw(st.integers(0, 2))
    for ax in range(len(shape)):
        kind = draw(st.sampled_from(["keep", "keep", "negative", "zero"]))
        if kind == "negative":
            strides[ax] = -strides[ax]
        elif kind == "zero":
            strides[ax] = 0
    return tuple(strides)


@st.composite
def calls(draw):
    shape = tuple(draw(st.integers(1, 5)) for _ in range(3))
    specs = []
    for _ in range(2):
        dtype = draw(st.sampled_from(ARRAY_DTYPES))
        misalign = draw(st.sampled_from([0, 0, 0, 1, 4]))
        specs.append((shape, dtype, strided(draw, shape, dtype), misalign))
    return specs, draw(st.sampled_from(list(GT_STENCILS) + ["shift"])), draw(st.booleans())


@settings(max_examples=150, deadline=None)
@given(calls())
def test_gtscript_canaries_hypothesis(case):
    specs, which, validate = case
    st_ = shift_f64 if which == "shift" else GT_STENCILS[which]
    arena = Arena(specs)
    arena.fill(np.random.default_rng(6))
    inp, out = arena.arrays
    origin = (1, 0, 0) if which == "shift" else (0, 0, 0)
    ran = call_checked(arena, lambda: st_(inp, out, origin=origin, validate_args=validate))
    if ran and which != "shift" and inp.dtype == out.dtype == np.dtype(which) and 0 not in out.strides:
        assert (out == inp).all()


@settings(max_examples=80, deadline=None)
@given(calls())
def test_native_kernel_canaries_hypothesis(case):
    specs, _, validate = case
    arena = Arena(specs)
    arena.fill(np.random.default_rng(7))
    inp, out = arena.arrays
    ran = call_checked(arena, lambda: gb.kernels.copy(inp, out, validate_args=validate))
    if ran and inp.dtype == out.dtype and inp.dtype.isnative:
        assert (out == inp).all()


@gb.stencil
def py_copy(inp: gb.Field[np.float64, "IJK"], out: gb.Field[np.float64, "IJK"]):
    out[...] = inp


@settings(max_examples=80, deadline=None)
@given(calls())
def test_python_kernel_canaries_hypothesis(case):
    specs, _, validate = case
    arena = Arena(specs)
    arena.fill(np.random.default_rng(8))
    inp, out = arena.arrays
    ran = call_checked(arena, lambda: py_copy(inp, out, validate_args=validate))
    if ran and inp.dtype == out.dtype == np.float64 and 0 not in out.strides:
        assert (out == inp).all()


@pytest.mark.parametrize("kernel", ["copy", "laplacian", "hdiff"])
@pytest.mark.parametrize("dtype", ["float64", "float32", ">f8", "int64", "int32"])
@pytest.mark.parametrize("validate", [True, False])
def test_native_kernels_canaries_by_dtype(kernel, dtype, validate):
    k = gb.kernels.ALL[kernel]
    n = len(k.fields)
    arena = Arena([((9, 8, 3), dtype, None, 0)] * n)
    arena.fill(np.random.default_rng(9))
    halo = 0 if kernel == "copy" else 2
    native = np.dtype(dtype) in (np.dtype("float64"), np.dtype("float32"))
    for origin in [(halo, halo, 0), (0, 0, 0)]:
        arena.before = arena.buf.copy()
        ran = call_checked(arena, lambda: k(*arena.arrays, origin=origin, validate_args=validate))
        assert ran == (native and origin[0] >= halo)


# --- the halo exchange's pack and unpack ---------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float64", "float32", "int8", "bool", ">f8"])
@pytest.mark.parametrize("order", ["C", "F", "padded"])
def test_halo_pack_unpack_canaries(dtype, order):
    shape = (10, 9, 3)
    nb = np.dtype(dtype).itemsize
    if order == "C":
        strides = None
    elif order == "F":
        strides = (nb, nb * 10, nb * 90)
    else:
        strides = (nb * 11 * 3, nb * 3, nb)  # an unused I-row pad per J step
    arena = Arena([(shape, dtype, strides, 0), (shape, dtype, strides, 0)])
    arena.fill(np.random.default_rng(10))
    specs = [([0, 1], [(2, 2), (2, 2)], [(2, 2), (2, 2)])] * 2
    # Rank 4 of a 3x3 periodic grid: a neighbour on every side, none of them this rank.
    plan = gb._gridbuf.HaloExchangePlan(arena.arrays, specs, ["I", "J"], [18, 15], [3, 3], [True, True], 4, True)
    assert 4 not in plan.peers
    plan.pack(None, False)
    arena.check_unchanged()  # packing reads only
    for b in plan.recv_buffers:
        b[...] = np.random.default_rng(11).integers(0, 2 if dtype == "bool" else 255, b.size, dtype=np.uint8)
    plan.unpack(None, False)
    arena.check_gaps()
    plan.pack(None, True)
    plan.unpack(None, True)
    arena.check_gaps()


@pytest.mark.parametrize("dtype", ["float64", "int8", ">f4"])
def test_halo_copy_local_canaries(dtype):
    # One process, periodic: every message goes to the process itself, interior to halo.
    arena = Arena([((9, 8, 2), dtype, None, 0), ((9, 8, 2), dtype, (8 * 2 * 2 * np.dtype(dtype).itemsize, 2 * np.dtype(dtype).itemsize, np.dtype(dtype).itemsize), 0)])
    arena.fill(np.random.default_rng(13))
    specs = [([0, 1], [(2, 2), (2, 2)], [(2, 2), (1, 2)])] * 2
    plan = gb._gridbuf.HaloExchangePlan(arena.arrays, specs, ["I", "J"], [5, 4], [1, 1], [True, True], 0, True)
    assert set(plan.peers) == {0}
    for i in range(len(plan.peers)):
        plan.copy_local(i)
    arena.check_gaps()
    a = arena.arrays[0]
    assert (a[:2, 2:6] == a[5:7, 2:6]).all()  # the low I halo holds the high interior


def test_halo_unpack_refuses_a_shrunken_buffer():
    a = np.zeros((10, 9, 3))
    b = np.zeros((10, 9, 3))
    plan = gb._gridbuf.HaloExchangePlan([a, b], [([0, 1], [(2, 2), (2, 2)], [(2, 2), (2, 2)])] * 2, ["I", "J"], [18, 15], [3, 3], [True, True], 4, True)
    buf = plan.recv_buffers[0]
    buf.resize(1, refcheck=False)  # NumPy's own unchecked resize: the plan must not trust the old size
    with pytest.raises(gb.GridbufValueError, match="buffer"):
        plan.unpack(None, False)
    with pytest.raises(gb.GridbufValueError, match="buffer"):
        plan.unpack(0, False)


# --- smaller findings: messages and refusals ---------------------------------------------------

def test_unknown_origin_key_is_refused_naming_it():
    a, b = np.ones((4, 4, 3)), np.zeros((4, 4, 3))
    with pytest.raises(gb.GridbufValueError, match='"zzz"') as e:
        copy_f64(a, b, origin={"_all_": (0, 0, 0), "zzz": (1, 1, 1)})
    assert isinstance(e.value, ValueError)
    assert (b == 0).all()
    with pytest.raises(gb.GridbufValueError, match='"zzz"'):
        gb.kernels.copy(a, b, origin={"zzz": (0, 0, 0)})


def test_negative_origin_names_the_field():
    a, b = np.ones((4, 4, 3)), np.zeros((4, 4, 3))
    with pytest.raises(gb.GridbufError, match=r'"out" has origin -3 along I'):
        copy_f64(a, b, origin={"out": (-3, 0, 0)})
    assert (b == 0).all()


def test_zero_size_array_names_the_field():
    a, b = np.ones((4, 0, 3)), np.zeros((4, 4, 3))
    with pytest.raises(gb.GridbufValueError, match='field "inp"'):
        copy_f64(a, b)


@pytest.mark.parametrize("value", [np.complex128(0.3 + 2j), np.complex64(1 + 1j), 1j, complex(2, 0)])
def test_complex_scalar_is_refused(value):
    @gtscript.stencil(backend="numpy")
    def scale(inp: Field[np.float64], out: Field[np.float64], *, alpha: float):
        with computation(PARALLEL), interval(...):
            out = inp * alpha

    a, b = np.ones((3, 3, 2)), np.zeros((3, 3, 2))
    with pytest.raises(gb.GridbufTypeError, match="alpha"):
        scale(a, b, alpha=value)
    assert (b == 0).all()


def test_the_canaries_catch_a_write_one_byte_past_an_argument():
    arena = Arena([((3, 2), np.float32, None, 0)])
    arena.fill(np.random.default_rng(12))
    a = arena.arrays[0]
    past = np.ndarray((1,), np.uint8, buffer=arena.buf, offset=a.__array_interface__["data"][0] - arena.buf.__array_interface__["data"][0] + a.nbytes)
    past[0] = 0
    with pytest.raises(AssertionError, match="outside the arguments"):
        arena.check_gaps()
