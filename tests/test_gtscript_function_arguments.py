"""A ``gtscript.function``'s parameters are passed by value, as in GT4Py: a function that
assigns to a parameter changes its own copy, never the caller's variable. When the caller was
itself a function whose local had become a temporary (its type changed, it was assigned in a
`while` loop), the callee's assignment used to write that temporary in place, so the caller read
the callee's value afterwards (a silent wrong answer)."""

import numpy as np
import pytest

from gridbuf import gtscript

from _gtscript_oracle import assert_same, gt4py_reference, load_source, run_in_layout

LAYOUTS = ["C", "F", "gt:cpu_ifirst", "gt:cpu_kfirst"]

_BODY = """

@gtscript.function
def clobber(p):
    p = 0.0
    return 1.0


@gtscript.function
def halve(p):
    p = p * 0.5
    return p


@gtscript.function
def retyped(a):
    a = 1  # an int into a float parameter: the local becomes a temporary
    r = clobber(a)
    return a + r


@gtscript.function
def retyped_if(a):
    if a > 0.0:
        a = 1
    r = clobber(a)
    return a + r


@gtscript.function
def looped(a):
    n = 0.0
    while n < 2.0:  # a local assigned in a loop is a temporary
        a = a + 1.0
        n = n + 1.0
    h = halve(a)
    return a + h


def by_value(x: Field[float], y0: Field[float], y1: Field[float], y2: Field[float]):
    with computation(PARALLEL), interval(...):
        y0 = retyped(x)
        y1 = retyped_if(x)
        y2 = looped(x)
"""
_GRIDBUF_SOURCE = "from gridbuf import gtscript\nfrom gridbuf.gtscript import PARALLEL, Field, computation, interval\n" + _BODY
_GT4PY_SOURCE = "from gt4py.cartesian import gtscript\nfrom gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval\n" + _BODY

SHAPE = (5, 4, 6)


def _inputs(seed):
    rng = np.random.default_rng(seed)
    return {"x": rng.uniform(-1, 1, SHAPE), **{f"y{k}": np.zeros(SHAPE) for k in range(3)}}


@pytest.mark.parametrize("seed", [0, 1])
def test_an_assigned_parameter_leaves_the_callers_value_alone(tmp_path, seed):
    mod = load_source(str(tmp_path), f"gridbuf_function_arguments_{seed}", _GRIDBUF_SOURCE)
    st = gtscript.stencil(backend="gt:cpu_ifirst", definition=mod.by_value)
    inputs = _inputs(seed)
    out = run_in_layout(st, inputs, "C", origin=(0, 0, 0), domain=SHAPE)
    x = inputs["x"]
    np.testing.assert_array_equal(out["y0"], 2.0)  # a (1) + clobber's 1, not its 0 + 1
    np.testing.assert_array_equal(out["y1"], np.where(x > 0.0, 2.0, x + 1.0))
    a = x + 1.0 + 1.0
    np.testing.assert_array_equal(out["y2"], a + a * 0.5)  # not halve's a * 0.5 twice


@pytest.mark.parametrize("layout", LAYOUTS)
def test_matches_gt4py_numpy_on_every_layout(tmp_path, layout):
    pytest.importorskip("gt4py.cartesian.gtscript")
    from gt4py.cartesian import gtscript as gt

    key = layout.replace(":", "_")
    ours = load_source(str(tmp_path), f"gridbuf_function_arguments_{key}", _GRIDBUF_SOURCE)
    theirs = load_source(str(tmp_path), f"gt4py_function_arguments_{key}", _GT4PY_SOURCE)
    inputs = _inputs(3)
    kw = {"origin": (0, 0, 0), "domain": SHAPE}
    want = gt4py_reference(gt.stencil(backend="numpy", definition=theirs.by_value), inputs, **kw)
    got = run_in_layout(gtscript.stencil(backend="gt:cpu_ifirst", definition=ours.by_value), inputs, layout, **kw)
    assert_same(got, want, f"parameters passed by value on {layout}", inputs)
