"""gridbuf.gtscript's vertical indexing (issue 22), against GT4Py 1.1.12.

Conformance definitions (run by both engines on the same random inputs, every array argument,
halos included, compared bit for bit afterwards, in the layouts C, F, gt:cpu_ifirst and
gt:cpu_kfirst, and on the tape interpreter, GRIDBUF_GTSCRIPT_JIT=0): writes at K offsets in
FORWARD and BACKWARD computations (fields and temporaries, at the intervals' ends, into the K halo),
variable K offsets ``a[0, 0, idx]`` read from int32 and int64 index fields and integer expressions
(reaching the column's first and last level), writes at variable K offsets ``a[0, 0, idx] = ...``
(FORWARD and BACKWARD, masked, read back at the point's level, at other levels and at run-time
levels after them, inside a ``while`` loop), and absolute K indices ``a.at(K=k)``. The oracle is
GT4Py's ``numpy`` backend, except for ``.at(K=...)``, which that backend does not implement
(NotImplementedError in 1.1.12): its cases are compared with GT4Py's ``debug`` backend. Then bad
input: refused constructs raise a GridbufValueError naming the construct and the line; an index
that leaves the field at run time raises a GridbufValueError naming the field and the level (GT4Py's
numpy backend clips such an index to the array silently), and a write at a K offset that would leave
the field is refused before anything is written.
"""

from __future__ import annotations

import itertools
import os
import textwrap
import zlib
from dataclasses import dataclass, field

import numpy as np
import pytest

import gridbuf as gb
from gridbuf import gtscript
from _gtscript_oracle import assert_same, field_kinds, gt4py_reference, load_source, run_in_layout
from gridbuf.errors import GridbufValueError
from _scratch import scratch_dir

os.environ.setdefault("GT_CACHE_ROOT", scratch_dir("gridbuf_test_vindex22_"))
try:
    import gt4py.cartesian.gtscript as gt_gtscript

    HAVE_GT4PY = True
except ImportError:  # pragma: no cover - gt4py is a dev requirement
    gt_gtscript = None
    HAVE_GT4PY = False

needs_gt4py = pytest.mark.skipif(not HAVE_GT4PY, reason="gt4py is not installed")

LAYOUTS = ["C", "F", "gt:cpu_ifirst", "gt:cpu_kfirst"]
DOMAIN = (6, 5, 7)
HEADERS = {
    "gb": "import numpy as np\nfrom gridbuf import gtscript\nfrom gridbuf.gtscript import *\n",
    "gt": "import numpy as np\nfrom gt4py.cartesian import gtscript\nfrom gt4py.cartesian.gtscript import *\n",
}


@dataclass
class Case:
    """A definition (`fn`, in SOURCE), its halo, scalars, and GT4Py's backend to compare with."""

    fn: str
    halo: tuple[int, int, int] = (0, 0, 0)
    scalars: dict = field(default_factory=dict)
    oracle: str = "numpy"


SOURCE = textwrap.dedent(
    '''
    def kwrite_forward(a: Field[np.float64], b: Field[np.float64], out: Field[np.float64], out2: Field[np.float64], out3: Field[np.float64]):
        with computation(FORWARD), interval(0, 1):
            out = a
            tmp = b
        with computation(FORWARD), interval(0, -1):
            out[0, 0, 1] = out * 0.5 + a[0, 0, 1]
            tmp[0, 0, 1] = tmp * 0.25 + b[0, 0, 1]
            if a > 0.0:
                out2[0, 0, 1] = tmp[0, 0, 1] - a
            else:
                out2[0, 0, 1] = out
        with computation(PARALLEL), interval(...):
            b = tmp * 2.0
        with computation(FORWARD), interval(...):
            out3[0, 0, 1] = a + out3
            out3 = out3 - 1.0


    def kwrite_backward(a: Field[np.float64], out: Field[np.float64], out2: Field[np.float32], out3: Field[np.float64]):
        with computation(BACKWARD), interval(-1, None):
            out = a
        with computation(BACKWARD), interval(1, None):
            out[0, 0, -1] = out * 0.5 + a[0, 0, -1]
            tmp[0, 0, -1] = a * 2.0
        with computation(BACKWARD), interval(...):
            out2[0, 0, -1] = a + 1.0
        with computation(PARALLEL), interval(0, -1):
            out2 = out2 + tmp
        with computation(BACKWARD):
            with interval(-2, None):
                out3[0, 0, -2] = a
            with interval(0, -2):
                out3 = out3[0, 0, 2] * 0.5


    def var_read(a: Field[np.float64], b: Field[np.float32], idx: Field[np.int32], jdx: Field[np.int64], out: Field[np.float64], out2: Field[np.float32], out3: Field[np.float64]):
        with computation(PARALLEL), interval(...):
            out = a[0, 0, idx] + b[0, 0, jdx] * 2.0
        with computation(FORWARD), interval(...):
            out2 = b[0, 0, idx] + a[0, 0, min(jdx, 0)]
        with computation(BACKWARD), interval(...):
            out3 = a[0, 0, max(idx, 0)] - a[0, 0, idx + jdx - jdx]


    def var_read_written(a: Field[np.float64], idx: Field[np.int32], out: Field[np.float64], out2: Field[np.float64]):
        with computation(PARALLEL), interval(...):
            t = a * 3.0
        with computation(FORWARD), interval(...):
            out = a
            out = out + out[0, 0, min(idx, 0)] + t[0, 0, idx]
        with computation(PARALLEL), interval(...):
            out2 = out[0, 0, idx] * 0.5


    def var_read_ddim(v: Field[(np.float64, (3,))], idx: Field[np.int64], out: Field[np.float64]):
        with computation(PARALLEL), interval(...):
            out = v[0, 0, idx][1] - v[0, 0, 0][2]


    def abs_k(a: Field[np.float64], kf: Field[np.int64], kk: Field[IJ, np.int32], out: Field[np.float64], out2: Field[np.float64], s: np.int64):
        with computation(PARALLEL), interval(...):
            out = a.at(K=kf) + a.at(K=0) * 2.0 + a.at(K=s)
        with computation(FORWARD), interval(...):
            out2 = a.at(K=kk) + out2.at(K=0)


    def abs_k_forward(a: Field[np.float64], kf: Field[np.int32], out: Field[np.float64]):
        with computation(FORWARD), interval(...):
            out = a.at(K=kf)
            out = out + out.at(K=kf) * 0.5


    def var_write_forward(a: Field[np.float64], idx: Field[np.int32], jdx: Field[np.int64], out: Field[np.float64], out2: Field[np.float64]):
        with computation(FORWARD), interval(...):
            out[0, 0, idx] = a * 2.0 + out
            out2 = out + out[0, 0, jdx]
        with computation(BACKWARD), interval(...):
            if a > 0.0:
                out2[0, 0, jdx] = a - out2


    def var_write_backward(a: Field[np.float64], idx: Field[np.int32], out: Field[np.float32], out2: Field[np.float64]):
        with computation(BACKWARD), interval(...):
            lev = idx
            out[0, 0, lev] = out + a
            out2 = out[0, 0, 0] * 2.0 + out2


    def loop_counter_after(a: Field[np.float64], out: Field[np.float64]):
        with computation(FORWARD), interval(...):
            n = 0
            out = a
            while out < 3.0:
                out = out + 1.0
                n = n + 1


    def var_write_loop(a: Field[np.float64], b: Field[np.float64], lev0: Field[np.int64]):
        with computation(FORWARD), interval(0, -2):
            lev = lev0
            while a > 0.0 and lev < 3:
                a[0, 0, lev] = a[0, 0, lev] - 1.0
                b = b + 1.0
                lev = lev + 1
    '''
)

CASES: dict[str, Case] = {
    "kwrite_forward": Case("kwrite_forward", halo=(1, 0, 1)),
    "kwrite_backward": Case("kwrite_backward", halo=(0, 1, 2)),
    "var_read": Case("var_read", halo=(1, 1, 0)),
    "var_read_written": Case("var_read_written"),
    "var_read_ddim": Case("var_read_ddim", oracle="debug"),
    "abs_k": Case("abs_k", scalars={"s": np.int64(DOMAIN[2] - 1)}, oracle="debug"),
    "abs_k_forward": Case("abs_k_forward", oracle="debug"),
    "var_write_forward": Case("var_write_forward", halo=(1, 1, 0)),
    "var_write_backward": Case("var_write_backward"),
    "var_write_loop": Case("var_write_loop", halo=(0, 1, 0)),
    "loop_counter_after": Case("loop_counter_after"),
}

_DIR = scratch_dir("gridbuf_vindex22_defs_")
_MODULES: dict = {}
_COUNTER = itertools.count()


def defs(lib: str):
    if lib not in _MODULES:
        _MODULES[lib] = load_source(_DIR, f"_gb_vindex22_defs_{lib}_{os.getpid()}", HEADERS[lib] + SOURCE)
    return _MODULES[lib]


def arg_kinds(name: str) -> dict[str, tuple[str, np.dtype, tuple[int, ...]]]:
    """Axes, dtype and data dims of every field argument, from GT4Py's descriptors."""
    return field_kinds(getattr(defs("gt"), CASES[name].fn), gt_gtscript._FieldDescriptor)


def make_inputs(name: str) -> dict[str, np.ndarray]:
    """Random floats; index fields: `idx`, `jdx` relative K offsets that keep every level inside
    the domain (a quarter of them reaching the first level, a quarter the last), `kf`, `kk`
    absolute levels inside the domain (the first and the last among them)."""
    c = CASES[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    (ni, nj, nk), (hi, hj, hk) = DOMAIN, c.halo
    sizes = {"I": ni + 2 * hi, "J": nj + 2 * hj, "K": nk + 2 * hk}
    arrays: dict[str, np.ndarray] = {}
    for n, (axes, dt, data_dims) in arg_kinds(name).items():
        shape = tuple(sizes[a] for a in axes) + data_dims
        if n in ("idx", "jdx"):
            assert hk == 0 and axes == "IJK"
            k = np.arange(nk)[None, None, :]
            v = rng.integers(0, nk, size=shape) - k
            pick = rng.random(shape)
            v = np.where(pick < 0.25, -k, np.where(pick > 0.75, nk - 1 - k, v))
        elif n in ("kf", "kk"):
            v = rng.integers(0, nk, size=shape)
            v.flat[0], v.flat[-1] = 0, nk - 1
        elif n == "lev0":  # a loop's first level above the point, 1 or 2 (see var_write_loop)
            v = rng.integers(1, 3, size=shape)
        else:
            v = rng.uniform(-3.0, 3.0, size=shape)
        arrays[n] = v.astype(dt)
    return arrays


_GT: dict = {}
_GB: dict = {}


def gt_results(name: str):
    """Inputs and GT4Py's results (one build per case)."""
    if name not in _GT:
        c = CASES[name]
        st = gt_gtscript.stencil(backend=c.oracle, definition=getattr(defs("gt"), c.fn))
        inputs = make_inputs(name)
        _GT[name] = (inputs, gt4py_reference(st, inputs, origin=c.halo, domain=DOMAIN, scalars=c.scalars))
    return _GT[name]


def gb_stencil(name: str, mode: str):
    key = (name, mode)
    if key not in _GB:
        _GB[key] = gtscript.stencil(backend="numpy", definition=getattr(defs("gb"), CASES[name].fn))
    return _GB[key]


def run_gb(name: str, layout: str, mode: str = "jit") -> tuple[dict, dict]:
    inputs, want = gt_results(name)
    axes = {k: kind[0] for k, kind in arg_kinds(name).items()}
    # only IJK fields are allocated by the preset; IJ and K fields are C-ordered NumPy arrays
    got = run_in_layout(
        gb_stencil(name, mode), inputs, layout, axes, origin=CASES[name].halo, domain=DOMAIN, scalars=CASES[name].scalars, preset_axes=("IJK",)
    )
    return got, want


# ============================================================================ 1. conformance
@needs_gt4py
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", list(CASES))
def test_conformance(name, layout):
    got, want = run_gb(name, layout)
    assert_same(got, want, f"{name} on {layout}")


@needs_gt4py
@pytest.mark.parametrize("layout", ["gt:cpu_ifirst", "gt:cpu_kfirst"])
@pytest.mark.parametrize("name", list(CASES))
def test_conformance_interpreter(name, layout, monkeypatch):
    """The same on the tape interpreter (GRIDBUF_GTSCRIPT_JIT=0 is read when defined)."""
    monkeypatch.setenv("GRIDBUF_GTSCRIPT_JIT", "0")
    _GB.pop((name, "interpreter"), None)
    got, want = run_gb(name, layout, "interpreter")
    assert_same(got, want, f"{name} on {layout}, interpreter")


# ============================================================================ 2. semantics by hand
def gb_define(src: str, name: str, **kw):
    """gridbuf's stencil `name` from `src`."""
    mod = load_source(_DIR, f"_gb_vindex22_{os.getpid()}_{next(_COUNTER)}", HEADERS["gb"] + textwrap.dedent(src))
    return gtscript.stencil(backend="numpy", definition=getattr(mod, name), **kw)


def line_of(src: str, text: str) -> int:
    """The line of `text` in the module gb_define writes (the header has 3 lines)."""
    lines = textwrap.dedent(src).splitlines()
    return 3 + next(i for i, ln in enumerate(lines, 1) if text in ln)


def column(values, dtype=np.float64, shape=(2, 3)):
    return np.broadcast_to(np.asarray(values, dtype=dtype), (*shape, len(values))).copy()


def test_hand_checked_values():
    """Values worked out by hand (the same as GT4Py's numpy and debug backends give)."""
    st = gb_define(
        """
        def f(a: Field[np.float64], idx: Field[np.int32], out: Field[np.float64], out2: Field[np.float64]):
            with computation(FORWARD), interval(0, -1):
                out[0, 0, 1] = a
            with computation(PARALLEL), interval(...):
                out2 = a[0, 0, idx] + a.at(K=max(idx, 0))
        """,
        "f",
    )
    a = column([1.0, 2.0, 3.0, 4.0, 5.0])
    out, out2 = np.zeros_like(a), np.zeros_like(a)
    st(a, column([0, 1, -1, -2, -4], np.int32), out, out2)
    assert (out[1, 2] == [0.0, 1.0, 2.0, 3.0, 4.0]).all()
    assert (out2[1, 2] == [1.0 + 1.0, 3.0 + 2.0, 2.0 + 1.0, 2.0 + 1.0, 1.0 + 1.0]).all()


# ============================================================================ 3. bad input
def test_index_leaving_the_field_raises_naming_field_and_level():
    """An index past the last level (GT4Py's numpy backend clips it to the array): an error naming
    the field and the level; fields the stencil only reads are unchanged."""
    st = gb_define(
        """
        def f(src: Field[np.float64], idx: Field[np.int64], out: Field[np.float64]):
            with computation(PARALLEL), interval(...):
                out = src[0, 0, idx]
        """,
        "f",
    )
    src = column([1.0, 2.0, 3.0, 4.0])
    for bad, level in ((4, 4), (-1, -1)):
        idx = column([0, 0, 0, 0], np.int64)
        idx[1, 1, 0] = bad
        before = (src.copy(), idx.copy())
        out = np.full_like(src, 7.0)
        with pytest.raises(GridbufValueError, match=f"level {level}.*'src'|\"src\".*level {level}|level {level}.*\"src\""):
            st(src, idx, out)
        assert (src == before[0]).all() and (idx == before[1]).all()
        # `out` may hold new values where the points computed before the error lie (see README).
        assert np.isin(out, [7.0, 1.0, 2.0, 3.0, 4.0]).all()


@pytest.mark.parametrize("jit", ["1", "0"])
def test_loop_searching_past_the_column_raises_and_ends(jit, monkeypatch):
    """A ``while`` loop whose variable offset runs off the top of the column (its condition
    would hold for ever on what the failed read gives) ends with an error naming the field, on
    both layouts, compiled (the loop runs point by point) and on the interpreter; the fields it
    only reads are unchanged."""
    monkeypatch.setenv("GRIDBUF_GTSCRIPT_JIT", jit)
    st = gb_define(
        """
        def s(pe: Field[np.float64], top: Field[np.float64], out: Field[np.int64]):
            with computation(PARALLEL), interval(...):
                off = 0
                while pe[0, 0, off] < top:
                    off = off + 1
                out = off
        """,
        "s",
    )
    pe = column([0.0, 1.0, 2.0, 3.0])
    for layout in ("gt:cpu_ifirst", "gt:cpu_kfirst"):
        top = np.full_like(pe, 2.5)
        out = gb.zeros(pe.shape, np.int64, backend=layout)
        st(gb.from_array(pe, backend=layout), gb.from_array(top, backend=layout), out)
        assert (np.asarray(out) == 3 - np.arange(4)).all()
        top[1, 0, 2] = 9.0
        before = pe.copy()
        args = (gb.from_array(pe, backend=layout), gb.from_array(top, backend=layout))
        with pytest.raises(GridbufValueError, match="level 4.*pe|pe.*level 4"):
            st(*args, gb.zeros(pe.shape, np.int64, backend=layout))
        assert (np.asarray(args[0]) == before).all()


def test_absolute_index_leaving_the_field_raises():
    st = gb_define(
        """
        def g(src: Field[np.float32], out: Field[np.float32], k: np.int32):
            with computation(FORWARD), interval(...):
                out = src.at(K=k)
        """,
        "g",
    )
    src, out = column([1.0, 2.0, 3.0], np.float32), np.zeros((2, 3, 3), np.float32)
    with pytest.raises(GridbufValueError, match="level 3.*src|src.*level 3"):
        st(src, out, k=np.int32(3))
    assert (src == column([1.0, 2.0, 3.0], np.float32)).all()
    st(src, out, k=np.int32(2))
    assert (out == 3.0).all()


@pytest.mark.parametrize("layout", ["C", "F", "gt:cpu_ifirst", "gt:cpu_kfirst"])
def test_run_time_levels_read_anywhere_inside_the_array(layout):
    """A read at a run-time K level reaches any level inside the field's array, below the
    origin and above the domain included, as GT4Py's compiled backends read it (pace's
    ``map_single.lagrangian_contributions`` reads the level past the domain of an interface
    field); a level outside the array raises naming the field and the level, before anything is
    written."""
    st = gb_define(
        """
        def f(src: Field[np.float64], idx: Field[np.int32], out: Field[np.float64]):
            with computation(PARALLEL), interval(...):
                out = src[0, 0, idx]
        """,
        "f",
    )
    src = gb.from_array(np.broadcast_to(10.0 * np.arange(6.0), (2, 2, 6)).copy(), backend=layout)
    idx = np.zeros((2, 2, 6), np.int32)
    idx[0, 0, 1] = -1  # domain level 0 (array level 1) reads array level 0, below the origin
    idx[1, 1, 4] = 1  # domain level 3 (array level 4) reads array level 5, above the domain
    idx = gb.from_array(idx, backend=layout)
    out = gb.from_array(np.full((2, 2, 6), 7.0), backend=layout)
    st(src, idx, out, origin=(0, 0, 1), domain=(2, 2, 4))
    want = np.full((2, 2, 6), 7.0)
    want[:, :, 1:5] = 10.0 * np.arange(1.0, 5.0)
    want[0, 0, 1], want[1, 1, 4] = 0.0, 50.0
    np.testing.assert_array_equal(np.asarray(out), want)
    # Outside the array: refused, naming the field and the level (the level is known only
    # while the stencil runs, so points computed before it may have been written).
    bad = np.asarray(idx).copy()
    bad[1, 0, 1] = -2  # array level -1
    out2 = gb.from_array(np.full((2, 2, 6), 7.0), backend=layout)
    with pytest.raises(GridbufValueError, match="src.*level -2|level -2.*src"):
        st(src, gb.from_array(bad, backend=layout), out2, origin=(0, 0, 1), domain=(2, 2, 4))
    bad = np.asarray(idx).copy()
    bad[1, 0, 4] = 2  # array level 6, one past the last
    with pytest.raises(GridbufValueError, match="src.*level 5|level 5.*src"):
        st(src, gb.from_array(bad, backend=layout), out2, origin=(0, 0, 1), domain=(2, 2, 4))


def test_k_offset_write_leaving_the_field_is_refused_before_anything_is_written():
    st = gb_define(
        """
        def f(a: Field[np.float64], out: Field[np.float64], out2: Field[np.float64]):
            with computation(PARALLEL), interval(...):
                out2 = a
            with computation(FORWARD), interval(...):
                out[0, 0, 1] = a
        """,
        "f",
    )
    a = column([1.0, 2.0, 3.0])
    out, out2 = np.full_like(a, 7.0), np.full_like(a, 7.0)
    # The level above the domain would be written: the binder refuses the domain.
    with pytest.raises(GridbufValueError, match="'out'|\"out\""):
        st(a, out, out2, domain=(2, 3, 3))
    assert (out == 7.0).all() and (out2 == 7.0).all()
    # The default domain leaves room for it (as GT4Py's).
    st(a, out, out2)
    assert (out[0, 0] == [7.0, 1.0, 2.0]).all() and (out2[0, 0] == [1.0, 2.0, 7.0]).all()
    st2 = gb_define(
        """
        def g(a: Field[np.float64], out: Field[np.float64], out2: Field[np.float64]):
            with computation(PARALLEL), interval(...):
                out2 = a
            with computation(BACKWARD), interval(-1, None):
                out[0, 0, -2] = a
        """,
        "g",
    )
    a = column([1.0])
    out, out2 = np.full_like(a, 7.0), np.full_like(a, 7.0)
    # One level: the write at level -2 is caught by the run-time check, before anything runs.
    with pytest.raises(GridbufValueError, match="\"out\" would be written at level -2"):
        st2(a, out, out2)
    assert (out == 7.0).all() and (out2 == 7.0).all()


def test_run_time_k_write_leaving_the_field_raises_naming_field_and_level():
    """A write at a variable K offset past the array (GT4Py's numpy backend clips such a level to
    the array and writes there): an error naming the field and the level, nothing written at any
    level of the strip that holds the point (here the only column's first level, so the whole
    array stays as it was); the fields the stencil only reads are unchanged."""
    st = gb_define(
        """
        def f(src: Field[np.float64], idx: Field[np.int64], out: Field[np.float64]):
            with computation(FORWARD), interval(...):
                out[0, 0, idx] = src
        """,
        "f",
    )
    src = column([1.0, 2.0, 3.0, 4.0], shape=(1, 1))
    for bad, level in ((4, 4), (-1, -1), (2**40, 2**40)):
        idx = column([0, 0, 0, 0], np.int64, shape=(1, 1))
        idx[0, 0, 0] = bad
        before = (src.copy(), idx.copy())
        out = np.full_like(src, 7.0)
        with pytest.raises(GridbufValueError, match=f"level {level}.*\"out\""):
            st(src, idx, out)
        assert (src == before[0]).all() and (idx == before[1]).all()
        assert (out == 7.0).all()
    # Later in the column: the levels before it were written, none beyond the array.
    idx = column([1, 1, 0, 1], np.int64)
    out = np.full_like(column([0.0] * 4), 7.0)
    with pytest.raises(GridbufValueError, match="level 4"):
        st(column([1.0, 2.0, 3.0, 4.0]), idx, out)
    assert np.isin(out, [7.0, 1.0, 2.0, 3.0]).all()


def test_run_time_k_write_in_a_loop_that_changes_its_condition_is_refused_at_run_time():
    """`a[0, 0, lev] = ...` inside `while a > 0.0 ...:` before other statements: where `lev` is 0
    the write changes what the condition reads, and GT4Py's backends then disagree (numpy tests
    the condition again and skips `b = b + 1.0`, the compiled ones run it): refused with the
    field and the level; elsewhere it matches GT4Py's numpy backend (conformance case
    ``var_write_loop``)."""
    src = """
        def f(a: Field[np.float64], b: Field[np.float64], lev0: Field[np.int64]):
            with computation(FORWARD), interval(0, -2):
                lev = lev0
                while a > 0.0 and lev < 3:
                    a[0, 0, lev] = a[0, 0, lev] - 1.0
                    b = b + 1.0
                    lev = lev + 1
        """
    st = gb_define(src, "f")
    a = column([1.0, 2.0, 3.0, 4.0, 5.0])
    b = np.zeros_like(a)
    lev0 = column([1, 1, 1, 1, 1], np.int64)
    # (The intervals end two levels before the domain's: GT4Py's default domain would be 7
    # levels, whose loops search past the array.)
    st(a, b, lev0, domain=(2, 3, 5))
    assert (b[..., :3] > 0).all()
    lev0[1, 2, 0] = 0
    a = column([1.0, 2.0, 3.0, 4.0, 5.0])
    with pytest.raises(GridbufValueError, match="while loop.*\"a\".*level 0"):
        st(a, np.zeros_like(a), lev0, domain=(2, 3, 5))


@pytest.mark.parametrize("order", ["FORWARD", "BACKWARD"])
def test_run_time_k_write_at_an_ij_index(order):
    """GT4Py's test_upcasting_both_sides_of_assignment: `out[0, 0, index - 1] = in` with an int32
    IJ field of ones copies the column (the index computed in int64)."""
    st = gb_define(
        f"""
        def f(inp: Field[np.float64], index: Field[IJ, np.int32], out: Field[np.float64]):
            with computation({order}), interval(...):
                out[0, 0, index - 1] = inp
        """,
        "f",
    )
    inp = np.random.default_rng(3).uniform(size=(5, 5, 5))
    out = np.zeros_like(inp)
    st(inp, np.ones((5, 5), np.int32), out)
    assert (out == inp).all()


REFUSED = [
    ("""
def f(a: Field[np.float64], out: Field[np.float64]):
    with computation(PARALLEL), interval(0, -1):
        out[0, 0, 1] = a
""", "out[0, 0, 1] = a", "K offset 1.*PARALLEL"),
    ("""
def f(a: Field[np.float64], out: Field[np.float64]):
    with computation(FORWARD), interval(...):
        out[1, 0, 0] = a
""", "out[1, 0, 0] = a", "non-zero I or J offsets"),
    ("""
def f(a: Field[np.float64], idx: Field[np.int32], out: Field[np.float64]):
    with computation(PARALLEL), interval(...):
        out = a[1, 0, idx]
""", "a[1, 0, idx]", "horizontal offset with a variable K offset"),
    ("""
def f(a: Field[np.float64], idx: Field[np.float64], out: Field[np.float64]):
    with computation(PARALLEL), interval(...):
        out = a[0, 0, idx]
""", "a[0, 0, idx]", "variable K offset of type float64"),
    ("""
def f(a: Field[np.float64], idx: Field[np.bool_], out: Field[np.float64]):
    with computation(PARALLEL), interval(...):
        out = a[0, 0, idx]
""", "a[0, 0, idx]", "variable K offset of type bool"),
    ("""
def f(a: Field[np.float64], out: Field[np.float64]):
    with computation(PARALLEL), interval(...):
        out = a.at(K=1.5)
""", "a.at(K=1.5)", "absolute K index.*float64"),
    ("""
def f(a: Field[np.float64], out: Field[np.float64]):
    with computation(PARALLEL), interval(...):
        out = a.at(K=K)
""", "a.at(K=K)", "an axis cannot be the index"),
    ("""
def f(a: Field[np.float64], out: Field[np.float64]):
    with computation(PARALLEL), interval(...):
        out = a.at(2)
""", "a.at(2)", "the syntax is `.at\\(K=..., ddim"),
    ("""
def f(a: Field[np.float64], out: Field[np.float64]):
    with computation(PARALLEL), interval(...):
        out = a[1, 0, 0].at(K=2)
""", "a[1, 0, 0].at(K=2)", "without offsets"),
    ("""
def f(a: Field[np.float64], idx: Field[np.int32], out: Field[np.float64]):
    with computation(PARALLEL), interval(...):
        out = a
        out = out[0, 0, idx]
""", "out = out[0, 0, idx]", "written in this PARALLEL interval"),
    ("""
def f(a: Field[IJ, np.float64], idx: Field[np.int32], out: Field[np.float64]):
    with computation(PARALLEL), interval(...):
        out = a.at(K=idx)
""", "a.at(K=idx)", "no K axis"),
    ("""
def f(a: Field[np.float64], idx: Field[np.int32], out: Field[np.float64]):
    with computation(PARALLEL), interval(...):
        out[0, 0, idx] = a
""", "out[0, 0, idx] = a", "K offset computed at run time.*PARALLEL"),
    ("""
def f(a: Field[np.float64], idx: Field[np.float32], out: Field[np.float64]):
    with computation(FORWARD), interval(...):
        out[0, 0, idx] = a
""", "out[0, 0, idx] = a", "variable K offset of type float32"),
]


@pytest.mark.parametrize("src,text,why", REFUSED)
def test_refused_at_definition_naming_the_line(src, text, why):
    with pytest.raises(GridbufValueError, match=f"line {line_of(src, text)}.*{why}"):
        gb_define(src, "f")


@needs_gt4py
@pytest.mark.parametrize("src,text,why", REFUSED[:2] + REFUSED[3:])
def test_gt4py_refuses_them_too(src, text, why):
    """GT4Py refuses these when the stencil is built (the debug backend, which implements
    `.at(K=...)`), so the refusals above stay GT4Py's."""
    mod = load_source(_DIR, f"_gt_vindex22_{os.getpid()}_{next(_COUNTER)}", HEADERS["gt"] + textwrap.dedent(src))
    with pytest.raises(Exception):
        gt_gtscript.stencil(backend="debug", definition=mod.f)


@needs_gt4py
def test_gt4py_drops_horizontal_offsets_of_variable_k_reads():
    """Why `a[1, 0, idx]` is refused: GT4Py's numpy backend builds it and reads a[0, 0, idx]."""
    src = REFUSED[2][0]
    mod = load_source(_DIR, f"_gt_vindex22_{os.getpid()}_{next(_COUNTER)}", HEADERS["gt"] + textwrap.dedent(src))
    st = gt_gtscript.stencil(backend="numpy", definition=mod.f)
    a = np.arange(24.0).reshape(2, 3, 4)
    out = np.zeros((2, 3, 4))
    st(a=a, idx=np.zeros((2, 3, 4), np.int32), out=out, origin=(0, 0, 0), domain=(1, 3, 4))
    assert (out[0] == a[0]).all()
