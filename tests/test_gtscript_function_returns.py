"""A tuple assignment from a ``gtscript.function`` call: every returned value is computed before
any target is written, as GT4Py does (pace's ``neg_adj3.fix_neg_water`` assigns seven fields
from one call; storing them one by one made a later value read an earlier target's new value).
"""

import numpy as np
import pytest

import gridbuf as gb
from gridbuf import gtscript
from gridbuf.gtscript import PARALLEL, Field, computation, interval

from _gtscript_oracle import assert_same, gt4py_reference, load_source, run_in_layout

LAYOUTS = ["C", "F", "gt:cpu_ifirst", "gt:cpu_kfirst"]


@gtscript.function
def _fix(a, b):
    s = a + b
    if b < 0.0:
        b = 0.0
        a = s
    return b, a


@gtscript.function
def _swap_sum(a, b):
    s = a + b
    b = 0.0
    a = s
    return b, a


def _with_if(a: Field[float], b: Field[float]):
    with computation(PARALLEL), interval(...):
        b, a = _fix(a, b)


def _without_if(a: Field[float], b: Field[float]):
    with computation(PARALLEL), interval(...):
        b, a = _swap_sum(a, b)


def _run(definition, a0, b0):
    st = gtscript.stencil(backend="gt:cpu_ifirst", definition=definition)
    a = gb.from_array(a0.copy(), backend="gt:cpu_ifirst")
    b = gb.from_array(b0.copy(), backend="gt:cpu_ifirst")
    st(a, b, origin=(0, 0, 0), domain=a.shape)
    return np.asarray(a), np.asarray(b)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_returned_values_are_computed_before_the_targets_are_written(seed):
    rng = np.random.default_rng(seed)
    a0, b0 = rng.uniform(-1, 1, (4, 3, 5)), rng.uniform(-1, 1, (4, 3, 5))
    a, b = _run(_with_if, a0, b0)
    negative = b0 < 0.0
    np.testing.assert_array_equal(a, np.where(negative, a0 + b0, a0))  # the sum of the old values
    np.testing.assert_array_equal(b, np.where(negative, 0.0, b0))
    a, b = _run(_without_if, a0, b0)
    np.testing.assert_array_equal(a, a0 + b0)
    np.testing.assert_array_equal(b, 0.0)


_GT4PY_SOURCE = """
from gt4py.cartesian import gtscript
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval


@gtscript.function
def fix(a, b):
    s = a + b
    if b < 0.0:
        b = 0.0
        a = s
    return b, a


def with_if(a: Field[float], b: Field[float]):
    with computation(PARALLEL), interval(...):
        b, a = fix(a, b)
"""


def test_as_gt4py_numpy_computes_it(tmp_path):
    pytest.importorskip("gt4py.cartesian.gtscript")
    import gt4py.storage as gts
    from gt4py.cartesian import gtscript as gt

    a0 = np.array([0.6, 0.6]).reshape(2, 1, 1)
    b0 = np.array([-0.1, 0.2]).reshape(2, 1, 1)
    a, b = _run(_with_if, a0, b0)
    mod = load_source(str(tmp_path), "gt4py_function_returns", _GT4PY_SOURCE)
    st = gt.stencil(backend="numpy", definition=mod.with_if)
    ga = gts.from_array(a0.copy(), backend="numpy")
    gbb = gts.from_array(b0.copy(), backend="numpy")
    st(ga, gbb)
    np.testing.assert_array_equal(a, np.asarray(ga))
    np.testing.assert_array_equal(b, np.asarray(gbb))
    np.testing.assert_array_equal(a.ravel(), [0.5, 0.6])


@pytest.mark.parametrize("layout", LAYOUTS)
def test_matches_gt4py_numpy_on_every_layout(tmp_path, layout):
    pytest.importorskip("gt4py.cartesian.gtscript")
    from gt4py.cartesian import gtscript as gt

    mod = load_source(str(tmp_path), f"gt4py_function_returns_{layout.replace(':', '_')}", _GT4PY_SOURCE)
    rng = np.random.default_rng(3)
    inputs = {"a": rng.uniform(-1, 1, (5, 4, 6)), "b": rng.uniform(-1, 1, (5, 4, 6))}
    kw = {"origin": (0, 0, 0), "domain": (5, 4, 6)}
    want = gt4py_reference(gt.stencil(backend="numpy", definition=mod.with_if), inputs, **kw)
    got = run_in_layout(gtscript.stencil(backend="gt:cpu_ifirst", definition=_with_if), inputs, layout, **kw)
    assert_same(got, want, f"b, a = fix(a, b) on {layout}", inputs)

