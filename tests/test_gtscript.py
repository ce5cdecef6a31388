"""gridbuf.gtscript: the same definitions as GT4Py's numpy backend on the same inputs, on every
layout and both float types; random expression trees against a NumPy evaluation; bad input."""

from __future__ import annotations

import itertools
import os
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gridbuf as gb
from gridbuf import gtscript
from _gtscript_oracle import load_source
from gridbuf.errors import GridbufError, GridbufTypeError, GridbufValueError
from _scratch import scratch_dir

# GT4Py builds its numpy-backend modules in a cache it locates when first imported.
os.environ.setdefault("GT_CACHE_ROOT", scratch_dir("gridbuf_test_gtscript_"))
try:
    import gt4py.cartesian.gtscript  # noqa: F401

    HAVE_GT4PY = True
except ImportError:  # pragma: no cover - gt4py is a dev requirement
    HAVE_GT4PY = False

DEFS = '''
import numpy as np

DTYPE = {dtype}
F = Field[DTYPE]


def copy_off(inp: F, out: F):
    with computation(PARALLEL), interval(...):
        out = inp[1, -1, 0]


def laplacian(inp: F, out: F):
    with computation(PARALLEL), interval(...):
        out = -4.0 * inp[0, 0, 0] + inp[-1, 0, 0] + inp[1, 0, 0] + inp[0, -1, 0] + inp[0, 1, 0]


def hdiff(inp: F, coeff: F, out: F):
    with computation(PARALLEL), interval(...):
        lap = 4.0 * inp[0, 0, 0] - (inp[-1, 0, 0] + inp[1, 0, 0] + inp[0, -1, 0] + inp[0, 1, 0])
        flx_raw = lap[1, 0, 0] - lap[0, 0, 0]
        flx = 0.0 if flx_raw * (inp[1, 0, 0] - inp[0, 0, 0]) > 0.0 else flx_raw
        fly_raw = lap[0, 1, 0] - lap[0, 0, 0]
        fly = 0.0 if fly_raw * (inp[0, 1, 0] - inp[0, 0, 0]) > 0.0 else fly_raw
        out = inp[0, 0, 0] - coeff[0, 0, 0] * (flx[0, 0, 0] - flx[-1, 0, 0] + fly[0, 0, 0] - fly[0, -1, 0])


def tridiag(a: F, b: F, c: F, d: F, x: F):
    with computation(FORWARD):
        with interval(0, 1):
            cp = c / b
            dp = d / b
        with interval(1, None):
            m = b - a * cp[0, 0, -1]
            cp = c / m
            dp = (d - a * dp[0, 0, -1]) / m
    with computation(BACKWARD):
        with interval(-1, None):
            x = dp
        with interval(0, -1):
            x = dp - cp * x[0, 0, 1]


def vadv(w: F, u: F, out: F):
    with computation(PARALLEL), interval(0, 1):
        out = u[0, 0, 1] - u
    with computation(PARALLEL), interval(1, -1):
        out = (u[0, 0, 1] - u[0, 0, -1]) * w * 0.5
    with computation(PARALLEL), interval(-1, None):
        out = u - u[0, 0, -1]


def ifelse(a: F, b: F, out: F, *, alpha: float):
    with computation(PARALLEL), interval(...):
        if a > 0.6:
            out = a * b
        elif a < 0.2 and b > 0.5:
            out = b + alpha
        else:
            tmp = a + b
            out = tmp * 2.0 - abs(a - b)


@gtscript.function
def lap_fn(phi):
    return -4.0 * phi + phi[1, 0, 0] + phi[-1, 0, 0] + phi[0, 1, 0] + phi[0, -1, 0]


@gtscript.function
def pair(x, y):
    return max(x, y), min(x, y)


def functions(inp: F, out: F, other: F):
    with computation(PARALLEL), interval(...):
        tmp = lap_fn(inp)
        out = lap_fn(tmp)
        hi, lo = pair(inp, tmp)
        other = sqrt(abs(hi - lo)) + exp(-inp * inp) + floor(inp * 3.0) + mod(inp * 7.0, 2.0)


def externals(inp: F, out: F):
    from __externals__ import ALPHA, USE_ABS
    with computation(PARALLEL), interval(...):
        if USE_ABS:
            out = abs(inp - 0.5) * ALPHA
        else:
            out = inp * ALPHA


def lowdim(a: F, s2: Field[IJ, DTYPE], s1: Field[K, DTYPE], out: F):
    with computation(PARALLEL), interval(...):
        out = a * s2 + s1 + s2[1, 0] * 0.5


def datadim(a: Field[IJK, (DTYPE, (3,))], out: F):
    with computation(PARALLEL), interval(...):
        out = a[0, 0, 0][0] + 2.0 * a[1, 0, 0][1] - a[0, -1, 0][2]


def solver_offsets(a: F, b: F, out: F, *, w: float):
    with computation(FORWARD):
        with interval(0, 1):
            t = a[1, 0, 0] * w
            out = t - b
        with interval(1, None):
            t = t[0, 0, -1] * 0.5 + a[0, -1, 0] - b[0, 0, -1]
            out = t + out[0, 0, -1] * 0.25
    with computation(BACKWARD):
        with interval(0, -1):
            out = out + 0.125 * out[0, 0, 1]


def solver_halo(a: F, out: F):
    with computation(FORWARD):
        with interval(0, 1):
            out = a
        with interval(1, None):
            u = a * 2.0
            out = out[0, 0, -1] * 0.5 + u[1, 0, 0] - u[0, -1, 0]


def forward_sum(a: F, out: F, *, scale: float):
    with computation(FORWARD):
        with interval(0, 1):
            out = a * scale
        with interval(1, None):
            out = out[0, 0, -1] + a * scale
'''

HEADERS = {
    "gb": "from gridbuf import gtscript\nfrom gridbuf.gtscript import *\n",
    "gt": "from gt4py.cartesian import gtscript\nfrom gt4py.cartesian.gtscript import *\n",
}


@pytest.fixture(scope="session")
def defs(tmp_path_factory):
    """Modules with DEFS for (library, dtype): the same source, only the import differs."""
    tmp = str(tmp_path_factory.mktemp("gtscript_defs"))
    out = {}
    for lib, dt in itertools.product(["gb", "gt"] if HAVE_GT4PY else ["gb"], ["float64", "float32"]):
        out[lib, dt] = load_source(tmp, f"_gtscript_defs_{lib}_{dt}", HEADERS[lib] + DEFS.format(dtype=f"np.{dt}"))
    return out


_GT_CACHE: dict = {}


def gt_stencil(defs, name, dtype, externals=None):
    key = (name, dtype, repr(sorted((externals or {}).items())))
    if key not in _GT_CACHE:
        from gt4py.cartesian import gtscript as gts

        _GT_CACHE[key] = gts.stencil(backend="numpy", definition=getattr(defs["gt", dtype], name), externals=externals or {})
    return _GT_CACHE[key]


def make(shape, dtype, layout, rng, lo=0.0, hi=1.0):
    """A random array of `shape` in `layout` ("C", "F" or a gridbuf preset)."""
    a = rng.uniform(lo, hi, size=shape).astype(dtype)
    if layout == "C":
        return np.ascontiguousarray(a)
    if layout == "F":
        return np.asfortranarray(a)
    out = gb.empty(shape, dtype, backend=layout)
    np.asarray(out)[...] = a
    return out


LAYOUTS = ["C", "F", "gt:cpu_ifirst", "gt:cpu_kfirst"]

# name: (field shapes given the domain (ni, nj, nk), origin, scalars, externals, value ranges)
CASES = {
    "copy_off": (lambda n: [(n[0] + 2, n[1] + 2, n[2])] * 2, (1, 1, 0), {}, None),
    "laplacian": (lambda n: [(n[0] + 2, n[1] + 2, n[2])] * 2, (1, 1, 0), {}, None),
    "hdiff": (lambda n: [(n[0] + 4, n[1] + 4, n[2])] * 3, (2, 2, 0), {}, None),
    "tridiag": (lambda n: [n] * 5, (0, 0, 0), {}, None),
    "vadv": (lambda n: [n] * 3, (0, 0, 0), {}, None),
    "ifelse": (lambda n: [n] * 3, (0, 0, 0), {"alpha": 0.25}, None),
    "functions": (lambda n: [(n[0] + 4, n[1] + 4, n[2])] * 3, (2, 2, 0), {}, None),
    "externals": (lambda n: [n] * 2, (0, 0, 0), {}, {"ALPHA": 3.5, "USE_ABS": True}),
    "forward_sum": (lambda n: [n] * 2, (0, 0, 0), {"scale": 0.5}, None),
}


def run_both(defs, name, dtype, layout, domain, rng, *, externals=None, scalars=None, shapes=None, origin=None):
    spec = CASES.get(name)
    shapes = shapes or spec[0](domain)
    origin = origin if origin is not None else spec[1]
    scalars = scalars if scalars is not None else spec[2]
    externals = externals if externals is not None else spec[3]
    arrays = [make(s, dtype, layout if len(s) == 3 else "C", rng, 0.1, 1.0) for s in shapes]
    if name == "tridiag":  # diagonally dominant
        np.asarray(arrays[1])[...] += 4.0
    ref = [np.array(np.asarray(a)) for a in arrays]
    gb_st = gtscript.stencil(backend="numpy", definition=getattr(defs["gb", dtype], name), externals=externals)
    gb_st(*arrays, origin=origin, domain=domain, **scalars)
    if not HAVE_GT4PY:
        pytest.skip("gt4py is not installed")
    gt_st = gt_stencil(defs, name, dtype, externals)
    gt_st(*ref, origin=origin, domain=domain, **scalars)
    tol = 1e-12 if dtype == "float64" else 2e-5
    for a, r in zip(arrays, ref):
        np.testing.assert_allclose(np.asarray(a), r, rtol=tol, atol=tol)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_gt4py_numpy(defs, name, dtype, layout):
    run_both(defs, name, dtype, layout, (13, 9, 7), np.random.default_rng(1))


# The JIT against the interpreter alone (no compiled statements) and against the block schedule
# (no sweeps): gridbuf reads GRIDBUF_GTSCRIPT_JIT and GRIDBUF_GTSCRIPT_SWEEP when a stencil is
# defined, so each definition is made once per mode.
_GB_CACHE: dict = {}
MODES = {"jit": {}, "interpreter": {"GRIDBUF_GTSCRIPT_JIT": "0"}, "blocks": {"GRIDBUF_GTSCRIPT_SWEEP": "0"}}


def gb_stencil(defs, name, dtype, externals, mode: str):
    key = (name, dtype, repr(sorted((externals or {}).items())), mode)
    if key not in _GB_CACHE:
        saved = {k: os.environ.get(k) for k in ("GRIDBUF_GTSCRIPT_JIT", "GRIDBUF_GTSCRIPT_SWEEP")}
        os.environ.update(MODES[mode])
        try:
            _GB_CACHE[key] = gtscript.stencil(backend="numpy", definition=getattr(defs["gb", dtype], name), externals=externals)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    return _GB_CACHE[key]


def assert_same_bits(a, b, what):
    """Bit for bit, except that any NaN equals any NaN."""
    a, b = np.asarray(a), np.asarray(b)
    bits = np.dtype(f"u{a.dtype.itemsize}")
    same = (a.view(bits) == b.view(bits)) | (np.isnan(a) & np.isnan(b))
    assert same.all(), f"{what}: {np.count_nonzero(~same)} points differ, first at {np.argwhere(~same)[0]}"


def with_specials(arrays, rng):
    """Copies of `arrays` with a few NaN, infinities, zeros of both signs and negatives."""
    out = []
    for a in arrays:
        c = np.array(np.asarray(a))
        flat = c.reshape(-1)
        idx = rng.choice(flat.size, size=max(1, flat.size // 10), replace=False)
        flat[idx] = rng.choice(np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, -0.5, -3.0, 1e30], dtype=c.dtype), size=idx.size)
        out.append(c)
    return out


JIT_CASES = ["copy_off", "laplacian", "hdiff", "tridiag", "vadv", "ifelse", "functions", "forward_sum"]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", JIT_CASES)
@pytest.mark.parametrize("domain", [(13, 9, 7), (70, 66, 9)])
def test_jit_matches_interpreter_and_gt4py(defs, name, dtype, layout, domain):
    """JIT, interpreter and the block schedule give the same bits, on the standard inputs
    (where all also match GT4Py's numpy backend) and on inputs with NaN, infinities and signed
    zeros. The larger domain runs in several tiles on two or more threads."""
    rng = np.random.default_rng(5)
    shapes, origin, scalars, externals = CASES[name]
    arrays = [make(s, dtype, layout, rng, 0.1, 1.0) for s in shapes(domain)]
    if name == "tridiag":  # diagonally dominant
        np.asarray(arrays[1])[...] += 4.0
    special = with_specials(arrays, rng)
    for inputs, vs_gt4py in [(arrays, True), (special, False)]:
        results = {}
        for mode in MODES:
            args = [make(a.shape, dtype, layout, rng) for a in inputs]
            for arg, a in zip(args, inputs):
                np.asarray(arg)[...] = a
            with np.errstate(all="ignore"):
                gb_stencil(defs, name, dtype, externals, mode)(*args, origin=origin, domain=domain, **scalars)
            results[mode] = args
        for mode in ("interpreter", "blocks"):
            for n, (x, y) in enumerate(zip(results["jit"], results[mode])):
                assert_same_bits(x, y, f"{name} argument {n}, jit against {mode}")
        if vs_gt4py and HAVE_GT4PY:
            ref = [np.array(np.asarray(a)) for a in inputs]
            gt_stencil(defs, name, dtype, externals)(*ref, origin=origin, domain=domain, **scalars)
            tol = 1e-12 if dtype == "float64" else 2e-5
            for a, r in zip(results["jit"], ref):
                np.testing.assert_allclose(np.asarray(a), r, rtol=tol, atol=tol)


@pytest.mark.parametrize("domain", [(1, 1, 1), (1, 1, 3), (70, 3, 5), (5, 37, 2), (600, 2, 3)])
@pytest.mark.parametrize("name", ["hdiff", "tridiag", "vadv", "functions"])
def test_odd_domains(defs, name, domain):
    if name in ("vadv", "tridiag") and domain[2] < (3 if name == "vadv" else 2):
        # Too few levels for the intervals: GT4Py and gridbuf both reject the call.
        with pytest.raises(GridbufValueError, match="levels"):
            run_both(defs, name, "float64", "gt:cpu_ifirst", domain, np.random.default_rng(2))
        return
    run_both(defs, name, "float64", "gt:cpu_ifirst", domain, np.random.default_rng(2))


def test_large_domain_parallel(defs):
    run_both(defs, "hdiff", "float64", "C", (70, 66, 20), np.random.default_rng(3))
    run_both(defs, "tridiag", "float64", "gt:cpu_ifirst", (70, 66, 20), np.random.default_rng(3))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_lowdim_and_datadim(defs, layout):
    rng = np.random.default_rng(4)
    n = (11, 8, 6)
    run_both(defs, "lowdim", "float64", layout, n, rng, shapes=[(12, 8, 6), (12, 8), (6,), (12, 8, 6)], origin=(0, 0, 0), scalars={}, externals={})
    shapes = [(13, 10, 6, 3), (13, 10, 6)]
    arrays = [rng.uniform(size=s) for s in shapes]
    ref = [a.copy() for a in arrays]
    gtscript.stencil(backend="numpy", definition=defs["gb", "float64"].datadim)(*arrays, origin=(0, 1, 0), domain=(12, 9, 6))
    if HAVE_GT4PY:
        gt_stencil(defs, "datadim", "float64")(*ref, origin=(0, 1, 0), domain=(12, 9, 6))
        for a, r in zip(arrays, ref):
            np.testing.assert_allclose(a, r, rtol=1e-12)


def test_externals_variants(defs):
    rng = np.random.default_rng(5)
    run_both(defs, "externals", "float64", "C", (6, 5, 4), rng, externals={"ALPHA": -2.0, "USE_ABS": False})


def test_default_domain_and_origin_dict(defs):
    rng = np.random.default_rng(6)
    inp = rng.uniform(size=(12, 12, 5))
    out = np.zeros((12, 12, 5))
    st_ = gtscript.stencil("numpy", defs["gb", "float64"].laplacian)
    st_(inp, out, origin={"_all_": (1, 1, 0), "out": (1, 1, 0)})
    expect = -4 * inp[1:-1, 1:-1] + inp[:-2, 1:-1] + inp[2:, 1:-1] + inp[1:-1, :-2] + inp[1:-1, 2:]
    np.testing.assert_allclose(out[1:11, 1:11], expect, rtol=1e-12)
    assert (out[0] == 0).all() and (out[11] == 0).all()
    # Keyword fields and positional scalars.
    a, b, o = (rng.uniform(size=(4, 4, 3)) for _ in range(3))
    o2 = o.copy()
    st2 = gtscript.stencil(backend="numpy", definition=defs["gb", "float64"].ifelse)
    st2(a, b, o, alpha=1.0)
    st2(out=o2, a=a, b=b, alpha=1.0)
    np.testing.assert_array_equal(o, o2)


def test_gb_field_and_allocation(defs):
    rng = np.random.default_rng(7)
    inp = gb.zeros((10, 10, 4), np.float64, backend="gt:cpu_ifirst")
    np.asarray(inp)[...] = rng.uniform(size=(10, 10, 4))
    out = gb.zeros((10, 10, 4), np.float64, backend="gt:cpu_ifirst")
    st_ = gtscript.stencil(backend="gt:cpu_ifirst", definition=defs["gb", "float64"].laplacian)
    st_(inp, out, origin=(1, 1, 0), domain=(8, 8, 4))
    i = np.asarray(inp)
    np.testing.assert_allclose(np.asarray(out)[1:-1, 1:-1], -4 * i[1:-1, 1:-1] + i[:-2, 1:-1] + i[2:, 1:-1] + i[1:-1, :-2] + i[1:-1, 2:])


# ------------------------------------------------------------------ random expression trees
LEAF_FIELDS = ("a", "b")


@st.composite
def trees(draw, depth=0):
    if depth >= 3 or draw(st.integers(0, 3)) == 0:
        if draw(st.booleans()):
            return ("read", draw(st.sampled_from(LEAF_FIELDS)), draw(st.integers(-2, 2)), draw(st.integers(-2, 2)), draw(st.integers(-1, 1)))
        return ("const", draw(st.sampled_from([0.5, 2.0, -1.25, 3.0])))
    kind = draw(st.sampled_from(["add", "sub", "mul", "min", "max", "abs", "neg", "sel", "div"]))
    if kind in ("abs", "neg"):
        return (kind, draw(trees(depth=depth + 1)))
    if kind == "sel":
        return (kind, draw(trees(depth=depth + 1)), draw(trees(depth=depth + 1)), draw(trees(depth=depth + 1)))
    return (kind, draw(trees(depth=depth + 1)), draw(trees(depth=depth + 1)))


def to_src(t) -> str:
    k = t[0]
    if k == "read":
        return f"{t[1]}[{t[2]}, {t[3]}, {t[4]}]"
    if k == "const":
        return repr(t[1])
    if k == "abs":
        return f"abs({to_src(t[1])})"
    if k == "neg":
        return f"(-{to_src(t[1])})"
    if k in ("min", "max"):
        return f"{k}({to_src(t[1])}, {to_src(t[2])})"
    if k == "sel":
        return f"({to_src(t[2])} if {to_src(t[1])} > 0.3 else {to_src(t[3])})"
    if k == "div":
        return f"({to_src(t[1])} / (abs({to_src(t[2])}) + 1.0))"
    op = {"add": "+", "sub": "-", "mul": "*"}[k]
    return f"({to_src(t[1])} {op} {to_src(t[2])})"


def ref_eval(t, arrs, n, h):
    """NumPy value of a tree over the domain (n points per axis) of arrays with halo h."""
    k = t[0]
    if k == "read":
        a = arrs[t[1]]
        return a[h + t[2] : h + t[2] + n[0], h + t[3] : h + t[3] + n[1], 1 + t[4] : 1 + t[4] + n[2]]
    if k == "const":
        return np.full(n, t[1])
    args = [ref_eval(x, arrs, n, h) for x in t[1:]]
    if k == "abs":
        return np.abs(args[0])
    if k == "neg":
        return -args[0]
    if k == "min":
        return np.minimum(*args)
    if k == "max":
        return np.maximum(*args)
    if k == "sel":
        return np.where(args[0] > 0.3, args[1], args[2])
    if k == "div":
        return args[0] / (np.abs(args[1]) + 1.0)
    return {"add": np.add, "sub": np.subtract, "mul": np.multiply}[k](*args)


_COUNTER = itertools.count()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tree=trees(), tmp=st.booleans(), layout=st.sampled_from(LAYOUTS), seed=st.integers(0, 2**16))
def test_random_expression_trees(tmp_path_factory, tree, tmp, layout, seed):
    body = f"        t = {to_src(tree)}\n        out = t[0, 0, 0] * 1.0\n" if tmp else f"        out = {to_src(tree)}\n"
    src = HEADERS["gb"] + textwrap.dedent(
        """
        def rnd(a: Field[float], b: Field[float], out: Field[float]):
            with computation(PARALLEL), interval(...):
        """
    ) + body
    mod = load_source(str(tmp_path_factory.getbasetemp()), f"_gtscript_rnd_{next(_COUNTER)}", src)
    rng = np.random.default_rng(seed)
    n, h = (9, 7, 4), 2
    shape = (n[0] + 2 * h, n[1] + 2 * h, n[2] + 2)
    arrs = {x: make(shape, np.float64, layout, rng, -1.0, 1.0) for x in LEAF_FIELDS}
    out = make(shape, np.float64, layout, rng)
    before = np.array(np.asarray(out))
    gtscript.stencil(backend="numpy", definition=mod.rnd)(arrs["a"], arrs["b"], out, origin=(h, h, 1), domain=n)
    expect = before.copy()
    expect[h : h + n[0], h : h + n[1], 1 : 1 + n[2]] = ref_eval(tree, {k: np.asarray(v) for k, v in arrs.items()}, n, h)
    np.testing.assert_allclose(np.asarray(out), expect, rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------ bad input
def define(tmp_path, body: str, params: str = "inp: Field[float], out: Field[float]", extra: str = ""):
    src = HEADERS["gb"] + extra + f"\ndef bad({params}):\n" + textwrap.indent(textwrap.dedent(body), "    ")
    mod = load_source(str(tmp_path), f"_gtscript_bad_{next(_COUNTER)}", src)
    return mod.bad


@pytest.mark.parametrize(
    "body, words",
    [
        ("with computation(PARALLEL), interval(...):\n    for i in range(3):\n        out = inp\n", ["for loop", "line"]),
        ("with computation(PARALLEL), interval(...):\n    out[1, 0, 0] = inp\n", ["offset", "'out'"]),
        ("with computation(PARALLEL), interval(...):\n    out = inp[0.5, 0, 0]\n", ["offset"]),
        ("with computation(PARALLEL), interval(...):\n    out = foo(inp)\n", ["foo"]),
        ("with computation(PARALLEL), interval(...):\n    out = [inp]\n", ["list"]),
        ("out = inp\n", ["outside"]),
        ("with computation(SIDEWAYS), interval(...):\n    out = inp\n", ["SIDEWAYS"]),
        ("with computation(PARALLEL), interval(...):\n    out = inp\n    x = out[1, 0, 0]\n    inp2 = x\n", ["out", "offset"]),
        ("with computation(PARALLEL), interval(...):\n    out = inp + 1.0\n    out = out[0, 0, 1]\n", ["PARALLEL"]),
        ("with computation(PARALLEL), interval(...):\n    while True:\n        out = inp\n", ["while True", "never ends"]),
        ("with computation(PARALLEL), interval(...):\n    out = inp.T\n", ["attribute"]),
        ("from __externals__ import MISSING\nwith computation(PARALLEL), interval(...):\n    out = inp * MISSING\n", ["MISSING"]),
    ],
)
def test_unsupported_constructs_rejected_at_definition(tmp_path, body, words):
    fn = define(tmp_path, body)
    with pytest.raises(GridbufValueError) as err:
        gtscript.stencil(backend="numpy", definition=fn)
    msg = str(err.value)
    for w in words:
        assert w in msg, msg
    assert "line" in msg


def test_bad_calls_write_nothing(tmp_path):
    fn = define(tmp_path, "with computation(PARALLEL), interval(...):\n    out = inp[1, 0, 0] + inp[-1, 0, 0] + inp[0, 0, 1]\n")
    st_ = gtscript.stencil(backend="numpy", definition=fn)
    inp = np.ones((8, 8, 4))
    out = np.zeros((8, 8, 4))
    # Reads beyond the halo along I (origin 0 with extent 1), and beyond K at the top.
    with pytest.raises(GridbufValueError, match="inp"):
        st_(inp, out, origin=(0, 0, 0), domain=(6, 6, 3))
    with pytest.raises(GridbufValueError, match="inp"):
        st_(inp, out, origin=(1, 0, 0), domain=(6, 6, 4))
    assert (out == 0).all()
    # Wrong argument types.
    with pytest.raises(GridbufTypeError):
        st_(inp, 3.0, origin=(1, 0, 0), domain=(6, 6, 3))
    with pytest.raises(GridbufTypeError):
        st_(inp, "out", origin=(1, 0, 0), domain=(6, 6, 3))
    with pytest.raises(GridbufTypeError, match="misses the arguments 'out'"):
        st_(inp)
    with pytest.raises(GridbufTypeError, match="has no parameter 'nonsense'"):
        st_(inp, out, nonsense=1)
    with pytest.raises(GridbufTypeError, match="has no parameter 'nonsense'"):
        st_(inp=inp, nonsense=1, out=out)
    with pytest.raises(GridbufTypeError, match="got parameter 'inp' twice"):
        st_(inp, out, inp=inp)
    # The first bad keyword in the call's order is the one named.
    with pytest.raises(GridbufTypeError, match="got parameter 'out' twice"):
        st_(inp, out, out=out, nonsense=1)
    with pytest.raises(GridbufTypeError, match="takes 2 arguments"):
        st_(inp, out, out)
    with pytest.raises(GridbufError):
        st_(inp.astype(np.float32), out, origin=(1, 0, 0), domain=(6, 6, 3))
    ro = np.zeros((8, 8, 4))
    ro.flags.writeable = False
    with pytest.raises(GridbufValueError):
        st_(inp, ro, origin=(1, 0, 0), domain=(6, 6, 3))
    assert (out == 0).all()
    st_(inp, out, origin=(1, 0, 0), domain=(6, 6, 3))
    assert (out[1:7, :6, :3] == 3).all() and out.sum() == 3 * 6 * 6 * 3
    # Keywords alone, in any order, and positions with keywords bind alike.
    for call in (lambda o: st_(out=o, inp=inp, origin=(1, 0, 0), domain=(6, 6, 3)), lambda o: st_(inp, out=o, origin=(1, 0, 0), domain=(6, 6, 3))):
        o = np.zeros((8, 8, 4))
        call(o)
        np.testing.assert_array_equal(o, out)


def test_scalar_type_and_missing(tmp_path):
    fn = define(tmp_path, "with computation(PARALLEL), interval(...):\n    out = inp * alpha\n", "inp: Field[float], out: Field[float], alpha: float")
    st_ = gtscript.stencil(backend="numpy", definition=fn)
    inp, out = np.ones((3, 3, 3)), np.zeros((3, 3, 3))
    with pytest.raises(GridbufTypeError, match="alpha"):
        st_(inp, out, alpha=np.ones(3))
    with pytest.raises(GridbufTypeError, match="alpha"):
        st_(inp, out)
    st_(inp, out, 2.5)
    assert (out == 2.5).all()


def test_unsigned_and_float16_fields_rejected(tmp_path):
    for dtype in ("np.uint8", "np.uint32", "np.float16"):
        fn = define(tmp_path, "with computation(PARALLEL), interval(...):\n    out = inp\n", f"inp: Field[{dtype}], out: Field[float]", "import numpy as np\n")
        with pytest.raises(GridbufValueError, match=r"dtype (uint|float16).*GT4Py"):
            gtscript.stencil(backend="numpy", definition=fn)
    # Mixed dtypes and integer fields are GT4Py's language (see test_gtscript_conformance.py).
    fn = define(tmp_path, "with computation(PARALLEL), interval(...):\n    out = inp\n", "inp: Field[np.int32], out: Field[float]", "import numpy as np\n")
    gtscript.stencil(backend="numpy", definition=fn)


@pytest.mark.parametrize(
    "body, words",
    [
        ("with computation(PARALLEL), interval(...):\n    out = inp // 2.0\n", ["floor division", "inp // 2.0", "line"]),
        ("with computation(PARALLEL), interval(...):\n    out = 1.0 if 0.0 < inp < 1.0 else 0.0\n", ["chained comparison", "line"]),
        ("with computation(PARALLEL), interval(...):\n    tmp: Field[np.float32] = inp\n    out = tmp\n", ["'tmp'", "IJ only", "line"]),
    ],
)
def test_constructs_gt4py_lacks_are_refused(tmp_path, body, words):
    # GT4Py has no `//`, cannot build a chained comparison and refuses Field[...] temporaries
    # with a K axis: nothing to compare with, so gridbuf refuses them too.
    fn = define(tmp_path, body, extra="import numpy as np\n")
    with pytest.raises(GridbufValueError) as e:
        gtscript.stencil(backend="numpy", definition=fn)
    for w in words:
        assert w in str(e.value), (w, str(e.value))


def test_import_does_not_pull_gt4py():
    import subprocess

    code = "import sys; from gridbuf import gtscript; assert 'gt4py' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_field_with_permuted_dims(defs):
    rng = np.random.default_rng(8)
    data = rng.uniform(size=(5, 10, 9))  # K, J, I
    inp = gb.Field(data, dims="KJI", origin=(0, 1, 1))
    out_data = np.zeros((5, 10, 9))
    out = gb.Field(out_data, dims="KJI", origin=(0, 1, 1))
    gtscript.stencil(backend="numpy", definition=defs["gb", "float64"].laplacian)(inp, out, domain=(7, 8, 5))
    i = data.transpose(2, 1, 0)
    expect = -4 * i[1:-1, 1:-1] + i[:-2, 1:-1] + i[2:, 1:-1] + i[1:-1, :-2] + i[1:-1, 2:]
    np.testing.assert_allclose(out_data.transpose(2, 1, 0)[1:-1, 1:-1], expect, rtol=1e-12)
    assert (out_data[:, 0] == 0).all() and (out_data[:, :, 0] == 0).all()


# ------------------------------------------------------------------ vertical solvers
def thomas_reference(a, b, c, d):
    """The tridiagonal solve of `tridiag` in NumPy, level by level (independent of gridbuf)."""
    cp, dp, x = (np.empty_like(a) for _ in range(3))
    cp[..., 0] = c[..., 0] / b[..., 0]
    dp[..., 0] = d[..., 0] / b[..., 0]
    for k in range(1, a.shape[2]):
        m = b[..., k] - a[..., k] * cp[..., k - 1]
        cp[..., k] = c[..., k] / m
        dp[..., k] = (d[..., k] - a[..., k] * dp[..., k - 1]) / m
    x[..., -1] = dp[..., -1]
    for k in range(a.shape[2] - 2, -1, -1):
        x[..., k] = dp[..., k] - cp[..., k] * x[..., k + 1]
    return x


SOLVER_LAYOUTS = ["gt:cpu_ifirst", "gt:cpu_kfirst", "C", "F"]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("domain", [(19, 13, 11), (37, 5, 3), (1, 1, 2)])
def test_vertical_solver_same_bits_on_every_layout(defs, dtype, domain):
    """A FORWARD/BACKWARD solver gives the same bits on every layout (rows along I on
    gt:cpu_ifirst and F, columns walked along K on gt:cpu_kfirst and C) and matches a NumPy
    solve, over domains that are no multiple of a tile or of a column group, at a nonzero origin
    in larger arrays; the interpreter gives the same bits too."""
    rng = np.random.default_rng(11)
    origin = (2, 1, 1)
    shape = (domain[0] + 4, domain[1] + 3, domain[2] + 2)
    data = [rng.uniform(0.1, 1.0, size=shape).astype(dtype) for _ in range(5)]
    data[1] += 4.0  # diagonally dominant
    outs = {}
    for mode in ("jit", "interpreter"):
        st_ = gb_stencil(defs, "tridiag", dtype, None, mode)
        for layout in SOLVER_LAYOUTS:
            args = [make(shape, dtype, layout, rng) for _ in range(5)]
            for arg, d in zip(args, data):
                np.asarray(arg)[...] = d
            before = np.array(np.asarray(args[4]))
            st_(*args, origin=origin, domain=domain)
            out = np.asarray(args[4])
            box = tuple(slice(o, o + n) for o, n in zip(origin, domain))
            rest = np.ones(shape, bool)
            rest[box] = False
            np.testing.assert_array_equal(out[rest], before[rest])  # nothing outside the domain
            outs[mode, layout] = out
    first = outs["jit", SOLVER_LAYOUTS[0]]
    for key, out in outs.items():
        assert_same_bits(out, first, f"tridiag {dtype} {key}")
    box = tuple(slice(o, o + n) for o, n in zip(origin, domain))
    want = thomas_reference(*(d[box].astype(np.float64) for d in data[:4]))
    tol = 1e-12 if dtype == "float64" else 1e-5
    np.testing.assert_allclose(first[box], want, rtol=tol, atol=tol)


@pytest.mark.parametrize("name", ["solver_offsets", "solver_halo"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_vertical_solvers_with_offsets_on_every_layout(defs, name, dtype):
    """Solvers that read inputs at horizontal offsets and carry values both ways along K
    (`solver_offsets`: its sections walk columns on K-unit layouts) or compute a temporary
    beyond the core in a FORWARD section (`solver_halo`: its section cannot walk columns and
    keeps the level-by-level schedule): the same bits on every layout, also with inputs and the
    output in different layouts, and GT4Py's numpy backend's results."""
    rng = np.random.default_rng(12)
    domain, origin = (21, 10, 9), (1, 1, 0)
    shape = (domain[0] + 2, domain[1] + 2, domain[2])
    n_in = 2 if name == "solver_offsets" else 1
    data = [rng.uniform(0.1, 1.0, size=shape).astype(dtype) for _ in range(n_in + 1)]
    scalars = {"w": 1.5} if name == "solver_offsets" else {}
    results = {}
    for layouts in [[lay] * (n_in + 1) for lay in SOLVER_LAYOUTS] + [["F"] * n_in + ["gt:cpu_kfirst"]]:
        args = [make(shape, dtype, lay, rng) for lay in layouts]
        for arg, d in zip(args, data):
            np.asarray(arg)[...] = d
        gb_stencil(defs, name, dtype, None, "jit")(*args, origin=origin, domain=domain, **scalars)
        results[tuple(layouts)] = np.asarray(args[-1])
    first = next(iter(results.values()))
    for key, out in results.items():
        assert_same_bits(out, first, f"{name} {dtype} {key}")
    if HAVE_GT4PY:
        ref = [np.array(d) for d in data]
        gt_stencil(defs, name, dtype)(*ref, origin=origin, domain=domain, **scalars)
        tol = 1e-12 if dtype == "float64" else 2e-5
        np.testing.assert_allclose(first, ref[-1], rtol=tol, atol=tol)


def test_a_function_redefined_is_read_from_its_new_source(tmp_path, monkeypatch):
    """Parsed sources are kept per code object for the whole process: a helper module edited
    and reloaded (a notebook cell run again) gives new code objects, read from the new lines;
    a stencil defined again from the same objects reads the kept ones."""
    import importlib

    module = tmp_path / "gb_redefined_helpers.py"
    body = textwrap.dedent(
        """
        from gridbuf import gtscript
        from gridbuf.gtscript import PARALLEL, Field, computation, interval

        @gtscript.function
        def scale(a):
            return a * {factor}

        def defn(a: Field[float], out: Field[float]):
            with computation(PARALLEL), interval(...):
                out = scale(a)
        """
    )
    module.write_text(body.format(factor="2.0"))
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module("gb_redefined_helpers")
    a = np.arange(24.0).reshape(2, 3, 4)
    for factor in ("2.0", "30.0"):
        if factor != "2.0":
            module.write_text(body.format(factor=factor))
            mod = importlib.reload(mod)
        for _ in range(2):
            out = np.zeros_like(a)
            gtscript.stencil(backend="numpy", definition=mod.defn)(a, out)
            assert np.array_equal(out, a * float(factor)), factor


def test_functions_inside_blocks_are_read_from_their_own_lines(tmp_path, monkeypatch):
    """A helper and a definition nested in a class and in a function (indented lines), one of
    them with a docstring whose lines are indented less than its `def`, are each read from their
    own lines; the per-file index keeps spans, not syntax trees (a model's every source file
    would otherwise stay in memory as tree nodes that each garbage collection walks)."""
    import ast
    import importlib

    from gridbuf.gtscript import _values

    module = tmp_path / "gb_nested_helpers.py"
    module.write_text(textwrap.dedent(
        """
        from gridbuf import gtscript
        from gridbuf.gtscript import PARALLEL, Field, computation, interval

        class Holder:
            @gtscript.function
            def scale(a):
                '''A docstring whose second line is
        at the file's left edge.'''
                return a * 3.0

            @staticmethod
            def defn(a: Field[float], out: Field[float]):
                with computation(PARALLEL), interval(...):
                    out = Holder.scale(a) + 1.0

        def make():
            @gtscript.function
            def shift(a):
                return a - 2.0

            def defn(a: Field[float], out: Field[float]):
                with computation(PARALLEL), interval(...):
                    out = shift(a) * 0.5

            return defn
        """
    ))
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module("gb_nested_helpers")
    a = np.arange(24.0).reshape(2, 3, 4)
    for defn, want in ((mod.Holder.defn, a * 3.0 + 1.0), (mod.make(), (a - 2.0) * 0.5)):
        out = np.zeros_like(a)
        gtscript.stencil(backend="numpy", definition=defn)(a, out)
        np.testing.assert_array_equal(out, want)
    lines, spans = _values._MODULES[str(module)]
    assert sorted(name for name, _ in spans.values()) == ["defn", "defn", "make", "scale", "shift"]
    assert not any(isinstance(x, ast.AST) for span in spans.values() for x in span)


def test_functions_equal_as_code_objects_are_each_read_from_their_own_file(tmp_path, monkeypatch):
    """Two definitions in different files that differ only in a local's annotation compile to
    code objects that compare equal (annotations of locals are not kept in the code): each is
    lowered from its own file (a cache keyed by code equality lowered the second from the
    first's source)."""
    import importlib

    body = textwrap.dedent(
        """
        import numpy as np
        from gridbuf.gtscript import PARALLEL, Field, computation, interval

        def defn(a: Field[np.float64], out: Field[np.float64]):
            with computation(PARALLEL), interval(...):
                t: {dtype} = a
                out = t
        """
    )
    (tmp_path / "gb_code_equal_ok.py").write_text(body.format(dtype="np.float64"))
    (tmp_path / "gb_code_equal_bad.py").write_text(body.format(dtype="np.float16"))
    monkeypatch.syspath_prepend(str(tmp_path))
    ok = importlib.import_module("gb_code_equal_ok")
    bad = importlib.import_module("gb_code_equal_bad")
    assert ok.defn.__code__ == bad.defn.__code__  # the premise, on this Python
    a = np.arange(24.0).reshape(2, 3, 4)
    for _ in range(2):
        out = np.zeros_like(a)
        gtscript.stencil(backend="numpy", definition=ok.defn)(a, out)
        assert np.array_equal(out, a)
        with pytest.raises(GridbufError, match="float16"):
            gtscript.stencil(backend="numpy", definition=bad.defn)
