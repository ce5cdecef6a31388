"""gridbuf against GT4Py's own ``gt4py.storage``: same strides, layouts and values on every CPU
preset GT4Py registers, for dims in canonical order (a subsequence of I, J, K, then data dims).

Skipped where gt4py is not installed.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

gt_storage = pytest.importorskip("gt4py.storage")
from gt4py.storage.cartesian import layout_registry  # noqa: E402

import gridbuf as gb  # noqa: E402
from conftest import DTYPES, assert_valid_allocation  # noqa: E402

GT4PY_CPU_PRESETS = ["numpy", "debug", "gt:cpu_kfirst", "gt:cpu_ifirst", "dace:cpu", "dace:cpu_kfirst", "dace:cpu_KJI"]
#: Subsequences of I, J, K (the empty one included).
CARTESIAN = ["".join(c) for n in range(4) for c in itertools.combinations("IJK", n)]


@st.composite
def gt4py_cases(draw, min_extent=1):
    """(preset, shape, dtype, aligned_index, dims) that GT4Py accepts."""
    backend = draw(st.sampled_from(GT4PY_CPU_PRESETS))
    cart = draw(st.sampled_from(CARTESIAN))
    n_data = draw(st.integers(max(0, 1 - len(cart)), 5 - len(cart)))
    dims = tuple(cart) + tuple(str(d) for d in range(n_data))
    max_extent = {1: 30, 2: 12, 3: 8, 4: 5, 5: 4}[len(dims)]
    shape = tuple(draw(st.integers(min_extent, max_extent)) for _ in dims)
    aligned_index = tuple(draw(st.integers(0, n - 1)) for n in shape)
    dtype = draw(st.sampled_from(DTYPES))
    return backend, shape, dtype, aligned_index, dims


def _gt(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kw)


def test_gt4py_cpu_presets_are_gridbuf_presets():
    gt_cpu = {name for name, info in layout_registry.REGISTRY.items() if info["device"] == "cpu"}
    assert set(GT4PY_CPU_PRESETS) <= gt_cpu
    assert gt_cpu <= set(gb.presets())
    for name, info in layout_registry.REGISTRY.items():
        assert name in gb.presets(), name
        assert gb.preset(name).device == info["device"], name


@given(gt4py_cases())
def test_zeros_strides_match_gt4py(case):
    backend, shape, dtype, aligned_index, dims = case
    expected = _gt(gt_storage.zeros, shape, dtype, backend=backend, aligned_index=aligned_index, dimensions=dims)
    a = gb.zeros(shape, dtype, backend=backend, aligned_index=aligned_index, dimensions=dims)
    assert a.shape == expected.shape
    assert a.dtype == expected.dtype
    assert a.strides == expected.strides, (backend, dims)
    assert gb.plan(shape, dtype, backend=backend, aligned_index=aligned_index, dimensions=dims).strides == expected.strides
    # The aliases give the same.
    assert gb.empty(shape, dtype, defaults=backend, aligned_index=aligned_index, dims="".join(dims)).strides == expected.strides
    assert_valid_allocation(a)
    assert not np.any(a)
    # GT4Py's own layout check accepts gridbuf's array.
    assert layout_registry.from_name(backend)["is_optimal_layout"](a, dims)


@given(gt4py_cases(), st.integers(0, 5))
def test_ones_full_empty_match_gt4py(case, fill):
    backend, shape, dtype, aligned_index, dims = case
    kw = dict(backend=backend, aligned_index=aligned_index, dimensions=dims)
    for gt_fn, gb_fn, args in [
        (gt_storage.ones, gb.ones, ()),
        (gt_storage.full, gb.full, (fill,)),
        (gt_storage.empty, gb.empty, ()),
    ]:
        expected = _gt(gt_fn, shape, *args, dtype=dtype, **kw)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            a = gb_fn(shape, *args, dtype=dtype, **kw)
        assert a.strides == expected.strides, gt_fn.__name__
        assert a.dtype == expected.dtype
        if gt_fn is not gt_storage.empty:
            np.testing.assert_array_equal(a, expected)


@given(gt4py_cases(), st.data())
def test_from_array_matches_gt4py(case, data):
    backend, shape, dtype, aligned_index, dims = case
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        src = (rng.standard_normal(shape) * 20).astype(dtype)
    if data.draw(st.booleans()):
        src = np.asfortranarray(src)
    kw = dict(backend=backend, aligned_index=aligned_index, dimensions=dims)
    expected = _gt(gt_storage.from_array, src, dtype=dtype, **kw)
    a = gb.from_array(src, dtype, **kw)
    assert a.strides == expected.strides
    np.testing.assert_array_equal(a, expected)


@given(gt4py_cases(), st.sampled_from([np.float64, np.int32, np.float32]), st.lists(st.integers(1, 3), min_size=1, max_size=2))
def test_subarray_dtype_matches_gt4py(case, base, sub):
    backend, shape, _, aligned_index, dims = case
    if len(shape) + len(sub) > 5:
        shape, aligned_index, dims = shape[:2], aligned_index[:2], dims[:2]
    dtype = np.dtype((base, tuple(sub)))
    expected = _gt(gt_storage.zeros, shape, dtype, backend=backend, aligned_index=aligned_index, dimensions=dims)
    a = gb.zeros(shape, dtype, backend=backend, aligned_index=aligned_index, dimensions=dims)
    assert a.shape == expected.shape
    assert a.dtype == expected.dtype
    assert a.strides == expected.strides


@given(st.sampled_from(sorted(layout_registry.REGISTRY)), st.sampled_from(CARTESIAN), st.integers(0, 3))
def test_layout_maps_match_gt4py(backend, cart, n_data):
    dims = tuple(cart) + tuple(str(d) for d in range(n_data))
    expected = tuple(layout_registry.from_name(backend)["layout_map"](dims))
    assert gb.preset(backend).layout_map(dims) == expected
    assert gb.layout_map(dims, gb.preset(backend).base_layout) == expected
    assert gb.plan((2,) * len(dims), backend=backend, dimensions=dims).layout == expected


def test_gt4py_rejects_what_gridbuf_allows():
    # Documented differences: zero-size axes are fine in gridbuf.
    with pytest.raises(ValueError):
        _gt(gt_storage.zeros, (3, 0), np.float64, backend="numpy")
    assert gb.zeros((3, 0), backend="numpy").shape == (3, 0)


#: Bad calls of the allocation functions, written once for both libraries (``m`` is the module).
BAD_CALLS = {
    "unknown backend (zeros)": lambda m: m.zeros((3, 4), np.float64, backend="non_existing_backend"),
    "unknown backend (empty)": lambda m: m.empty((3, 4), np.float64, backend="non_existing_backend"),
    "unknown backend (ones)": lambda m: m.ones((3, 4), np.float64, backend="non_existing_backend"),
    "unknown backend (full)": lambda m: m.full((3, 4), 1.0, np.float64, backend="non_existing_backend"),
    "unknown backend (from_array)": lambda m: m.from_array(np.zeros((3, 4)), np.float64, backend="nope"),
    "negative extent": lambda m: m.zeros((3, -1), np.float64, backend="numpy"),
    "aligned_index too long": lambda m: m.zeros((3, 4), np.float64, backend="numpy", aligned_index=(1, 1, 1)),
    "negative aligned_index": lambda m: m.zeros((3, 4), np.float64, backend="numpy", aligned_index=(-1, 0)),
    "too many dimensions": lambda m: m.zeros((3, 4), np.float64, backend="numpy", dimensions=("I", "J", "K")),
    "unknown dimension": lambda m: m.zeros((3, 4), np.float64, backend="numpy", dimensions=("I", "X")),
    "float extent": lambda m: m.zeros((3, 4.5), np.float64, backend="numpy"),
    "bad dtype": lambda m: m.zeros((3, 4), "notadtype", backend="numpy"),
}


@pytest.mark.parametrize("case", sorted(BAD_CALLS))
def test_errors_are_instances_of_what_gt4py_raises(case):
    """Code that catches GT4Py's exception keeps catching gridbuf's: for each bad call, the class
    the installed GT4Py raises is a base of the class gridbuf raises, and gridbuf's is a GridbufError."""
    call = BAD_CALLS[case]
    with pytest.raises(Exception) as gt_info:
        _gt(call, gt_storage)
    with pytest.raises(gb.GridbufError) as gb_info:
        call(gb)
    assert isinstance(gb_info.value, gt_info.type), (case, gt_info.type, type(gb_info.value))


def test_unknown_backend_matches_gt4py_test():
    # The check GT4Py's own storage tests make, and the one gridbuf adds: it is still a ValueError.
    with pytest.raises(RuntimeError, match="backend"):
        gb.zeros((3, 4), np.float64, backend="non_existing_backend")
    with pytest.raises(gb.UnknownPresetError) as info:
        gb.zeros((3, 4), np.float64, backend="non_existing_backend")
    assert isinstance(info.value, ValueError)
    assert "non_existing_backend" in str(info.value)
