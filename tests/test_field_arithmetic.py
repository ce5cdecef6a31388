"""Fields that compute (GDP-3): ufuncs and array functions broadcast by dims name, results get
gridbuf's output storage parameters, indexing keeps dims, assignment broadcasts by dims.

Every expected value is a NumPy computation written by hand with explicit broadcasting, and the
expected storage parameters come from the rules in GDP-3's "Output Storage Parameters",
re-implemented here independently of gridbuf's core.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
from conftest import BUILTIN_BASE_LAYOUTS, CPU_PRESETS, reference_layout
from hypothesis import given
from hypothesis import strategies as st

import gridbuf as gb

RNG = np.random.default_rng(5)


def canonical(dims):
    """I, J, K, then data dims by number."""
    return tuple(sorted(dims, key=lambda d: ("IJK".index(d), 0) if d in "IJK" else (3, int(d))))


def align(array, dims, out_dims):
    """``array`` (with ``dims``) as an array over ``out_dims``: transposed by name, with axes of
    length 1 inserted for the dims it lacks (written out by hand, no gridbuf involved)."""
    array = np.asarray(array)
    order = [dims.index(d) for d in out_dims if d in dims]
    moved = np.transpose(array, order) if order else array
    shape = [array.shape[dims.index(d)] if d in dims else 1 for d in out_dims]
    return moved.reshape(shape)


def plan_of(f):
    return f.array.base.plan


@pytest.fixture
def issue_fields():
    t = gb.Field.zeros((64, 64, 80), backend="gt:cpu_ifirst", halo=(3, 3, 0))
    t[...] = RNG.random((64, 64, 80))
    p = gb.Field.from_array(np.linspace(0, 1, 80), dims="K")
    s = gb.Field.ones((64, 64), dims="IJ")
    s[...] = RNG.random((64, 64))
    return t, p, s


# --------------------------------------------------------------------------------------------
# The examples of the issue.
# --------------------------------------------------------------------------------------------
def test_issue_expression_broadcasts_by_dims_and_keeps_the_layout_of_t(issue_fields):
    t, p, s = issue_fields
    tn, pn, sn = t.to_numpy(), p.to_numpy(), s.to_numpy()
    x = t + p * s
    expected = tn + pn[np.newaxis, np.newaxis, :] * sn[:, :, np.newaxis]
    np.testing.assert_allclose(x.to_numpy(), expected, rtol=0, atol=0)
    assert x.dims == ("I", "J", "K")
    assert x.strides == t.strides  # laid out as t: I has unit stride
    assert plan_of(x).layout == plan_of(t).layout == (2, 1, 0)
    assert x.halo == t.halo == ((3, 3), (3, 3), (0, 0))
    assert x.aligned_index == (3, 3, 0)
    assert plan_of(x).backend == "gt:cpu_ifirst"
    # The intermediate K * IJ is an IJK field too.
    ps = p * s
    assert ps.dims == ("I", "J", "K") and ps.shape == (64, 64, 80)


def test_issue_int_index_drops_a_dim(issue_fields):
    t, _, _ = issue_fields
    col = t[5, 7, :]
    assert isinstance(col, gb.Field)
    assert col.dims == ("K",) and col.shape == (80,)
    np.testing.assert_array_equal(col.to_numpy(), t.to_numpy()[5, 7, :])
    assert np.shares_memory(col.to_numpy(), t.to_numpy())


def test_issue_mean_drops_the_reduced_dim(issue_fields):
    t, _, _ = issue_fields
    m = np.mean(t, axis=2)
    assert m.dims == ("I", "J") and m.shape == (64, 64)
    np.testing.assert_allclose(m.to_numpy(), np.mean(t.to_numpy(), axis=2))
    assert m.halo == ((3, 3), (3, 3))
    assert plan_of(m).layout == (1, 0)  # I keeps the unit stride
    np.testing.assert_allclose(np.mean(t, axis="K").to_numpy(), m.to_numpy())


def test_issue_assignment_broadcasts_by_dims(issue_fields):
    t, p, s = issue_fields
    before = t.to_numpy().copy()
    t[:, :, 0] = s
    expected = before.copy()
    expected[:, :, 0] = s.to_numpy()
    np.testing.assert_array_equal(t.to_numpy(), expected)
    # A K field assigned to all of t is replicated along I and J.
    t[...] = p
    np.testing.assert_array_equal(t.to_numpy(), np.broadcast_to(p.to_numpy()[None, None, :], t.shape))


def test_issue_transpose_is_a_view_with_permuted_labels(issue_fields):
    t, _, _ = issue_fields
    u = t.transpose("K", "J", "I")
    assert u.dims == ("K", "J", "I")
    assert u.shape == (80, 64, 64)
    assert u.strides == tuple(reversed(t.strides))
    assert u.halo == ((0, 0), (3, 3), (3, 3))
    assert np.shares_memory(u.to_numpy(), t.to_numpy())
    np.testing.assert_array_equal(u.to_numpy(), t.to_numpy().transpose(2, 1, 0))
    assert t.transpose("KJI").dims == u.dims
    assert t.transpose(2, 1, 0).dims == u.dims
    assert t.transpose().dims == u.dims == np.transpose(t).dims
    assert t.T.dims == u.dims
    # A transposed view keeps the storage parameters of the memory it shows.
    assert u.aligned_index == (0, 3, 3)
    assert (u + 1).strides == u.strides


# --------------------------------------------------------------------------------------------
# Broadcasting rules.
# --------------------------------------------------------------------------------------------
def test_dims_that_agree_keep_their_order():
    a = gb.Field(RNG.random((4, 3, 2)), dims="KJI")
    b = gb.Field(RNG.random((4, 1, 2)), dims="KJI")
    c = a * b
    assert c.dims == ("K", "J", "I")
    np.testing.assert_array_equal(c.to_numpy(), a.to_numpy() * b.to_numpy())
    # Different orders: the union in I, J, K order, aligned by name.
    d = a + gb.Field(RNG.random((2, 3, 4)), dims="IJK")
    assert d.dims == ("I", "J", "K")


def test_length_one_counts_as_absent():
    a = gb.Field(RNG.random((4, 5, 1)), dims="IJK")
    k = gb.Field(RNG.random(6), dims="K")
    r = a + k
    assert r.dims == ("I", "J", "K") and r.shape == (4, 5, 6)
    np.testing.assert_array_equal(r.to_numpy(), a.to_numpy() + k.to_numpy()[None, None, :])


def test_data_dims_broadcast_by_name():
    a = gb.Field.ones((3, 4, 2), dims=("I", "0", "1"))
    b = gb.Field(np.arange(4.0), dims=("0",))
    r = a * b
    assert r.dims == ("I", "0", "1")
    np.testing.assert_array_equal(r.to_numpy(), np.ones((3, 4, 2)) * np.arange(4.0)[None, :, None])


def test_plain_arrays_and_scalars():
    t = gb.Field(RNG.random((4, 5, 6)))
    tn = t.to_numpy()
    same = RNG.random((4, 5, 6))
    np.testing.assert_array_equal((t + same).to_numpy(), tn + same)
    np.testing.assert_array_equal((same - t).to_numpy(), same - tn)
    with_ones = RNG.random((4, 1, 6))
    np.testing.assert_array_equal((t * with_ones).to_numpy(), tn * with_ones)
    np.testing.assert_array_equal((2 * t + 1.5).to_numpy(), 2 * tn + 1.5)
    np.testing.assert_array_equal(np.maximum(t, 0.5).to_numpy(), np.maximum(tn, 0.5))
    # A 3-D plain array is read as I, J, K when the result is not 3-D.
    ij = gb.Field(RNG.random((5, 4)), dims="JI")
    col = RNG.random((4, 5, 1))
    r = ij + col
    assert r.dims == ("J", "I")
    np.testing.assert_array_equal(r.to_numpy(), ij.to_numpy() + col[:, :, 0].T)
    # NumPy's own broadcasting of lower-dimensional arrays is not guessed.
    with pytest.raises(gb.GridbufValueError, match=r"\(6,\)"):
        t + np.ones(6)


def test_weak_scalars_keep_the_field_dtype():
    f = gb.Field.ones((3, 3), dtype=np.float32)
    assert (f + 1.0).dtype == np.float32
    assert (f + np.float64(1.0)).dtype == np.float64
    i = gb.Field.ones((3, 3), dtype=np.int8)
    assert (i + 1).dtype == np.int8
    assert (i / 2).dtype == np.float64
    assert (f + i).dtype == np.result_type(np.float32, np.int8)


def test_unary_comparison_and_multi_output_ufuncs():
    a = gb.Field.from_array(RNG.random((4, 5)) - 0.5, dims="JK", backend="gt:cpu_kfirst")
    an = a.to_numpy()
    for r, e in [(-a, -an), (abs(a), abs(an)), (np.sqrt(abs(a)), np.sqrt(abs(an))), (a > 0, an > 0)]:
        assert r.dims == ("J", "K")
        np.testing.assert_array_equal(r.to_numpy(), e)
    q, rem = divmod(a, 0.25)
    np.testing.assert_array_equal(q.to_numpy(), an // 0.25)
    assert rem.dims == ("J", "K") and plan_of(rem).layout == plan_of(a).layout
    m, e = np.frexp(a)
    np.testing.assert_array_equal(m.to_numpy(), np.frexp(an)[0])


def test_where_mask_broadcasts_by_dims():
    a = gb.Field.zeros((4, 5, 6))
    k = gb.Field(np.arange(6) % 2 == 0, dims="K")
    np.add(a, 1.0, out=a, where=k)
    np.testing.assert_array_equal(a.to_numpy(), np.broadcast_to((np.arange(6) % 2 == 0).astype(float), (4, 5, 6)))


def test_in_place_operators_keep_the_field():
    t = gb.Field.zeros((4, 5, 6), backend="gt:cpu_ifirst")
    memory = t.to_numpy()
    k = gb.Field(np.arange(6.0), dims="K")
    t += k
    t *= 2
    assert t.to_numpy() is memory
    np.testing.assert_array_equal(memory, np.broadcast_to(2 * np.arange(6.0), (4, 5, 6)))


# --------------------------------------------------------------------------------------------
# Output storage parameters.
# --------------------------------------------------------------------------------------------
def test_output_parameters_follow_gdp3():
    a = gb.Field.zeros((10, 8, 6), backend="gt:cpu_kfirst", halo=((2, 1), (1, 1), 0), alignment=32, aligned_index=(4, 1, 0))
    b = gb.Field.zeros((10, 8), dims="IJ", backend="gt:cpu_ifirst", halo=((1, 3), 2), alignment=64)
    r = a + b
    p = plan_of(r)
    assert r.dims == ("I", "J", "K")
    assert p.layout == plan_of(a).layout  # the first field's
    assert p.row_alignment == 64 == r.alignment  # lcm(32, 64)
    assert r.aligned_index == (4, 2, 0)  # largest per dim
    assert r.halo == ((2, 3), (2, 2), (0, 0))  # intersection of the domains
    assert r.origin == (2, 2, 0)
    assert p.backend == "gt:cpu_kfirst"
    # With the other order, the other layout.
    assert plan_of(b + a).layout == reference_layout(("I", "J", "K"), BUILTIN_BASE_LAYOUTS["gt:cpu_ifirst"])


def test_out_with_more_dims_replicates_the_result():
    out = gb.Field.zeros((4, 5, 6), backend="gt:cpu_ifirst")
    ij = gb.Field(RNG.random((4, 5)), dims="IJ")
    res = np.multiply(ij, 2.0, out=out)
    assert res is out
    np.testing.assert_array_equal(out.to_numpy(), np.broadcast_to(2 * ij.to_numpy()[:, :, None], (4, 5, 6)))
    # Operands in another order are aligned to out's dims.
    ji = gb.Field(RNG.random((5, 4)), dims="JI")
    np.add(ji, 1.0, out=out)
    np.testing.assert_array_equal(out.to_numpy()[:, :, 3], ji.to_numpy().T + 1.0)
    # A plain out= array of the broadcast shape works too.
    plain = np.empty((4, 5))
    assert np.add(ij, 1.0, out=plain) is plain


def test_arithmetic_never_degrades_layout_or_alignment():
    a = gb.Field.ones((33, 7, 5), backend="dace:cpu", alignment=128, halo=(1, 1, 0))
    for r in (a + 1, a * a, np.exp(a), a[...] + a, -a, np.sum(a, axis=2)):
        p = plan_of(r)
        assert p.layout == (plan_of(a).layout if r.ndim == 3 else (0, 1))
        assert p.row_alignment == 128
        assert p.aligned_index == r.aligned_index == (1, 1, 0)[: r.ndim]
        aligned = r.array.__array_interface__["data"][0] + sum(i * s for i, s in zip(p.aligned_index, r.strides))
        assert aligned % 128 == 0


# --------------------------------------------------------------------------------------------
# Hypothesis: random dims subsets and orders.
# --------------------------------------------------------------------------------------------
UNIVERSE = ("I", "J", "K", "0")


@st.composite
def field_specs(draw, extents):
    dims = draw(st.lists(st.sampled_from(UNIVERSE), min_size=1, max_size=4, unique=True))
    shape = tuple(1 if draw(st.integers(0, 4)) == 0 else extents[d] for d in dims)
    kw = {"backend": draw(st.sampled_from(CPU_PRESETS)), "dims": "".join(dims) if draw(st.booleans()) else tuple(dims)}
    if draw(st.booleans()):
        kw["alignment"] = draw(st.sampled_from([1, 8, 16, 32, 64, 128]))
    if draw(st.booleans()):
        halo = []
        for n in shape:
            lo = draw(st.integers(0, n))
            halo.append((lo, draw(st.integers(0, n - lo))))
        kw["halo"] = tuple(halo)
    if draw(st.booleans()):
        kw["aligned_index"] = tuple(draw(st.integers(0, n)) for n in shape)
    if draw(st.booleans()):
        kw["layout"] = tuple(draw(st.permutations(range(len(dims)))))
    dtype = draw(st.sampled_from([np.float64, np.float32, np.int32, np.int64]))
    return shape, dtype, kw


@st.composite
def pairs(draw):
    extents = {d: draw(st.integers(2, 5)) for d in UNIVERSE}
    return draw(field_specs(extents)), draw(field_specs(extents))


def make(spec, seed):
    shape, dtype, kw = spec
    f = gb.Field.empty(shape, dtype, **kw)
    f[...] = np.random.default_rng(seed).integers(-50, 50, size=shape).astype(dtype)
    return f


def reference_params(a, b, out_dims, out_shape):
    """The GDP-3 output parameters of ``a + b``, from the two allocations' plans."""
    pa, pb = plan_of(a), plan_of(b)
    base = reference_layout(out_dims, BUILTIN_BASE_LAYOUTS[pa.backend])
    slots = sorted(base[out_dims.index(d)] for d in a.dims)
    layout = list(base)
    for rank, axis in zip(slots, sorted(range(a.ndim), key=lambda ax: pa.layout[ax])):
        layout[out_dims.index(a.dims[axis])] = rank
    aligned_index, halo = [], []
    for d, n in zip(out_dims, out_shape):
        los, his, ais = [0], [0], [0]
        for f, p in ((a, pa), (b, pb)):
            if d in f.dims and f.shape[f.dims.index(d)] == n:
                ax = f.dims.index(d)
                los.append(p.halo[ax][0])
                his.append(p.halo[ax][1])
                ais.append(p.aligned_index[ax])
        lo = min(max(los), n)
        halo.append((lo, min(max(his), n - lo)))
        aligned_index.append(max(ais))
    return tuple(layout), math.lcm(pa.row_alignment, pb.row_alignment), tuple(aligned_index), tuple(halo)


@given(pairs(), st.integers(0, 2**32 - 1))
def test_sum_of_random_dims_matches_numpy_aligned_by_name(specs, seed):
    a, b = make(specs[0], seed), make(specs[1], seed + 1)
    out_dims = a.dims if a.dims == b.dims else canonical(set(a.dims) | set(b.dims))
    out_shape = tuple(
        max(f.shape[f.dims.index(d)] for f in (a, b) if d in f.dims) for d in out_dims
    )
    r = a + b
    expected = align(a, a.dims, out_dims) + align(b, b.dims, out_dims)
    assert r.dims == out_dims
    assert r.shape == out_shape
    assert r.dtype == expected.dtype
    np.testing.assert_array_equal(r.to_numpy(), expected)
    layout, alignment, aligned_index, halo = reference_params(a, b, out_dims, out_shape)
    p = plan_of(r)
    assert p.layout == layout
    assert p.row_alignment == alignment == r.alignment
    assert p.aligned_index == aligned_index == r.aligned_index
    assert p.halo == halo == r.halo


@given(pairs(), st.integers(0, 2**32 - 1))
def test_assignment_of_random_dims_matches_numpy(specs, seed):
    a, b = make(specs[0], seed), make(specs[1], seed + 1)
    target = gb.Field.zeros(
        tuple(max(f.shape[f.dims.index(d)] for f in (a, b) if d in f.dims) for d in UNIVERSE if d in a.dims + b.dims)[::-1],
        dims=[d for d in UNIVERSE if d in a.dims + b.dims][::-1],
    )
    target[...] = b
    np.testing.assert_array_equal(target.to_numpy(), np.broadcast_to(align(b, b.dims, target.dims), target.shape))


# --------------------------------------------------------------------------------------------
# Indexing.
# --------------------------------------------------------------------------------------------
def test_basic_indexing_keeps_the_dims_of_kept_axes():
    t = gb.Field.from_array(RNG.random((10, 8, 6)), halo=(3, 2, 0))
    tn = t.to_numpy()
    for key, dims in [
        ((1,), ("J", "K")),
        ((slice(None), 2), ("I", "K")),
        ((Ellipsis, 0), ("I", "J")),
        ((slice(2, -2), slice(None, None, 2), -1), ("I", "J")),
        ((np.int64(3), slice(None), slice(None)), ("J", "K")),
    ]:
        v = t[key]
        assert v.dims == dims
        np.testing.assert_array_equal(v.to_numpy(), tn[key])
        assert np.shares_memory(v.to_numpy(), tn)
    v = t[2:-2]
    assert v.halo == ((1, 1), (2, 2), (0, 0)) and v.origin == (1, 2, 0)
    assert t[3:-3, 2:-2].halo == ((0, 0), (0, 0), (0, 0))
    assert t[::-1].halo == ((3, 3), (2, 2), (0, 0))
    assert isinstance(t[1, 2, 3], np.floating)


def test_index_plans_are_not_confused_by_equal_keys():
    t = gb.Field.from_array(RNG.random((3, 4)))
    for _ in range(2):  # the second round reads the cache
        assert t[1].dims == ("J",)
        assert type(t[True]) is np.ndarray and t[True].shape == (1, 3, 4)
        assert t[np.int64(1)].dims == ("J",)
        assert t[1:2].dims == ("I", "J") and t[(slice(1, 2),)].halo == ((0, 0), (0, 0))
    t.halo = ((1, 0), 0)
    assert t[1:].halo == ((0, 0), (0, 0)) and t[:].halo == ((1, 0), (0, 0))


def test_advanced_indexing_returns_plain_arrays_and_assigns():
    t = gb.Field.from_array(RNG.random((5, 4, 3)))
    tn = t.to_numpy()
    got = t[[0, 2], :, 1]
    assert type(got) is np.ndarray
    np.testing.assert_array_equal(got, tn[[0, 2], :, 1])
    mask = t > 0.5
    assert type(t[mask]) is np.ndarray
    np.testing.assert_array_equal(t[mask], tn[tn > 0.5])
    t[mask] = 0.0
    assert not (tn > 0.5).any()
    t[[1, 3], 0, 0] = [7.0, 8.0]
    assert tn[1, 0, 0] == 7.0 and tn[3, 0, 0] == 8.0


def test_newaxis_adds_a_data_dim_of_length_one():
    t = gb.Field.zeros((2, 3), dims=("I", "0"))
    v = t[None, :, np.newaxis]
    assert v.dims == ("1", "I", "2", "0") and v.shape == (1, 2, 1, 3)
    assert np.shares_memory(v.to_numpy(), t.to_numpy())
    # A dim of length 1 is absent when broadcasting, so the new dims change no result.
    assert (v + t).dims == ("I", "0", "1", "2")
    np.testing.assert_array_equal((v + t).to_numpy()[:, :, 0, 0], 2 * t.to_numpy())


# --------------------------------------------------------------------------------------------
# Attributes and methods.
# --------------------------------------------------------------------------------------------
def test_attributes():
    t = gb.Field.zeros((10, 8, 6), np.float32, backend="gt:cpu_ifirst", halo=(2, 1, 0), alignment=64)
    assert t.nbytes == 10 * 8 * 6 * 4  # padding excluded
    assert t.array.base.plan.nbytes > t.nbytes
    assert t.strides == t.to_numpy().strides
    assert t.alignment == 64
    assert t.aligned_index == (2, 1, 0)
    assert t.domain_shape == (6, 6, 6)
    d = t.domain_view
    assert d.shape == (6, 6, 6) and np.shares_memory(d.to_numpy(), t.to_numpy())
    # A view is not a whole allocation: alignment 1, aligned index at its lower halo.
    assert d.alignment == 1 and d.aligned_index == (0, 0, 0)
    assert t[...].alignment == 64  # all of it still is
    assert t.to_ndarray() is t.to_numpy()


def test_halo_is_settable_and_changes_only_the_domain():
    t = gb.Field.zeros((10, 8, 6), halo=(1, 1, 0))
    memory = t.to_numpy()
    t.halo = ((2, 3), 1, (0, 1))
    assert t.halo == ((2, 3), (1, 1), (0, 1))
    assert t.domain_shape == (5, 6, 5)
    assert t.origin == (2, 1, 0)
    assert t.aligned_index == (1, 1, 0)  # the memory did not change
    assert t.to_numpy() is memory
    assert (t + 1).halo == ((2, 3), (1, 1), (0, 1))
    with pytest.raises(gb.GridbufValueError, match=r"halo .*dim 'I' of dims \('I', 'J', 'K'\)"):
        t.halo = (6, 0, 0)
    with pytest.raises(ValueError):
        t.halo = (0, 0)


def test_copy_and_deepcopy_allocate_new_memory_with_the_same_parameters():
    t = gb.Field.from_array(RNG.random((9, 7, 5)), backend="dace:cpu", halo=(2, 1, 0), alignment=32, aligned_index=(3, 1, 0))
    for c in (t.copy(), copy.deepcopy(t), copy.copy(t), np.copy(t)):
        assert not np.shares_memory(c.to_numpy(), t.to_numpy())
        np.testing.assert_array_equal(c.to_numpy(), t.to_numpy())
        assert (c.dims, c.halo, c.origin, c.alignment, c.aligned_index) == (t.dims, t.halo, t.origin, 32, (3, 1, 0))
        assert plan_of(c).layout == plan_of(t).layout and plan_of(c).backend == "dace:cpu"
    v = t.transpose("K", "I", "J")
    c = v.copy()
    assert c.dims == ("K", "I", "J") and c.strides == tuple(v.strides[i] for i in range(3))
    assert t.astype(np.float32).dtype == np.float32


def test_to_numpy_of_a_gpu_only_field_is_a_gridbuf_error():
    class DeviceArray:
        shape = (4, 4)
        __cuda_array_interface__ = {"shape": (4, 4), "typestr": "<f8", "data": (0, False), "version": 3}

    f = gb.Field(DeviceArray())
    with pytest.raises(gb.errors.GridbufDeviceError, match="GPU"):
        f.to_numpy()


# --------------------------------------------------------------------------------------------
# Array functions.
# --------------------------------------------------------------------------------------------
def test_reductions_drop_dims():
    t = gb.Field.from_array(RNG.random((6, 5, 4)) - 0.5, backend="gt:cpu_ifirst", halo=(1, 1, 0))
    tn = t.to_numpy()
    for fn in (np.sum, np.mean, np.min, np.max, np.prod, np.std, np.var):
        r = fn(t, axis=(0, 2))
        assert r.dims == ("J",)
        np.testing.assert_allclose(r.to_numpy(), fn(tn, axis=(0, 2)))
        np.testing.assert_allclose(fn(t), fn(tn))
    for fn in (np.all, np.any):
        r = fn(t > 0, axis=1)
        assert r.dims == ("I", "K") and r.dtype == bool
        np.testing.assert_array_equal(r.to_numpy(), fn(tn > 0, axis=1))
    r = np.add.reduce(t, axis="J")
    assert r.dims == ("I", "K")
    np.testing.assert_allclose(r.to_numpy(), tn.sum(axis=1))
    k = np.sum(t, axis=("I", "J"), keepdims=True)
    assert k.dims == ("I", "J", "K") and k.shape == (1, 1, 4)
    assert t.max("K").dims == ("I", "J")
    assert np.sum(gb.Field.ones((3, 4), dtype=np.int8)).dtype == np.sum(np.ones((3, 4), np.int8)).dtype
    out = gb.Field.zeros((4, 6), dims="KI")
    assert np.sum(t, axis=1, out=out) is out
    np.testing.assert_allclose(out.to_numpy(), tn.sum(axis=1).T)
    c = np.cumsum(t, axis="K")
    assert c.dims == t.dims
    np.testing.assert_allclose(c.to_numpy(), np.cumsum(tn, axis=2))


def test_where_and_concatenate():
    t = gb.Field.from_array(RNG.random((4, 5, 6)) - 0.5)
    k = gb.Field(np.linspace(-1, 1, 6), dims="K")
    w = np.where(t > 0, t, k)
    assert w.dims == ("I", "J", "K")
    np.testing.assert_array_equal(w.to_numpy(), np.where(t.to_numpy() > 0, t.to_numpy(), k.to_numpy()[None, None, :]))
    np.testing.assert_array_equal(np.where(t > 0, 1, 0).to_numpy(), (t.to_numpy() > 0).astype(int))
    u = gb.Field.from_array(RNG.random((3, 5, 4)), dims="KJI", halo=((0, 2), 0, 0))
    c = np.concatenate([t, u], axis="K")
    assert c.dims == ("I", "J", "K") and c.shape == (4, 5, 9)
    np.testing.assert_array_equal(c.to_numpy(), np.concatenate([t.to_numpy(), u.to_numpy().transpose(2, 1, 0)], axis=2))
    assert c.halo == ((0, 0), (0, 0), (0, 2))
    np.testing.assert_array_equal(np.concatenate([t, t], axis=0).to_numpy(), np.concatenate([t.to_numpy()] * 2))
    with pytest.raises(gb.GridbufValueError, match="'J'"):
        np.concatenate([t, gb.Field(np.zeros((4, 2, 6)))], axis="K")


def test_like_functions_and_fallback():
    t = gb.Field.zeros((5, 4, 3), backend="gt:cpu_kfirst", halo=(1, 1, 0))
    z = np.ones_like(t, dtype=np.int32)
    assert isinstance(z, gb.Field) and z.dtype == np.int32 and z.halo == t.halo
    assert plan_of(z).layout == plan_of(t).layout and (z.to_numpy() == 1).all()
    assert np.full_like(t, 2.5).to_numpy().min() == 2.5
    # Functions without a labelled meaning run on the arrays.
    assert np.allclose(t, 0)
    assert np.array_equal(np.ravel(t), np.zeros(60))
    assert np.shape(t) == (5, 4, 3)


# --------------------------------------------------------------------------------------------
# Bad input: gridbuf exceptions naming the dims.
# --------------------------------------------------------------------------------------------
def test_mismatched_same_named_dims_are_an_error():
    a = gb.Field.ones((4, 5), dims="IJ")
    b = gb.Field.ones((4, 6), dims="IJ")
    with pytest.raises(gb.GridbufValueError) as info:
        a + b
    msg = str(info.value)
    assert all(part in msg for part in ("('I', 'J')", "(4, 5)", "(4, 6)", "'J'"))
    assert isinstance(info.value, ValueError)


def test_reduction_over_a_missing_axis_is_an_error():
    t = gb.Field.ones((4, 5, 6))
    with pytest.raises(gb.GridbufValueError, match=r"\('I', 'J', 'K'\)"):
        np.sum(t, axis=3)
    with pytest.raises(gb.GridbufValueError, match="'0'"):
        np.mean(t, axis="0")
    with pytest.raises(gb.GridbufValueError):
        np.add.reduce(t, axis=-4)


def test_transpose_with_foreign_names_is_an_error():
    t = gb.Field.ones((4, 5, 6))
    with pytest.raises(gb.GridbufValueError, match=r"\('I', 'J', 'K'\)"):
        t.transpose("K", "J", "0")
    with pytest.raises(gb.GridbufValueError):
        t.transpose("K", "J")
    with pytest.raises(gb.GridbufValueError):
        t.transpose("K", "K", "I")


def test_out_of_the_wrong_dtype_or_too_few_dims_is_an_error():
    t = gb.Field.ones((4, 5, 6))
    ints = gb.Field.zeros((4, 5, 6), dtype=np.int64)
    with pytest.raises(gb.GridbufTypeError, match=r"\('I', 'J', 'K'\)") as info:
        np.add(t, 1.5, out=ints)
    assert isinstance(info.value, TypeError)
    with pytest.raises(gb.GridbufTypeError):
        ints += 1.5
    small = gb.Field.zeros((4, 5), dims="IJ")
    with pytest.raises(gb.GridbufValueError, match="fewer dims") as info:
        np.add(t, 1.0, out=small)
    assert "'K'" in str(info.value)
    with pytest.raises(gb.GridbufValueError, match="'K'"):
        np.sum(t, axis=0, out=small)


def test_assignment_of_a_dim_the_target_lacks_is_an_error():
    t = gb.Field.zeros((4, 5, 6))
    k = gb.Field.ones((6,), dims="K")
    with pytest.raises(gb.GridbufValueError, match="'K'"):
        t[:, :, 0] = k
    with pytest.raises(gb.GridbufValueError, match=r"\(3,\)"):
        t[...] = np.ones(3)


@st.composite
def basic_keys(draw, shape):
    """A basic index for ``shape``: ints, slices (any step) and at most one ellipsis."""
    items = []
    for n in shape:
        kind = draw(st.sampled_from(["int", "slice", "slice", "full"]))
        if kind == "int" and n > 0:
            items.append(draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            bound = st.none() | st.integers(-n - 2, n + 2)
            items.append(slice(draw(bound), draw(bound), draw(st.none() | st.sampled_from([-3, -2, -1, 1, 2, 3]))))
        else:
            items.append(slice(None))
    cut = draw(st.integers(0, len(items)))
    if draw(st.booleans()):
        items = items[:cut] + [Ellipsis] + items[cut + draw(st.integers(0, len(items) - cut)) :]
    else:
        items = items[:cut]
    return tuple(items)


def expected_view(shape, halo, key):
    """Per kept axis: (axis, selected indices), by expanding the key by hand."""
    key = list(key)
    if Ellipsis in key:
        i = key.index(Ellipsis)
        key[i : i + 1] = [slice(None)] * (len(shape) - (len(key) - 1))
    key += [slice(None)] * (len(shape) - len(key))
    kept = []
    for ax, (k, n) in enumerate(zip(key, shape)):
        if isinstance(k, slice):
            kept.append((ax, list(range(n))[k]))
    return kept


@given(st.data())
def test_basic_indexing_maps_dims_and_halo(data):
    ndim = data.draw(st.integers(1, 4))
    dims = data.draw(st.permutations(UNIVERSE))[:ndim]
    shape = tuple(data.draw(st.integers(0, 6)) for _ in dims)
    halo = []
    for n in shape:
        lo = data.draw(st.integers(0, n))
        halo.append((lo, data.draw(st.integers(0, n - lo))))
    f = gb.Field(np.arange(math.prod(shape), dtype=float).reshape(shape), dims=dims, halo=halo)
    key = data.draw(basic_keys(shape))
    got = f[key]
    want = f.to_numpy()[key]
    kept = expected_view(shape, halo, key)
    if not kept:
        assert not isinstance(got, gb.Field)
        assert got == want
        return
    assert isinstance(got, gb.Field)
    np.testing.assert_array_equal(got.to_numpy(), want)
    assert got.dims == tuple(dims[ax] for ax, _ in kept)
    for (ax, picked), (vlo, vhi) in zip(kept, got.halo):
        n, (lo, hi) = shape[ax], halo[ax]
        inside = [lo <= i < n - hi for i in picked]
        assert vlo + vhi <= len(picked)
        if any(inside):
            assert inside == [vlo <= j < len(picked) - vhi for j in range(len(picked))]
        else:
            assert vlo + vhi == len(picked)


def test_large_mixed_layouts_compute_the_same_values():
    # Results this large are computed on views in the result's memory order.
    t = gb.Field.from_array(RNG.random((48, 40, 30)), backend="gt:cpu_ifirst", halo=(2, 2, 0))
    p = gb.Field.from_array(RNG.random(30), dims="K")
    s = gb.Field.from_array(RNG.random((48, 40)), dims="IJ")
    tn, pn, sn = t.to_numpy().copy(), p.to_numpy(), s.to_numpy()
    ps = p * s  # K-first (C preset), t is I-first
    assert plan_of(ps).layout == (0, 1, 2) and plan_of(t).layout == (2, 1, 0)
    x = t + ps
    np.testing.assert_array_equal(x.to_numpy(), tn + pn[None, None, :] * sn[:, :, None])
    assert x.strides == t.strides
    q, r = divmod(t, ps)
    np.testing.assert_array_equal(r.to_numpy(), np.remainder(tn, ps.to_numpy()))
    mask = gb.Field(RNG.random((48, 40, 30)) > 0.5)
    y = np.add(t, ps, where=mask)
    np.testing.assert_array_equal(y.to_numpy()[mask.to_numpy()], (tn + ps.to_numpy())[mask.to_numpy()])
    t += ps
    np.testing.assert_array_equal(t.to_numpy(), tn + ps.to_numpy())
    np.subtract(t, ps, out=t, where=mask)
    expected = tn + ps.to_numpy()
    expected[mask.to_numpy()] -= ps.to_numpy()[mask.to_numpy()]
    np.testing.assert_array_equal(t.to_numpy(), expected)
