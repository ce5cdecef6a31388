"""gridbuf.gtscript's compile-time side of issue 22, against GT4Py 1.1.12's numpy backend.

Conformance definitions (run by both engines on the same random inputs, every array argument
compared bit for bit afterwards, in the layouts C, F, gt:cpu_ifirst and gt:cpu_kfirst, and on the
tape interpreter): ``__INLINED`` with optional fields passed as None, ``compile_assert``, ``if``
statements and augmented assignments inside ``gtscript.function`` helpers, ``IK`` and ``JK``
fields, ``lazy_stencil``. Then GT4Py's names (``dir()``), and bad input: each refused construct
raises a GridbufValueError naming the construct and the line, and nothing is written.

GT4Py's behaviour relied on (checked with gt4py 1.1.12): a false ``compile_assert`` fails the
definition (GTScriptAssertionError naming the line); ``if __INLINED(C)`` keeps one branch when the
stencil is defined; a field the kept code never uses has AccessKind.NONE and may be passed as
None, while None for a used field fails the call before anything runs; a function's ``if`` is
computed like the stencil's (the condition once, before either branch); a function has one
``return``, at its end; IK/JK fields are read with two offsets and never written; runtime interval
bounds raise NotImplementedError on the numpy backend.
"""

from __future__ import annotations

import itertools
import os
import re
import textwrap
import zlib
from dataclasses import dataclass, field

import numpy as np
import pytest

import gridbuf as gb
from gridbuf import gtscript
from _gtscript_oracle import assert_same, field_kinds, gt4py_reference, load_source, run_in_layout
from gridbuf.errors import GridbufTypeError, GridbufValueError
from _scratch import scratch_dir

os.environ.setdefault("GT_CACHE_ROOT", scratch_dir("gridbuf_test_frontend22_"))
try:
    import gt4py.cartesian.gtscript as gt_gtscript

    HAVE_GT4PY = True
except ImportError:  # pragma: no cover - gt4py is a dev requirement
    gt_gtscript = None
    HAVE_GT4PY = False

needs_gt4py = pytest.mark.skipif(not HAVE_GT4PY, reason="gt4py is not installed")

LAYOUTS = ["C", "F", "gt:cpu_ifirst", "gt:cpu_kfirst"]
DOMAIN = (7, 6, 5)
HEADERS = {
    "gb": "import numpy as np\nfrom gridbuf import gtscript\nfrom gridbuf.gtscript import *\nfrom gridbuf.gtscript import GlobalTable\n",
    "gt": "import numpy as np\nfrom gt4py.cartesian import gtscript\nfrom gt4py.cartesian.gtscript import *\nfrom gt4py.cartesian.gtscript import GlobalTable\n",
}


# ============================================================================ the registry
@dataclass
class Case:
    """A definition (`fn`, in SOURCE) run with `externals`; fields in `none` are passed as None."""

    fn: str
    halo: tuple[int, int, int] = (0, 0, 0)
    externals: dict = field(default_factory=dict)
    none: tuple[str, ...] = ()
    scalars: dict = field(default_factory=dict)
    lazy: bool = False


SOURCE = textwrap.dedent(
    '''
    @gtscript.function
    def scaled(x, y):
        from __externals__ import MODE
        if __INLINED(MODE == 1):
            r = x * 2.0
        elif __INLINED(MODE == 2):
            r = x + y[1, 0, 0]
        else:
            r = -x
        return r


    def inlined_optional(a: Field[np.float64], b: Field[np.float64], c: Field[np.float64], out: Field[np.float64], w: float):
        from __externals__ import USE_B, USE_C, MODE
        with computation(PARALLEL), interval(...):
            compile_assert(MODE >= 0)
            out = a
            if __INLINED(USE_B):
                out = out + b[-1, 0, 0]
            if __INLINED(USE_C and not USE_B):
                out = out * c * w
            else:
                out = out - 1.0
            out = out + scaled(a, b)


    @gtscript.function
    def branchy(x, y):
        z = x
        if x > 0.0:
            z = y * 2.0
            z += 1.0
            if y < 0.5:
                z *= 3.0
        elif x < -1.0:
            z -= 3.0
        else:
            z = z / 2.0
        w = 1.0
        if z > 1.0:
            w = 2.0
            z = -z
        else:
            w -= 4.0
        return z + w


    @gtscript.function
    def cond_once(x):
        y = x
        if y > 0.0:
            y = -1.0
            t = 10.0
        else:
            t = 20.0
        return y + t


    @gtscript.function
    def two(x, y):
        lo = min(x, y)
        hi = max(x, y)
        if lo < 0.0:
            lo, hi = hi, lo
        return lo, hi


    @gtscript.function
    def both_branches(x):
        if x > 0.5:
            if x > 1.0:
                r = 1.0
            else:
                r = x * 3.0
        elif x < -0.5:
            r = -x
        else:
            r = 2.0
            x = x + r
        return r - x


    def func_if(a: Field[np.float64], b: Field[np.float64], o1: Field[np.float64], o2: Field[np.float64], o3: Field[np.float64], o4: Field[np.float64]):
        with computation(PARALLEL), interval(...):
            o1 = branchy(a, b[0, 1, 0])
            o2 = cond_once(a)
            lo, hi = two(a, b)
            o3 = hi - 2.0 * lo
            o4 = both_branches(a) + both_branches(b[0, -1, 0] * 0.5)


    @gtscript.function
    def retyped(x, y):
        z = x
        z *= 2.5
        w = x
        if y > 0.0:
            w = y * 1.5
            x = y
        else:
            w += 0.75
        return z + w + x


    @gtscript.function
    def scaled32(x, y):
        r = x
        if y > 1.0:
            r = r * 2.0
        r -= 0.1
        return r


    def func_mixed_types(a: Field[np.int32], b: Field[np.float64], c: Field[np.float32], o1: Field[np.float64], o2: Field[np.float32], o3: Field[np.int32]):
        with computation(PARALLEL), interval(...):
            o1 = retyped(a, b)
            o2 = scaled32(c, b)
            o3 = retyped(a + 1, c)


    def func_if_sequential(a: Field[np.float64], out: Field[np.float64]):
        with computation(FORWARD):
            with interval(0, 1):
                out = a
            with interval(1, None):
                if a > 0.0:
                    out = branchy(out[0, 0, -1], a)
                else:
                    out = cond_once(out[0, 0, -1]) + a
        with computation(BACKWARD), interval(0, -1):
            out = branchy(out, out[0, 0, 1])


    def ik_jk(a: Field[IK, np.float64], b: Field[JK, np.float64], kf: Field[K, np.float64], c: Field[np.float64], out: Field[np.float64]):
        with computation(PARALLEL), interval(1, None):
            out = a[1, 0] + b[0, -1] * c + kf[-1]
        with computation(PARALLEL), interval(0, 1):
            out = a - b[1, 0] + c[1, 1, 0]


    @gtscript.function
    def lookup(tab, x):
        return x * tab.A[2, 0] + tab.A[0, 1]


    def table_read(t: GlobalTable[(np.float64, (4,))], m: GlobalTable[(np.float32, (3, 2))], a: Field[np.float64], out: Field[np.float64], o32: Field[np.float32]):
        with computation(PARALLEL), interval(...):
            out = a * t.A[1] + t.A[3] - m.A[1, 1]
            o32 = m.A[0, 1] * a + t.A[0]
            if a > t.A[2]:
                o32 = lookup(m, o32)


    def lazy_def(a: Field[np.float64], out: Field[np.float64]):
        with computation(PARALLEL), interval(...):
            out = branchy(a, a * 0.25)
    '''
)

CASES: dict[str, Case] = {
    # Fields and scalars whose every use the externals prune are passed as None.
    "inlined_all_none": Case("inlined_optional", halo=(1, 1, 0), externals={"USE_B": False, "USE_C": False, "MODE": 1}, none=("b", "c"), scalars={"w": None}),
    "inlined_b": Case("inlined_optional", halo=(1, 1, 0), externals={"USE_B": True, "USE_C": True, "MODE": 1}, none=("c",), scalars={"w": None}),
    "inlined_c": Case("inlined_optional", halo=(1, 1, 0), externals={"USE_B": False, "USE_C": True, "MODE": 0}, none=("b",), scalars={"w": 0.5}),
    "inlined_mode2": Case("inlined_optional", halo=(1, 1, 0), externals={"USE_B": False, "USE_C": True, "MODE": 2}, scalars={"w": 1.5}),
    "func_if": Case("func_if", halo=(0, 1, 0)),
    "func_if_sequential": Case("func_if_sequential"),
    "func_mixed_types": Case("func_mixed_types"),
    "ik_jk": Case("ik_jk", halo=(1, 1, 1)),
    "table_read": Case("table_read"),
    "lazy": Case("lazy_def", lazy=True),
}

_DIR = scratch_dir("gridbuf_frontend22_defs_")
_MODULES: dict = {}
_COUNTER = itertools.count()


def defs(lib: str):
    if lib not in _MODULES:
        _MODULES[lib] = load_source(_DIR, f"_gb_frontend22_defs_{lib}_{os.getpid()}", HEADERS[lib] + SOURCE)
    return _MODULES[lib]


def arg_kinds(name: str) -> dict[str, tuple[str, np.dtype, tuple[int, ...]]]:
    """Axes, dtype and data dims of every field and table argument, from GT4Py's descriptors."""
    return field_kinds(getattr(defs("gt"), CASES[name].fn), gt_gtscript._FieldDescriptor)


def make_inputs(name: str) -> dict[str, np.ndarray | None]:
    c = CASES[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    (ni, nj, nk), (hi, hj, hk) = DOMAIN, c.halo
    sizes = {"I": ni + 2 * hi, "J": nj + 2 * hj, "K": nk + 2 * hk}
    arrays: dict[str, np.ndarray | None] = {}
    for n, (axes, dt, data_dims) in arg_kinds(name).items():
        if n in c.none:
            arrays[n] = None
            continue
        v = rng.uniform(-3.0, 3.0, size=tuple(sizes[a] for a in axes) + data_dims)
        if dt.kind == "i":
            v = np.round(v * 20.0)
        special = (rng.random(v.shape) < 0.1) & (dt.kind == "f")
        v[special] = rng.choice(np.array([0.0, -0.0, 1.0, -1.0, 0.25, np.nan, np.inf]), size=int(special.sum()))
        arrays[n] = v.astype(dt)
    return arrays


_GT: dict = {}
_GB: dict = {}


def gt_results(name: str):
    """Inputs and GT4Py's numpy-backend results (one build per case)."""
    if name not in _GT:
        c = CASES[name]
        st = gt_gtscript.stencil(backend="numpy", definition=getattr(defs("gt"), c.fn), externals=c.externals)
        inputs = make_inputs(name)
        _GT[name] = (inputs, gt4py_reference(st, inputs, origin=c.halo, domain=DOMAIN, scalars=c.scalars))
    return _GT[name]


def gb_stencil(name: str, mode: str):
    key = (name, mode)
    if key not in _GB:
        c = CASES[name]
        make = gtscript.lazy_stencil if c.lazy else gtscript.stencil
        _GB[key] = make(backend="numpy", definition=getattr(defs("gb"), c.fn), externals=c.externals)
    return _GB[key]


def run_gb(name: str, layout: str, mode: str = "jit") -> tuple[dict, dict]:
    inputs, want = gt_results(name)
    axes = {k: kind[0] for k, kind in arg_kinds(name).items()}
    got = run_in_layout(gb_stencil(name, mode), inputs, layout, axes, origin=CASES[name].halo, domain=DOMAIN, scalars=CASES[name].scalars)
    return got, want


# ============================================================================ 1. conformance
@needs_gt4py
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", list(CASES))
def test_conformance(name, layout):
    got, want = run_gb(name, layout)
    assert_same(got, want, f"{name} on {layout}")


@needs_gt4py
@pytest.mark.parametrize("name", list(CASES))
def test_conformance_interpreter(name, monkeypatch):
    """The same on the tape interpreter (GRIDBUF_GTSCRIPT_JIT=0 is read when defined)."""
    monkeypatch.setenv("GRIDBUF_GTSCRIPT_JIT", "0")
    _GB.pop((name, "interpreter"), None)
    got, want = run_gb(name, "gt:cpu_ifirst", "interpreter")
    assert_same(got, want, f"{name}, interpreter")


@needs_gt4py
def test_every_gt4py_name_is_present():
    """Every public name of gt4py.cartesian.gtscript (dir() and __all__) is in gridbuf.gtscript."""
    public = lambda m: {n for n in dir(m) if not n.startswith("_")}  # noqa: E731
    assert public(gt_gtscript) - public(gtscript) == set()
    assert set(gt_gtscript.__all__) - set(gtscript.__all__) == set()
    for n in gt_gtscript.__all__:
        assert hasattr(gtscript, n), n
    assert gtscript.MATH_BUILTINS == gt_gtscript.MATH_BUILTINS
    assert gtscript.builtins == gt_gtscript.builtins
    assert gtscript.mask_from_axes(gtscript.IK) == gt_gtscript.mask_from_axes(gt_gtscript.IK)
    assert repr(gtscript.I[-1] + 2) == repr(gt_gtscript.I[-1] + 2)
    assert str(gtscript.J[1:3]) == str(gt_gtscript.J[1:3])


def test_names_importable_without_gt4py():
    """The new names exist (and do not fail) at import: refusals come when a stencil is defined."""
    from gridbuf.gtscript import (  # noqa: F401
        IK, JK, GlobalTable, LazyStencil, Sequence, __INLINED, compile_assert, horizontal, lazy_stencil, region,
    )

    assert gtscript.I[0] + 1 == gtscript.AxisIndex("I", 0, 1)
    assert isinstance(gtscript.GlobalTable[(np.float64, (3,))], object)
    assert gtscript.compile_assert(True) is None


# ============================================================================ 2. semantics details
def gb_define(src: str, name: str, **kw):
    """gridbuf's stencil `name` from `src`."""
    mod = load_source(_DIR, f"_gb_frontend22_{os.getpid()}_{next(_COUNTER)}", HEADERS["gb"] + textwrap.dedent(src))
    return gtscript.stencil(backend="numpy", definition=getattr(mod, name), **kw)


def line_of(src: str, text: str) -> int:
    """The line of `text` in the module gb_define writes (the header has 4 lines)."""
    lines = textwrap.dedent(src).splitlines()
    return 4 + next(i for i, ln in enumerate(lines, 1) if text in ln)


OPTIONAL = """
def opt(a: Field[np.float64], b: Field[np.float64], out: Field[np.float64]):
    from __externals__ import USE_B
    with computation(PARALLEL), interval(...):
        out = a * 2.0
        if __INLINED(USE_B):
            out = out + b
"""


def test_none_field_used_is_refused_nothing_written():
    """None for a field the stencil uses fails the call (GT4Py: AssertionError "Invalid value for
    'b' field."), before anything is written."""
    st = gb_define(OPTIONAL, "opt", externals={"USE_B": True})
    a, out = np.ones((3, 3, 2)), np.full((3, 3, 2), 7.0)
    with pytest.raises(GridbufValueError, match="'b'.*None"):
        st(a, None, out)
    assert (out == 7.0).all()
    st(a, np.ones((3, 3, 2)), out)
    assert (out == 3.0).all()


def test_pruned_field_is_ignored():
    """A pruned field may be None or any array (it does not bound the domain), as in GT4Py."""
    st = gb_define(OPTIONAL, "opt", externals={"USE_B": False})
    assert st.unused_fields == ("b",)
    a, out = np.ones((3, 3, 2)), np.zeros((3, 3, 2))
    st(a, None, out)
    assert (out == 2.0).all()
    st(a, np.zeros((1, 1, 1), dtype=np.float32), out=out)
    assert (out == 2.0).all()
    with pytest.raises(GridbufTypeError, match="misses"):
        st(a, out=out)


def test_table_of_another_dtype_is_refused_nothing_written():
    st = gb_define(
        """
        def f(t: GlobalTable[(np.float32, (2,))], out: Field[np.float64]):
            with computation(PARALLEL), interval(...):
                out = t.A[1]
        """,
        "f",
    )
    out = np.zeros((2, 2, 2))
    with pytest.raises(GridbufTypeError, match="GlobalTable 't'.*float64.*expected a NumPy array of float32, shape \\(2,\\)"):
        st(np.ones(2), out)
    assert (out == 0.0).all()
    st(np.array([1.0, 2.5], dtype=np.float32), out)
    assert (out == 2.5).all()


def test_unused_scalar_may_be_none():
    st = gb_define(
        """
        def f(a: Field[np.float64], out: Field[np.float64], w: float, v: np.float32):
            from __externals__ import USE_W
            with computation(PARALLEL), interval(...):
                out = a + v
                if __INLINED(USE_W):
                    out = out * w
        """,
        "f",
        externals={"USE_W": False},
    )
    assert st.unused_scalars == ("w",)
    out = np.zeros((2, 2, 2))
    st(np.ones((2, 2, 2)), out, w=None, v=np.float32(0.5))
    assert (out == 1.5).all()
    with pytest.raises(GridbufTypeError, match="'v'"):
        st(np.ones((2, 2, 2)), out, w=None, v=None)


def test_inlined_truth_value_and_expression():
    """`__INLINED(x)` decides by Python's truth value (as GT4Py's inliner) and is a constant."""
    st = gb_define(
        """
        def f(a: Field[np.float64], out: Field[np.float64]):
            from __externals__ import N, M
            with computation(PARALLEL), interval(...):
                compile_assert(N and not M)
                if __INLINED(N):
                    out = a + __INLINED(N)
                else:
                    out = a
                if __INLINED(N and not M):
                    out = out * 2.0
        """,
        "f",
        externals={"N": 3, "M": 0},
    )
    a, out = np.ones((2, 2, 2)), np.zeros((2, 2, 2))
    st(a, out)
    assert (out == 8.0).all()


def test_lazy_stencil_builds_on_first_call():
    mod = defs("gb")
    lazy = gtscript.lazy_stencil(backend="numpy", definition=mod.lazy_def)
    assert isinstance(lazy, gtscript.LazyStencil) and lazy._impl is None
    built = lazy.build()
    assert isinstance(built, gtscript.GTStencil) and lazy.implementation is built
    eager = gtscript.lazy_stencil(backend="numpy", definition=mod.lazy_def, eager=True)
    assert isinstance(eager, gtscript.GTStencil)
    deco = gtscript.lazy_stencil(backend="numpy")(mod.lazy_def)
    assert isinstance(deco, gtscript.LazyStencil)


def test_lazy_stencil_checks_syntax_at_creation():
    src = """
    def bad(a: Field[np.float64], out: Field[np.float64]):
        with computation(PARALLEL), interval(...):
            out = a + undefined_name
    """
    mod = load_source(_DIR, f"_gb_frontend22_{os.getpid()}_{next(_COUNTER)}", HEADERS["gb"] + textwrap.dedent(src))
    with pytest.raises(GridbufValueError, match=f"line {line_of(src, 'undefined_name')}.*undefined_name"):
        gtscript.lazy_stencil(backend="numpy", definition=mod.bad)
    unchecked = gtscript.lazy_stencil(backend="numpy", definition=mod.bad, check_syntax=False)
    with pytest.raises(GridbufValueError, match="undefined_name"):
        unchecked(np.zeros((2, 2, 2)), np.zeros((2, 2, 2)))


# ============================================================================ 3. bad input
BAD = {
    "compile_assert false": (
        """
        def f(a: Field[np.float64], out: Field[np.float64]):
            from __externals__ import N
            with computation(PARALLEL), interval(...):
                compile_assert(N > 2)
                out = a
        """,
        "compile_assert(N > 2)", r"compile_assert\(N > 2\) failed", {"N": 1},
    ),
    "compile_assert false in a function": (
        """
        @gtscript.function
        def g(x):
            from __externals__ import N
            compile_assert(N < 0)
            return x
        def f(a: Field[np.float64], out: Field[np.float64]):
            with computation(PARALLEL), interval(...):
                out = g(a)
        """,
        "compile_assert(N < 0)", r"compile_assert\(N < 0\) failed", {"N": 1},
    ),
    "compile_assert on a field": (
        """
        def f(a: Field[np.float64], out: Field[np.float64]):
            with computation(PARALLEL), interval(...):
                compile_assert(a > 0.0)
                out = a
        """,
        "compile_assert(a", "compile_assert.*not a compile-time constant", {},
    ),
    "__INLINED on a field": (
        """
        def f(a: Field[np.float64], out: Field[np.float64]):
            with computation(PARALLEL), interval(...):
                out = a
                if __INLINED(a > 0.0):
                    out = 2.0
        """,
        "__INLINED", r"__INLINED\(a > 0.0\).*not a compile-time constant", {},
    ),
    "horizontal region bound known at run time": (
        """
        def f(a: Field[np.float64], out: Field[np.float64], n: int):
            with computation(PARALLEL), interval(...):
                out = a
                with horizontal(region[I[0]:n, :]):
                    out = 2.0
        """,
        "with horizontal", r"region bound 'n' is known only at run time", {},
    ),
    "horizontal region reading at an offset what was written outside regions": (
        """
        def f(a: Field[np.float64], out: Field[np.float64]):
            with computation(PARALLEL), interval(...):
                tmp = a
                with horizontal(region[I[0], :]):
                    out = tmp[1, 0, 0]
        """,
        "with horizontal", r"reads tmp at a horizontal offset after it was written outside a region", {},
    ),
    "horizontal region bound of the wrong axis": (
        """
        def f(a: Field[np.float64], out: Field[np.float64]):
            with computation(PARALLEL), interval(...):
                with horizontal(region[J[0], :]):
                    out = a
        """,
        "J[0]", r"region bound 'J\[0\]': expected a position of axis I", {},
    ),
    "axis position external": (
        """
        def f(a: Field[np.float64], out: Field[np.float64]):
            from __externals__ import i_start
            with computation(PARALLEL), interval(...):
                out = a + i_start
        """,
        "a + i_start", "axis position 'i_start'.*used as a value", {"i_start": gtscript.I[0] + 1},
    ),
    "GlobalTable at a run-time index": (
        """
        def f(t: GlobalTable[(np.float64, (4,))], i: Field[np.int32], out: Field[np.float64]):
            with computation(PARALLEL), interval(...):
                out = t.A[i]
        """,
        "t.A[i]", r"t.A\[i\]: GlobalTable 't' read at an index known only at run time", {},
    ),
    "GlobalTable index out of range": (
        """
        def f(t: GlobalTable[(np.float64, (4,))], out: Field[np.float64]):
            with computation(PARALLEL), interval(...):
                out = t.A[-1]
        """,
        "t.A[-1]", r"index \(-1,\) of GlobalTable 't' with shape \(4,\)", {},
    ),
    "runtime interval bound": (
        """
        def f(a: Field[np.float64], out: Field[np.float64], n: int):
            with computation(PARALLEL), interval(0, n):
                out = a
        """,
        "interval(0, n)", "interval bound 'n' is known only at run time", {},
    ),
    "IK write": (
        """
        def f(a: Field[np.float64], out: Field[IK, np.float64]):
            with computation(FORWARD), interval(...):
                out = a
        """,
        "out = a", "assignment to field 'out' with axes IK", {},
    ),
    "return inside if in a function": (
        """
        @gtscript.function
        def g(x):
            if x > 0.0:
                return x
            return -x
        def f(a: Field[np.float64], out: Field[np.float64]):
            with computation(PARALLEL), interval(...):
                out = g(a)
        """,
        "return x", "return statement inside an if", {},
    ),
    "local of one branch read in the other": (
        """
        @gtscript.function
        def g(x):
            if x > 0.0:
                y = x
            else:
                y = y + 1.0
            return y
        def f(a: Field[np.float64], out: Field[np.float64]):
            with computation(PARALLEL), interval(...):
                out = g(a)
        """,
        "y = y + 1.0", "'y' is first assigned at line .* in one branch only of an `if`", {},
    ),
    "while loop whose GT4Py backends disagree": (
        """
        def f(a: Field[np.float64], out: Field[np.float64]):
            with computation(PARALLEL), interval(...):
                out = a
                while out > 1.0:
                    out = out / 2.0
                    a = a + 1.0
        """,
        "out = out / 2.0", "the while loop's body changes \"out\", which its condition reads, before its last statement", {},
    ),
}


@pytest.mark.parametrize("what", list(BAD))
def test_refused_at_definition(what):
    """Each refused construct: a GridbufValueError when the stencil is defined, naming the
    construct and its line (so no stencil exists and nothing can be written)."""
    src, at, message, externals = BAD[what]
    with pytest.raises(GridbufValueError, match=message) as info:
        gb_define(src, "f", externals=externals)
    assert re.search(rf"line {line_of(src, at)}\b", str(info.value)), str(info.value)


def test_function_if_costs_no_temporary_write_when_types_stay():
    """A function's `if` on float locals lowers to selects on one mask temporary (the core folds
    it); a local whose type may change is a temporary typed by its first value, as in GT4Py."""
    mod = defs("gb")
    st = gtscript.stencil(backend="numpy", definition=mod.lazy_def)
    temps = [ln for ln in st.ir.splitlines() if ln.startswith("temp ")]
    assert temps and all(ln.split()[1].startswith("__mask") for ln in temps), st.ir
    mixed = gtscript.stencil(backend="numpy", definition=mod.func_mixed_types)
    assert any(ln.startswith("temp __retyped_z") for ln in mixed.ir.splitlines()), mixed.ir


def test_unary_plus_offsets_are_the_constant_offsets():
    """`q[0, 0, +1]` is the constant offset 1, as GT4Py reads it: the same program as `q[0, 0, 1]`,
    with no read at a level computed at run time (which would be checked point by point and keep
    the statement out of vectorised runs). A boolean under it is no offset, as GT4Py's."""
    src = """
    def f(a: Field[np.float64], out: Field[np.float64]):
        with computation(FORWARD), interval(0, -1):
            out = a[{i}, 0, {k}] + out[0, 0, {k}] * 0.5
    """
    plus = gb_define(src.format(i="+1", k="+1"), "f")
    bare = gb_define(src.format(i="1", k="1"), "f")
    assert "kvar" not in plus.ir and plus.ir == bare.ir, plus.ir
    with pytest.raises(GridbufValueError, match=r"the offset '\+True' is not a constant"):
        gb_define(src.format(i="+True", k="1"), "f")
