"""Constants the lowering knows inside a gtscript function's `if` branch.

- ``if x == c:`` (``x`` a local of integer or float type the branch does not assign, ``c`` a
  compile-time constant ``x`` can equal exactly, not a float zero): ``x`` is the literal ``c``
  of ``x``'s type inside the branch.
- A local assigned a constant expression in a branch reads as that constant until the branch
  ends (an assignment in a nested branch or loop reads its temporary again).

pace's saturation tables (``qs_table2_fn``: ``if i == 1599: tem0 = tem_lower(1598); ... exp(...)``)
are written this way: the C compiler folds what is computed from the constants, as it does GT4Py's
code, instead of keeping ``exp`` and ``log`` calls it cannot prove constant. Every value must stay
what GT4Py's numpy backend computes: checked here against NumPy written out point by point, and
against GT4Py when it is installed.
"""

import numpy as np
import pytest

from gridbuf import gtscript

from _gtscript_oracle import assert_same, gt4py_reference, load_source, run_in_layout

LAYOUTS = ["C", "F", "gt:cpu_ifirst", "gt:cpu_kfirst"]

HEADERS = {
    "gb": "import numpy as np\nfrom gridbuf import gtscript\nfrom gridbuf.gtscript import PARALLEL, Field, computation, interval, exp, log\n",
    "gt": "import numpy as np\nfrom gt4py.cartesian import gtscript\nfrom gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval, exp, log\n",
}

SOURCE = '''
N = 10


@gtscript.function
def table(i):
    t = 100.0 + 0.1 * i
    value = exp(t / 50.0)
    if i == 7:
        t = 100.0 + 0.1 * (i - 3)
        value = 0.5 * (value + exp(t / 50.0))
        t = 250.0
        value = value + log(t)
    if i == 9:
        t = 100.0 + 0.1 * i
        if i < 5:
            value = -1.0
        else:
            value = value + exp(t / 50.0)
    return value


@gtscript.function
def at_end(i, x):
    out = x
    if i == N - 1:
        out = table(i - 1)
    return out


@gtscript.function
def zero_test(x):
    y = 1.0
    if x == 0.0:
        y = 1.0 / x
    return y


@gtscript.function
def reassigned_in_branch(i):
    r = 0.0
    if i == 3:
        i = i + 1
        r = i * 2.0
    return r


@gtscript.function
def nested_reassign(i, x):
    t = x
    r = t
    if i == 2:
        t = 5.0
        if x > 0.5:
            t = 7.0
        r = t * 3.0
    return r + t


@gtscript.function
def loop_in_branch(i, x):
    t = x
    n = 0
    if i == 1:
        t = 1.0
        while n < 3:
            t = t + 1.0
            n = n + 1
        t = t * 2.0
    return t


def defn(fi: Field[np.int64], fx: Field[np.float64], fz: Field[np.float64],
         o1: Field[np.float64], o2: Field[np.float64], o3: Field[np.float64],
         o4: Field[np.float64], o5: Field[np.float64], o6: Field[np.float64]):
    with computation(PARALLEL), interval(...):
        o1 = table(fi)
        o2 = table(fx)
        o3 = at_end(fi, fx) + at_end(fx, fx)
        o4 = zero_test(fz)
        o5 = reassigned_in_branch(fi) + nested_reassign(fi, fz)
        o6 = loop_in_branch(fi, fx)
'''

SHAPE = (4, 5, 6)


def _inputs(seed):
    rng = np.random.default_rng(seed)
    fi = rng.integers(0, 11, SHAPE).astype(np.int64)
    fz = rng.choice(np.array([0.0, -0.0, 0.25, 0.75, -2.0]), SHAPE)
    return {"fi": fi, "fx": fi.astype(np.float64), "fz": fz, **{f"o{k}": np.zeros(SHAPE) for k in range(1, 7)}}


def _table(i):
    i = np.asarray(i, dtype=np.float64)
    value = np.exp((100.0 + 0.1 * i) / 50.0)
    value = np.where(i == 7, 0.5 * (value + np.exp((100.0 + 0.1 * (i - 3)) / 50.0)) + np.log(250.0), value)
    return np.where(i == 9, value + np.exp((100.0 + 0.1 * i) / 50.0), value)


def _expected(inp):
    fi, fx, fz = inp["fi"], inp["fx"], inp["fz"]
    with np.errstate(divide="ignore"):
        zero = np.where(fz == 0.0, 1.0 / np.where(fz == 0.0, fz, 1.0), 1.0)
    t = np.where(fi == 2, np.where(fz > 0.5, 7.0, 5.0), fz)
    nested = np.where(fi == 2, t * 3.0, fz) + t
    return {
        "o1": _table(fi),
        "o2": _table(fx),
        "o3": 2 * np.where(fi == 9, _table(8), fx),
        "o4": zero,
        "o5": np.where(fi == 3, 8.0, 0.0) + nested,
        "o6": np.where(fi == 1, 8.0, fx),
    }


@pytest.fixture(scope="module")
def gb_module(tmp_path_factory):
    return load_source(str(tmp_path_factory.mktemp("branch_constants")), "gb_branch_constants", HEADERS["gb"] + SOURCE)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("backend", ["numpy", "gt:cpu_ifirst", "gt:cpu_kfirst"])
def test_values_are_numpys_point_by_point(gb_module, backend, seed):
    inp = _inputs(seed)
    st = gtscript.stencil(backend=backend, definition=gb_module.defn)
    got = {k: v.copy() for k, v in inp.items()}
    st(**got, origin=(0, 0, 0), domain=SHAPE)
    for name, want in _expected(inp).items():
        # The exps and logs of constants may be folded by the C compiler (correctly rounded)
        # where the C library computes them at run time: a few ulps at most.
        np.testing.assert_allclose(got[name], want, rtol=4e-16, atol=0, err_msg=f"{name} on {backend}")
    # The sign of a zero survives: -0.0 == 0.0 does not make x the literal 0.0.
    negative_zero = (inp["fz"] == 0.0) & np.signbit(inp["fz"])
    assert negative_zero.any() and np.all(got["o4"][negative_zero] == -np.inf)


def test_the_branch_reads_the_literal(gb_module):
    """What the rules are for: inside `if i == 7:` the table's argument is the literal 7, and
    `table(i - 1)` under `if i == N - 1:` computes from literals only (no read of `fi` in its
    exponent)."""
    ir = gtscript.stencil(backend="numpy", definition=gb_module.defn).ir
    assert "sub lit int64 7 lit int64 3" in ir  # i - 3 with i == 7
    assert "sub lit int64 9 lit int64 1" in ir  # table(i - 1) with i == N - 1


@pytest.mark.parametrize("layout", LAYOUTS)
def test_matches_gt4py_numpy_on_every_layout(gb_module, tmp_path, layout):
    pytest.importorskip("gt4py.cartesian.gtscript")
    from gt4py.cartesian import gtscript as gt

    gt_module = load_source(str(tmp_path), f"gt_branch_constants_{layout.replace(':', '_')}", HEADERS["gt"] + SOURCE)
    inp = _inputs(2)
    kw = {"origin": (0, 0, 0), "domain": SHAPE}
    with np.errstate(divide="ignore"):
        want = gt4py_reference(gt.stencil(backend="numpy", definition=gt_module.defn), inp, **kw)
    got = run_in_layout(gtscript.stencil(backend="gt:cpu_kfirst", definition=gb_module.defn), inp, layout, **kw)
    for name in ("o1", "o2", "o3"):  # NumPy's own exp and log may differ from the C library's in the last bit
        np.testing.assert_allclose(got[name], want[name], rtol=4e-16, atol=0, err_msg=f"{name} on {layout}")
        del got[name], want[name]
    assert_same(got, want, f"branch constants on {layout}", inp)
