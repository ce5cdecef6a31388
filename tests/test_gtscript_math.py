"""gridbuf.gtscript's math functions against GT4Py's numpy backend: every native function of
GT4Py, imported, bare (``sqrt(x)`` with no import, as GT4Py allows), as ``gtscript.NAME`` and as
NumPy's or ``math``'s function, on float64 and float32 inputs in each function's domain; the
compiled code against the interpreter bit for bit."""

from __future__ import annotations

import importlib.util
import os
import sys

import numpy as np
import pytest

import gridbuf as gb
from gridbuf import gtscript
from _scratch import scratch_dir

# GT4Py builds its numpy-backend modules in a cache it locates when first imported.
os.environ.setdefault("GT_CACHE_ROOT", scratch_dir("gridbuf_test_gtscript_math_"))
try:
    import gt4py.cartesian.gtscript  # noqa: F401

    HAVE_GT4PY = True
except ImportError:  # pragma: no cover - gt4py is a dev requirement
    HAVE_GT4PY = False

# name: (input range, tolerance in ulps; 0: exact). Ranges keep to each function's domain.
UNARY = {
    "abs": ((-10, 10), 0),
    "sqrt": ((0, 100), 0),
    "exp": ((-20, 20), 4),
    "log": ((1e-3, 1e3), 4),
    "log10": ((1e-3, 1e3), 4),
    "sin": ((-10, 10), 4),
    "cos": ((-10, 10), 4),
    "tan": ((-1.5, 1.5), 4),
    "asin": ((-1, 1), 4),
    "acos": ((-1, 1), 4),
    "atan": ((-10, 10), 4),
    "sinh": ((-10, 10), 4),
    "cosh": ((-10, 10), 4),
    "tanh": ((-5, 5), 4),
    "asinh": ((-10, 10), 4),
    "acosh": ((1, 10), 4),
    "atanh": ((-0.99, 0.99), 4),
    "gamma": ((0.05, 20), 8),
    "cbrt": ((-100, 100), 4),
    "erf": ((-4, 4), 4),
    "erfc": ((-3, 5), 4),
    "floor": ((-10, 10), 0),
    "ceil": ((-10, 10), 0),
    "trunc": ((-10, 10), 0),
    "round": ((-10, 10), 0),
    "round_away_from_zero": ((-10, 10), 0),
    "isfinite": ((-10, 10), 0),
    "isinf": ((-10, 10), 0),
    "isnan": ((-10, 10), 0),
}
# name: (expression, range of a, range of b, tolerance in ulps).
BINARY = {
    "min": ("min(a, b)", (-10, 10), (-10, 10), 0),
    "max": ("max(a, b)", (-10, 10), (-10, 10), 0),
    "mod": ("mod(a, b)", (-10, 10), (0.5, 5), 0),
    "mod_neg": ("mod(a, b)", (-10, 10), (-5, -0.5), 0),
    "percent": ("a % b", (-10, 10), (-5, 5), 0),
    "power": ("a ** b", (0.01, 10), (-3, 3), 4),
}
# Other spellings of some functions (gridbuf only): module prefix, name.
SPELLINGS = {
    "asin": [("np", "arcsin"), ("math", "asin")],
    "acosh": [("np", "arccosh"), ("math", "acosh")],
    "erf": [("math", "erf")],
    "gamma": [("math", "gamma")],
    "round": [("np", "rint"), ("np", "round")],
    "isfinite": [("np", "isfinite"), ("math", "isfinite")],
    "log10": [("np", "log10")],
    "cbrt": [("np", "cbrt")],
}

DOMAIN = (7, 5, 3)
LAYOUTS = ["C", "F", "gt:cpu_ifirst", "gt:cpu_kfirst"]


def _source(style: str, lib: str, dtype: str) -> str:
    """A module with one definition per function; `style`: imported or bare names."""
    pkg = "gridbuf" if lib == "gb" else "gt4py.cartesian"
    names = ", ".join(n for n in [*UNARY, "min", "max", "mod"] if style == "imported")
    lines = [
        "import math",
        "import numpy as np",
        f"from {pkg} import gtscript",
        f"from {pkg}.gtscript import Field, PARALLEL, computation, interval" + (f", {names}" if names else ""),
        f"F = Field[np.{dtype}]",
    ]
    for name in UNARY:
        lines += [
            f"def u_{name}(a: F, out: F):",
            "    with computation(PARALLEL), interval(...):",
            f"        out = {name}(a)",
        ]
    for name, (expr, *_rest) in BINARY.items():
        lines += [
            f"def b_{name}(a: F, b: F, out: F):",
            "    with computation(PARALLEL), interval(...):",
            f"        out = {expr}",
        ]
    if lib == "gb":
        for name, spellings in SPELLINGS.items():
            for i, (mod, attr) in enumerate([("gtscript", name), *spellings]):
                lines += [
                    f"def s_{name}_{i}(a: F, out: F):",
                    "    with computation(PARALLEL), interval(...):",
                    f"        out = {mod}.{attr}(a)",
                ]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="session")
def mods(tmp_path_factory):
    """The definitions for (library, style, dtype): the same source, only the imports differ."""
    tmp = tmp_path_factory.mktemp("gtscript_math_defs")
    out = {}
    for lib in ["gb", "gt"] if HAVE_GT4PY else ["gb"]:
        for style in ["imported", "bare"]:
            for dtype in ["float64", "float32"]:
                key = f"_gtscript_math_{lib}_{style}_{dtype}"
                path = tmp / f"{key}.py"
                path.write_text(_source(style, lib, dtype))
                spec = importlib.util.spec_from_file_location(key, path)
                mod = importlib.util.module_from_spec(spec)
                sys.modules[key] = mod
                spec.loader.exec_module(mod)
                out[lib, style, dtype] = mod
    return out


def _inputs(rng, dtype, lo, hi, special):
    a = rng.uniform(lo, hi, size=DOMAIN).astype(dtype)
    flat = a.reshape(-1)
    if special == "ties":  # halfway cases for the roundings
        flat[: 2 * 12 : 2] = np.arange(-6, 6) + 0.5
    if special == "nonfinite":
        flat[:6] = [np.nan, np.inf, -np.inf, 0.0, -0.0, np.nan]
    return a


def _place(a, layout):
    if layout == "C":
        return np.ascontiguousarray(a)
    if layout == "F":
        return np.asfortranarray(a)
    out = gb.empty(a.shape, a.dtype, backend=layout)
    np.asarray(out)[...] = a
    return out


def _ulps(x, y):
    """Distance in units in the last place (NaN equal to NaN, inf equal to inf)."""
    x, y = np.asarray(x), np.asarray(y)
    itype = np.int64 if x.dtype == np.float64 else np.int32

    def key(v):
        i = v.view(itype).astype(np.int64)
        return np.where(i < 0, np.iinfo(itype).min - i, i)

    d = np.abs(key(x) - key(y))
    both_nan = np.isnan(x) & np.isnan(y)
    return np.where(both_nan | (x == y), 0, d)


def _run_gb(definition, inputs, layout):
    arrays = [_place(a, layout) for a in inputs] + [_place(np.zeros_like(inputs[0]), layout)]
    gtscript.stencil(backend="numpy", definition=definition)(*arrays)
    return np.array(np.asarray(arrays[-1]))


_GT: dict = {}


def _run_gt(mods, kind, name, dtype, inputs):
    if not HAVE_GT4PY:
        pytest.skip("gt4py is not installed")
    from gt4py.cartesian import gtscript as gts

    key = (kind, name, dtype)
    if key not in _GT:
        _GT[key] = gts.stencil(backend="numpy", definition=getattr(mods["gt", "imported", dtype], f"{kind}_{name}"))
    arrays = [np.array(a) for a in inputs] + [np.zeros_like(inputs[0])]
    _GT[key](*arrays)
    return arrays[-1]


def _check(got, want, ulps, what):
    d = _ulps(got, want)
    assert d.max() <= ulps, f"{what}: {int(d.max())} ulps apart at {np.unravel_index(d.argmax(), d.shape)}: {got.flat[d.argmax()]!r} vs {want.flat[d.argmax()]!r}"


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_matches_gt4py(mods, name, dtype):
    (lo, hi), ulps = UNARY[name]
    rng = np.random.default_rng(sum(map(ord, name)))
    special = "ties" if "round" in name else "nonfinite" if name.startswith("is") else None
    a = _inputs(rng, dtype, lo, hi, special)
    want = _run_gt(mods, "u", name, dtype, [a])
    if special == "nonfinite":
        assert want.sum() > 0  # the predicate holds somewhere
    for style in ["imported", "bare"]:
        for layout in LAYOUTS:
            got = _run_gb(getattr(mods["gb", style, dtype], f"u_{name}"), [a], layout)
            _check(got, want, ulps, f"{name} {style} {dtype} {layout}")


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_matches_gt4py(mods, name, dtype):
    _expr, ra, rb, ulps = BINARY[name]
    rng = np.random.default_rng(sum(map(ord, name)))
    a = _inputs(rng, dtype, *ra, None)
    b = _inputs(rng, dtype, *rb, None)
    if name in ("mod", "percent"):
        a.reshape(-1)[:4] = [6.0, -6.0, 0.0, -0.0]  # exact multiples: the sign of a zero remainder
        b.reshape(-1)[:4] = [3.0, 3.0, -3.0, 3.0]
    want = _run_gt(mods, "b", name, dtype, [a, b])
    for style in ["imported", "bare"]:
        for layout in LAYOUTS:
            got = _run_gb(getattr(mods["gb", style, dtype], f"b_{name}"), [a, b], layout)
            _check(got, want, ulps, f"{name} {style} {dtype} {layout}")


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_other_spellings_lower_to_the_same_function(mods, name):
    rng = np.random.default_rng(3)
    (lo, hi), _ = UNARY[name]
    a = _inputs(rng, "float64", lo, hi, None)
    want = _run_gb(getattr(mods["gb", "imported", "float64"], f"u_{name}"), [a], "C")
    for i in range(len(SPELLINGS[name]) + 1):
        got = _run_gb(getattr(mods["gb", "imported", "float64"], f"s_{name}_{i}"), [a], "C")
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_compiled_code_matches_the_interpreter_bit_for_bit(mods, dtype, monkeypatch):
    """Every function, also outside its domain (NaN, infinities, poles), in one stencil per
    function: machine code (calls into the same functions as the interpreter) and the
    interpreter give the same bits."""
    rng = np.random.default_rng(11)
    a = rng.uniform(-30, 30, size=DOMAIN).astype(dtype)
    a.reshape(-1)[:12] = [np.nan, np.inf, -np.inf, 0.0, -0.0, -1.0, -2.0, 1.0, 0.5, -0.5, 2.5, 1e30]
    b = rng.uniform(-4, 4, size=DOMAIN).astype(dtype)
    b.reshape(-1)[:6] = [0.0, -0.0, np.inf, np.nan, 2.0, -1.0]
    defs = mods["gb", "bare", dtype]
    for kind, names, inputs in [("u", UNARY, [a]), ("b", BINARY, [a, b])]:
        for name in names:
            definition = getattr(defs, f"{kind}_{name}")
            monkeypatch.setenv("GRIDBUF_GTSCRIPT_JIT", "0")
            interp = _run_gb(definition, inputs, "F")
            monkeypatch.delenv("GRIDBUF_GTSCRIPT_JIT")
            jit = _run_gb(definition, inputs, "F")
            same = (interp.view(f"u{interp.itemsize}") == jit.view(f"u{jit.itemsize}")) | (np.isnan(interp) & np.isnan(jit))
            assert same.all(), f"{name} {dtype}: {interp[~same][:4]} vs {jit[~same][:4]}"


def test_bare_names_do_not_shadow_the_definitions_own(tmp_path):
    """A gtscript.function named like a native function is called, not the native one."""
    path = tmp_path / "_gtscript_math_shadow.py"
    path.write_text(
        "import numpy as np\n"
        "from gridbuf import gtscript\n"
        "from gridbuf.gtscript import Field, PARALLEL, computation, interval\n"
        "@gtscript.function\n"
        "def sqrt(x):\n"
        "    return x + 1.0\n"
        "def d(a: Field[np.float64], out: Field[np.float64]):\n"
        "    with computation(PARALLEL), interval(...):\n"
        "        out = sqrt(a) + exp(a * 0.0)\n"
    )
    spec = importlib.util.spec_from_file_location("_gtscript_math_shadow", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["_gtscript_math_shadow"] = mod
    spec.loader.exec_module(mod)
    a = np.full(DOMAIN, 4.0)
    np.testing.assert_array_equal(_run_gb(mod.d, [a], "C"), 6.0)


def test_names_are_exported():
    for name in [*UNARY, "min", "max", "mod"]:
        assert name in gtscript.__all__
        assert callable(getattr(gtscript, name))


_MIN_MAX_SOURCE = '''
import numpy as np
from gridbuf import gtscript
from gridbuf.gtscript import FORWARD, PARALLEL, Field, computation, interval

F64 = Field[np.float64]


def lanes(a: F64, b: F64, lo: F64, hi: F64):
    with computation(PARALLEL), interval(...):
        lo = min(a, b)
        hi = max(a, b)


def mixed(a: F64, b: F64, n: Field[np.int32], lo: F64, hi: F64):
    with computation(PARALLEL), interval(...):
        lo = min(a, b) if n == 0 else a
        hi = max(a, b) if n == 0 else b


def points(a: F64, b: F64, lo: F64, hi: F64):
    with computation(FORWARD), interval(...):
        lo = min(a, b)
        hi = max(a, b)
        k = 0
        while k < 1:
            lo = min(a, lo)
            hi = max(a, hi)
            k = k + 1
'''


@pytest.mark.parametrize("kind", ["lanes", "mixed", "points"])
@pytest.mark.parametrize("layout", ["C", "F", "gt:cpu_kfirst", "gt:cpu_ifirst"])
def test_min_max_are_numpys_bit_for_bit_on_special_values(tmp_path, kind, layout):
    """`min` and `max` are NumPy's minimum and maximum to the bit on every pair of special
    values (NaNs win whichever side they are on; of equal values, signed zeros included, the
    second), in the machine code of every kind: lanes of one type, mixed types (an int32 field)
    and a FORWARD section with a loop run point by point."""
    from _gtscript_oracle import load_source

    mod = load_source(str(tmp_path), f"_gtscript_min_max_{kind}_{abs(hash(layout))}", _MIN_MAX_SOURCE)
    special = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.5])
    a, b = np.meshgrid(special, special, indexing="ij")
    a = np.repeat(a[:, :, None], 3, axis=2)
    b = np.repeat(b[:, :, None], 3, axis=2)
    want_lo, want_hi = np.minimum(a, b), np.maximum(a, b)
    if kind == "points":
        want_lo, want_hi = np.minimum(a, want_lo), np.maximum(a, want_hi)
    ins = [gb.from_array(x, backend=layout) for x in (a, b)]
    if kind == "mixed":
        ins.append(gb.zeros(a.shape, dtype=np.int32, backend=layout))
    outs = [gb.zeros(a.shape, backend=layout) for _ in range(2)]
    gtscript.stencil(backend=layout, definition=getattr(mod, kind))(*ins, *outs)
    for got, want in zip(outs, (want_lo, want_hi)):
        got = np.asarray(got)
        assert (got.view(np.uint64) == want.view(np.uint64)).all(), (got, want)
