"""Constructs of GT4Py's gtscript met in production code (pace) and GT4Py's own tests, run by
``gridbuf.gtscript`` exactly as written against ``gt4py.cartesian.gtscript`` (GT4Py's own objects,
no rebinding) and compared bit for bit with GT4Py's numpy backend on four layouts:

- offsets by axis name: ``a[I + 1, K - 1]``, ``a[J - 1]``, ``s[I - 1, J]`` on a 2-D field;
- a ``gtscript.function``'s local read at a horizontal offset (pace's ``xppm``/``yppm``
  ``smt5[-1, 0, 0]``);
- a PARALLEL computation writing a field in one interval and reading it at a K offset in
  another (pace's ``nh_p_grad.set_k0_and_calc_wk``), and in a one-level interval;
- GT4Py's own math functions and ``I[0] + 1`` externals;
- literals typed by ``dtypes={float: np.float32, int: np.int32}``;
- temporaries declared before the computations (``tmp: Field[(np.float32, (2, 2))] = 0``),
  with data dims, read by component and whole;
- data-dim indices computed at run time by integer scalar parameters (``v[0, 0, 0][index]``),
  read and written, checked at every call;
- ``K`` as a value (``if K == 2``, ``float(K + off)``): the level counted from the domain's
  first, in every iteration order and interval.

And the refusals: reading in a PARALLEL interval at a K offset what that interval writes (a
race, refused by GT4Py too), a function local read at a K offset, axes out of order.
"""

import os

import numpy as np
import pytest
from _scratch import scratch_dir

pytest.importorskip("gt4py.cartesian")
os.environ.setdefault("GT_CACHE_ROOT", scratch_dir("gridbuf_test_gt4py_language_"))

from _gtscript_oracle import assert_same, gt4py_reference, load_source, run_in_layout  # noqa: E402
from gt4py.cartesian import gtscript as gts  # noqa: E402

from gridbuf import gtscript  # noqa: E402
from gridbuf.errors import GridbufValueError  # noqa: E402

LAYOUTS = ["C", "F", "gt:cpu_ifirst", "gt:cpu_kfirst"]
_DIR = scratch_dir("gridbuf_gt4py_language_")
HEADER = (
    "import numpy as np\n"
    "from gt4py.cartesian import gtscript\n"
    "from gt4py.cartesian.gtscript import PARALLEL, FORWARD, BACKWARD, Field, IJ, I, J, K, computation, interval, horizontal, region, sqrt\n"
    "F64 = Field[np.float64]\n"
)

CASES = {
    "axis-name offsets": (
        """
def d(a: F64, s: Field[IJ, np.float64], out: F64, o2: F64):
    with computation(PARALLEL), interval(0, -1):
        out = a[I + 1, K + 1] - a[J - 1] + s[I - 1, J] + a[I, J, K]
        tmp = a * 2.0
        o2 = tmp[J + 1] + tmp[I - 1, J - 1]
""",
        {"s": "IJ"},
        {},
    ),
    "function local at a horizontal offset": (
        """
@gtscript.function
def mask_fn(bl, b0, br):
    smt5 = (3.0 * abs(b0)) < abs(bl - br)
    if smt5[-1, 0, 0] or smt5[0, 0, 0]:
        m = 1.0
    else:
        m = 0.0
    return m

@gtscript.function
def fx(c, br, b0, bl):
    if c > 0.0:
        ret = (1.0 - c) * (br[-1, 0, 0] - c * b0[-1, 0, 0])
    else:
        ret = (1.0 + c) * (bl + c * b0)
    return ret

def d(q: F64, al: F64, c: F64, out: F64):
    with computation(PARALLEL), interval(...):
        bl = al[0, 0, 0] - q[0, 0, 0]
        br = al[1, 0, 0] - q[0, 0, 0]
        b0 = bl + br
        m = mask_fn(bl, b0, br)
        out = fx(c, br, b0, bl) * m + sqrt(abs(q))
""",
        {},
        {},
    ),
    "PARALLEL: written in one interval, read at a K offset in another": (
        """
def d(pp: F64, pk3: F64, wk: F64, lo: F64, *, top_value: float):
    with computation(PARALLEL):
        with interval(0, 1):
            pp[0, 0, 0] = 0.0
            pk3[0, 0, 0] = top_value
            wk = pk3[0, 0, 1] - pk3[0, 0, 0]
        with interval(1, None):
            wk = pk3[0, 0, 1] - pk3[0, 0, 0]
    with computation(PARALLEL):
        with interval(0, 1):
            lo = wk * 2.0
        with interval(1, None):
            lo = wk[0, 0, -1] + lo
""",
        {},
        {"top_value": 3.0},
    ),
    "function locals assigned in one branch, read after the if where assigned": (
        """
@gtscript.function
def fspeed(no_fall, q):
    if no_fall == 1:
        v = 0.5
        r1 = 0.0
    else:
        if q < 0.3:
            v = 0.1
        else:
            v = q * 2.0
    return v, r1

@gtscript.function
def rh_update(t, q):
    if t > 0.5:
        rh = q / t
        if rh < 0.4:
            t = q
    if ((t > 0.5) and (rh >= 0.4)) or (t <= 0.5):
        t = t + 1.0
    return t

def d(nf: Field[np.int64], q: F64, t: F64, out: F64, r: F64, o2: F64):
    with computation(PARALLEL), interval(...):
        out, r = fspeed(nf, q)
        r = r if nf == 1 else 7.0
        o2 = rh_update(t, q)
""",
        {},
        {},
    ),
    "regions with GT4Py's axis positions as externals": (
        """
def d(q: F64, out: F64):
    from __externals__ import i_start, j_end
    with computation(PARALLEL), interval(...):
        out = q
        with horizontal(region[i_start, :], region[:, j_end - 1]):
            out = q[1, 0, 0] - q[-1, 0, 0]
""",
        {},
        {},
    ),
    "temporaries with data dims declared before the computations": (
        """
def d(a: F64, v: Field[(np.float64, (2,))], out: F64, ov: Field[(np.float64, (2,))]):
    tmp: Field[(np.float64, (2, 2))] = 0
    vt: Field[(np.float32, (2,))] = 0.25
    with computation(PARALLEL):
        with interval(0, -1):
            tmp[0, 0, 0][0, 0] = a[0, 0, 0]
            tmp[0, 0, 0][1, 0] = a[0, 0, 1]
            out = tmp[0, 0, 0][0, 0] + tmp[0, 0, 0][1, 0] + tmp[0, 0, 0][1, 1]
        with interval(-1, None):
            out = tmp[0, 0, 0][0, 1]
    with computation(PARALLEL), interval(...):
        vt[0, 0, 0][0] = a * 3.0
        ov = vt * v
""",
        {},
        {},
    ),
    "a data-dim index computed at run time (an integer scalar parameter)": (
        """
def d(v: Field[(np.float64, (3,))], m: Field[(np.float64, (2, 3))], a: F64, out: F64, w: Field[(np.float64, (3,))], *, index: int, row: int):
    with computation(PARALLEL), interval(...):
        out = v[0, 0, 0][index] * 2.0 + v[1, 0, 0][index] + m[0, 0, 0][row, index] + m[0, 0, 0][1, index]
        w[0, 0, 0][index] = a + out
        if a > 0.0:
            w[0, 0, 0][row] = a
""",
        {},
        {"index": 2, "row": 1},
    ),
    "the K index as a value": (
        """
def d(a: F64, off: Field[K, np.int32], out: F64, o2: F64):
    with computation(PARALLEL), interval(...):
        if K == 2:
            out = 20.25
        else:
            out = float(K + off) * a
    with computation(PARALLEL), interval(1, -1):
        o2 = K * 2 + a[0, 0, 1]
""",
        {"off": "K"},
        {},
    ),
}
EXTERNALS = {"regions with GT4Py's axis positions as externals": "i_start=I[0] + 1, j_end=J[-1]"}


def _externals(name, mod):
    spec = EXTERNALS.get(name)
    if spec is None:
        return {}
    return eval(f"dict({spec})", vars(mod))  # noqa: S307 - the test's own literal


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_gt4py_numpy(name, layout):
    src, axes, scalars = CASES[name]
    mod = load_source(_DIR, f"lang_{abs(hash(name))}", HEADER + src)
    externals = _externals(name, mod)
    gt = gts.stencil(backend="numpy", definition=mod.d, externals=externals)
    gb = gtscript.stencil(definition=mod.d, externals=externals)
    rng = np.random.default_rng(3)
    shape = (9, 8, 6)
    inputs = {}
    for pname, info in gt.field_info.items():
        s = tuple(n for n, ax in zip(shape, "IJK") if ax in info.axes) + tuple(info.data_dims)
        inputs[pname] = rng.integers(0, 2, s).astype(info.dtype) if info.dtype.kind == "i" else rng.uniform(-1.0, 1.0, s)
    origin, domain = (2, 2, 0), (5, 4, 5)
    ref = gt4py_reference(gt, inputs, origin=origin, domain=domain, scalars=scalars)
    got = run_in_layout(gb, inputs, layout, axes, origin=origin, domain=domain, scalars=scalars)
    assert_same(got, ref, f"{name} on {layout}", inputs)


def test_float32_literals_by_type_keyed_dtypes():
    mod = load_source(_DIR, "lang_literals", HEADER + "def d(a: F64, b: F64, c: Field[np.float32]):\n    with computation(PARALLEL), interval(...):\n        b = a + 0.1\n        c = c * 1.1 + 3\n")
    dtypes = {float: np.float32, int: np.int32}
    gt = gts.stencil(backend="numpy", definition=mod.d, dtypes=dtypes, rebuild=True)
    gb = gtscript.stencil(definition=mod.d, dtypes=dtypes)
    rng = np.random.default_rng(0)
    inputs = {"a": rng.uniform(size=(3, 3, 2)), "b": np.zeros((3, 3, 2)), "c": rng.uniform(size=(3, 3, 2)).astype(np.float32)}
    ref = gt4py_reference(gt, inputs, origin=(0, 0, 0), domain=(3, 3, 2))
    got = run_in_layout(gb, inputs, "C", origin=(0, 0, 0), domain=(3, 3, 2))
    assert_same(got, ref, "type-keyed literal dtypes", inputs)
    np.testing.assert_array_equal(got["b"], inputs["a"] + np.float64(np.float32(0.1)))
    # And literal_float_precision=32 is the same rule.
    gb32 = gtscript.stencil(definition=mod.d, literal_float_precision=32, literal_int_precision=32)
    got32 = run_in_layout(gb32, inputs, "C", origin=(0, 0, 0), domain=(3, 3, 2))
    assert_same(got32, ref, "literal precisions 32", inputs)


REFUSED = {
    "read at a K offset in the PARALLEL interval that writes it": (
        "def d(a: F64, b: F64):\n    with computation(PARALLEL), interval(0, 2):\n        a = b\n        b = a[0, 0, 1]  # BAD\n",
        "written in this PARALLEL interval",
    ),
    "a function local read at a K offset": (
        "@gtscript.function\ndef f(x):\n    y = x * 2.0\n    return y[0, 0, 1]  # BAD\n\ndef d(a: F64, b: F64):\n    with computation(PARALLEL), interval(...):\n        b = f(a)\n",
        "local read at a K offset",
    ),
    "axes out of order": (
        "def d(a: F64, b: F64):\n    with computation(PARALLEL), interval(...):\n        b = a[J + 1, I]  # BAD\n",
        "out of order",
    ),
    "an axis twice": (
        "def d(a: F64, b: F64):\n    with computation(PARALLEL), interval(...):\n        b = a[I + 1, I]  # BAD\n",
        "twice",
    ),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_naming_the_line_and_gt4py_refuses_too(name):
    src, why = REFUSED[name]
    mod = load_source(_DIR, f"lang_bad_{abs(hash(name))}", HEADER + src)
    line = (HEADER + src).splitlines().index(next(s for s in (HEADER + src).splitlines() if "# BAD" in s)) + 1
    with pytest.raises(GridbufValueError, match=f"line {line}.*{why}"):
        gtscript.stencil(definition=mod.d)
    with pytest.raises(Exception):  # noqa: B017, PT011 - GT4Py raises several kinds
        gts.stencil(backend="numpy", definition=mod.d, rebuild=True)


POWERS = """
def d(a: F64, f: Field[np.float32], o1: F64, o2: F64, o3: F64, o4: Field[np.float32], o5: F64, *, s: float):
    with computation(PARALLEL), interval(...):
        o1 = a ** 0.5
        o2 = a ** -1.0
        o3 = (a * 2.0) ** -1 + a ** 2.0
        o4 = f ** 0.5 + f ** -1.0
        o5 = s ** 0.5 + a
"""


@pytest.mark.parametrize("layout", ["C", "gt:cpu_kfirst"])
def test_numpy_fast_powers(layout):
    """GT4Py's numpy backend computes ``array ** 0.5`` as NumPy's fast path, ``sqrt``, and
    ``array ** -1`` as ``1 / array``; ``pow`` differs from them by an ulp at about one point in
    a thousand, so 40,000 points find a difference with the old rule (pow) for certain."""
    mod = load_source(_DIR, "lang_powers", HEADER + POWERS)
    gt = gts.stencil(backend="numpy", definition=mod.d, rebuild=True)
    gb = gtscript.stencil(definition=mod.d)
    rng = np.random.default_rng(11)
    shape = (50, 40, 20)
    inputs = {"a": rng.uniform(0.0, 1e4, shape), "f": rng.uniform(0.0, 1e4, shape).astype(np.float32)}
    for name in ("o1", "o2", "o3", "o5"):
        inputs[name] = np.zeros(shape)
    inputs["o4"] = np.zeros(shape, np.float32)
    scalars = {"s": 2.0}
    ref = gt4py_reference(gt, inputs, origin=(0, 0, 0), domain=shape, scalars=scalars)
    got = run_in_layout(gb, inputs, layout, origin=(0, 0, 0), domain=shape, scalars=scalars)
    assert_same(got, ref, f"fast powers on {layout}", inputs)
    np.testing.assert_array_equal(got["o1"], np.sqrt(inputs["a"]))


def test_a_local_assigned_in_one_branch_reads_zero_elsewhere():
    """Where no branch assigned a function local, it reads zero (GT4Py's function temporary holds
    uninitialised memory there: zeros where NumPy's allocation is fresh); nested `if`s merge as
    the branches assign."""
    src = """
@gtscript.function
def pick(a, b):
    if a > 0.0:
        if b > 0.0:
            f = 1.0
    else:
        f = 2.0
    return f

def d(a: F64, b: F64, out: F64):
    with computation(PARALLEL), interval(...):
        out = pick(a, b)
"""
    mod = load_source(_DIR, "lang_one_branch_zero", HEADER + src)
    st = gtscript.stencil(definition=mod.d)
    rng = np.random.default_rng(5)
    a, b = rng.uniform(-1, 1, (5, 4, 3)), rng.uniform(-1, 1, (5, 4, 3))
    out = np.full_like(a, 9.0)
    st(a, b, out)
    np.testing.assert_array_equal(out, np.where(a > 0.0, np.where(b > 0.0, 1.0, 0.0), 2.0))


RUN_TIME_INDEX = """
def d(v: Field[(np.float64, (3,))], w: Field[(np.float64, (3,))], *, index: int):
    with computation(PARALLEL), interval(...):
        w[0, 0, 0][index] = v[0, 0, 0][index] + 1.0
"""


@pytest.mark.parametrize("index", [0, 1, 2])
def test_run_time_data_dim_index_matches_numpy_for_every_component(index):
    mod = load_source(_DIR, "lang_rt_index", HEADER + RUN_TIME_INDEX)
    gb = gtscript.stencil(definition=mod.d)
    rng = np.random.default_rng(index)
    v = rng.uniform(size=(4, 3, 2, 3))
    w = rng.uniform(size=(4, 3, 2, 3))
    want = w.copy()
    want[..., index] = v[..., index] + 1.0  # NumPy, the definition's meaning
    gb(v, w, index=index)
    np.testing.assert_array_equal(w, want)


@pytest.mark.parametrize("index", [-1, 3, 100])
def test_run_time_data_dim_index_out_of_range_is_refused_before_anything_is_written(index):
    mod = load_source(_DIR, "lang_rt_index", HEADER + RUN_TIME_INDEX)
    gb = gtscript.stencil(definition=mod.d)
    v = np.ones((4, 3, 2, 3))
    w = np.zeros((4, 3, 2, 3))
    with pytest.raises(GridbufValueError, match=f"scalar parameter 'index'.*\\({index}\\).*from 0 to 2"):
        gb(v, w, index=index)
    assert not w.any()


def test_run_time_data_dim_index_must_be_an_integer_scalar_parameter():
    src = "def d(v: Field[(np.float64, (3,))], i: Field[np.int64], out: F64, *, s: float):\n    with computation(PARALLEL), interval(...):\n        out = v[0, 0, 0][i]  # BAD\n"
    mod = load_source(_DIR, "lang_rt_index_bad", HEADER + src)
    with pytest.raises(GridbufValueError, match="line 7.*integer scalar parameter.*'i' is not one"):
        gtscript.stencil(definition=mod.d)
    src = src.replace("[i]", "[s]")
    mod = load_source(_DIR, "lang_rt_index_bad2", HEADER + src)
    with pytest.raises(GridbufValueError, match="integer scalar parameter.*'s' is not one"):
        gtscript.stencil(definition=mod.d)


@pytest.mark.parametrize(
    ("decl", "why"),
    [
        ("tmp: Field[IJ, np.float64] = 0", "only IJK is currently supported"),
        ("tmp: np.float64 = 0", "a temporary declared there is a Field"),
        ("tmp: Field[(np.float64, (2,))] = a", "initial value a of temporary 'tmp': a number"),
    ],
)
def test_temporary_declared_before_the_computations_refused(decl, why):
    src = f"def d(a: F64, b: F64):\n    {decl}  # BAD\n    with computation(PARALLEL), interval(...):\n        b = a\n"
    mod = load_source(_DIR, f"lang_top_bad_{abs(hash(decl))}", HEADER + src)
    with pytest.raises(GridbufValueError, match=f"line 6.*{why}"):
        gtscript.stencil(definition=mod.d)


def test_temporary_with_data_dims_read_whole_as_a_scalar_is_refused():
    src = "def d(a: F64, b: F64):\n    tmp: Field[(np.float64, (2,))] = 0\n    with computation(PARALLEL), interval(...):\n        b = tmp + a  # BAD\n"
    mod = load_source(_DIR, "lang_top_bad_whole", HEADER + src)
    with pytest.raises(GridbufValueError, match="line 8.*a vector of shape \\(2,\\) to the field .b., which has no data dims"):
        gtscript.stencil(definition=mod.d)


ENUM_SRC = """
import enum

class Order(enum.IntEnum):
    ZERO = 0
    A = 10
    B = 20

def d(out: Field[np.int64], *, order: Order):
    with computation(PARALLEL), interval(0, 1):
        out = 32
        if order < Order.A:
            out = Order.A
    with computation(PARALLEL), interval(1, None):
        out = Order.B + order
"""


def test_int_enum_parameters_and_members_are_integers():
    """GT4Py 1.2's ``@gtscript.enum``: a parameter annotated with an ``IntEnum`` is an integer
    (the literal integer type) and ``Order.A`` is its value."""
    mod = load_source(_DIR, "lang_enum", HEADER + ENUM_SRC)
    gb = gtscript.stencil(definition=mod.d)
    assert gb.scalar_types["order"] == np.dtype(np.int64)
    out = np.zeros((2, 2, 3), dtype=np.int64)
    gb(out, order=mod.Order.ZERO)
    np.testing.assert_array_equal(out[:, :, 0], 10)
    np.testing.assert_array_equal(out[:, :, 1:], 20)
    gb(out, order=mod.Order.B)
    np.testing.assert_array_equal(out[:, :, 0], 32)
    np.testing.assert_array_equal(out[:, :, 1:], 40)
    gb32 = gtscript.stencil(definition=mod.d, literal_int_precision=32)
    assert gb32.scalar_types["order"] == np.dtype(np.int32)


def test_k_index_in_sequential_computations_is_the_level():
    """``K`` in FORWARD and BACKWARD computations (GT4Py's numpy backend fails to broadcast
    there, so the reference is the definition's meaning: the level counted from the domain's
    first), with an origin in K."""
    src = (
        "def d(a: F64, o: F64):\n"
        "    with computation(FORWARD), interval(1, -1):\n"
        "        o = o[0, 0, -1] + K * 2 + a[0, 0, 1]\n"
        "    with computation(BACKWARD), interval(-1, None):\n"
        "        o = K\n"
    )
    mod = load_source(_DIR, "lang_k_sequential", HEADER + src)
    gb = gtscript.stencil(definition=mod.d)
    a = np.random.default_rng(5).uniform(size=(3, 2, 8))
    o = np.zeros_like(a)
    want = o.copy()
    k0, nk = 1, 6  # origin and domain in K
    for k in range(1, nk - 1):
        want[:, :, k0 + k] = want[:, :, k0 + k - 1] + k * 2 + a[:, :, k0 + k + 1]
    want[:, :, k0 + nk - 1] = nk - 1
    gb(a, o, origin=(0, 0, k0), domain=(3, 2, nk))
    np.testing.assert_array_equal(o, want)
