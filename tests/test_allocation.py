"""The allocation API: empty, zeros, ones, full, from_array, the *_like functions, plan and presets.

Properties are checked with hypothesis over dtypes, shapes (0-d and zero-size included), presets,
dims, layouts, alignments, halos and aligned indices; the expected plan is computed independently
in conftest.py from the documented contract.
"""

from __future__ import annotations

import gc
import itertools
import sys
import warnings
import weakref

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import gridbuf as gb
from conftest import (
    ALIGNMENTS,
    ALLOCATORS,
    BUILTIN_ALIGNMENTS,
    BUILTIN_BASE_LAYOUTS,
    BUILTIN_DEVICES,
    CPU_PRESETS,
    DTYPES,
    GPU_PRESETS,
    alloc_cases,
    assert_plan_matches,
    assert_same_bytes,
    assert_valid_allocation,
    owner,
    dims_for,
    dtypes,
    reference_layout,
    shapes,
    stride_order,
)


# ============================================================================================
# plan(): the layout arithmetic, for every preset (GPU presets are only planned).
# ============================================================================================
@given(alloc_cases(presets=CPU_PRESETS + GPU_PRESETS))
def test_plan_follows_the_contract(case):
    shape, dtype, kw, expected = case
    p = gb.plan(shape, dtype, **kw)
    assert_plan_matches(p, expected)
    assert p.dtype == dtype
    # The padded array fits in nbytes, and nbytes is exactly the padded array.
    assert p.nbytes == int(np.prod(p.padded_shape, dtype=object)) * dtype.itemsize
    assert p.byte_offset < p.alignment
    # The offset puts the aligned element on an `alignment` boundary of an aligned base.
    pos = sum(i * s for i, s in zip(p.aligned_index, p.strides))
    assert (p.byte_offset + pos) % p.alignment == 0


@pytest.mark.parametrize(
    "shape, backend, kw, strides",
    [
        ((10, 11, 12), "gt:cpu_ifirst", {}, (8, 80, 880)),
        ((2, 3, 4), "gt:cpu_kfirst", {}, (96, 32, 8)),
        ((2, 3, 4, 5), "gt:cpu_kfirst", {"dimensions": "IJK0"}, (96, 32, 8, 192)),
        ((2, 3, 4), "dace:cpu", {}, (24, 8, 48)),  # J unit stride, K outermost
        ((2, 3, 4), "F", {}, (8, 16, 48)),
        ((2, 3, 4), "C", {}, (96, 32, 8)),
        ((2, 3, 4), None, {}, (96, 32, 8)),
        ((2, 3, 4), "numpy", {"layout": (1, 2, 0)}, (24, 8, 48)),
        ((3, 5), "C", {"alignment": 64}, (64, 8)),
        ((3, 5), "F", {"alignment": 32}, (8, 32)),
        ((10, 11, 12), "gt:gpu", {}, (8, 128, 128 * 11)),
    ],
)
def test_plan_examples(shape, backend, kw, strides):
    p = gb.plan(shape, np.float64, backend=backend, **kw)
    assert p.strides == strides
    if backend not in GPU_PRESETS:
        assert gb.zeros(shape, np.float64, backend=backend, **kw).strides == strides


def test_gpu_plan_pads_rows_to_128_bytes():
    p = gb.plan((10, 11, 12), np.float64, backend="gt:gpu")
    assert p.padded_shape == (16, 11, 12)
    assert p.row_alignment == 128 and p.alignment == 128
    assert p.device == "gpu" and p.backend == "gt:gpu"
    p = gb.plan((10, 11, 12), np.float32, backend="gt:gpu")
    assert p.padded_shape == (32, 11, 12)
    assert p.strides == (4, 128, 128 * 11)


def test_defaults():
    p = gb.plan((4, 5, 6, 2))
    assert p.backend == "C"
    assert p.dtype == np.float64 and p.itemsize == 8
    assert p.layout == (0, 1, 2, 3)
    assert p.dims == ("I", "J", "K", "0")
    assert p.halo == ((0, 0),) * 4
    assert p.aligned_index == (0, 0, 0, 0)
    assert p.row_alignment == 1 and p.alignment == 64
    assert p.device == "cpu"
    for name, f in ALLOCATORS.items():
        a = f((4, 5))
        assert a.dtype == np.float64, name
        assert a.base.plan.backend == "C"
    assert gb.from_array([1.5]).dtype == np.float64


def test_explicit_none_keywords_mean_the_defaults():
    kw = dict(backend=None, aligned_index=None, dimensions=None, layout=None, alignment=None, halo=None)
    assert gb.plan((3, 4), None, **kw).strides == gb.plan((3, 4)).strides
    assert gb.zeros((3, 4), None, **kw).strides == (32, 8)
    # An alias given as None is not given: the other name may be used alongside it.
    assert gb.plan((3, 4), backend=None, defaults="F").strides == (8, 24)
    assert gb.plan((3, 4), dims=None, dimensions="JI", backend="gt:cpu_ifirst").strides == (32, 8)


@given(alloc_cases())
def test_aliases_are_equivalent(case):
    shape, dtype, kw, expected = case
    swapped = {}
    for k, v in kw.items():
        swapped[{"backend": "defaults", "defaults": "backend", "dims": "dimensions", "dimensions": "dims"}.get(k, k)] = v
    assert gb.plan(shape, dtype, **swapped).strides == expected["strides"]
    assert gb.empty(shape, dtype, **swapped).strides == expected["strides"]


# ============================================================================================
# Allocations: memory contract and values.
# ============================================================================================
@pytest.mark.parametrize("kind", sorted(ALLOCATORS))
@given(case=alloc_cases())
def test_allocation_follows_the_plan(kind, case):
    shape, dtype, kw, expected = case
    a = ALLOCATORS[kind](shape, dtype, **kw)
    assert a.dtype == dtype
    assert_valid_allocation(a)
    assert_plan_matches(a.base.plan, expected)
    assert a.base.plan.dtype is None
    if kind == "zeros":
        assert_same_bytes(a, np.zeros(shape, dtype))
    elif kind == "ones":
        assert_same_bytes(a, np.ones(shape, dtype))
    elif kind == "full":
        assert_same_bytes(a, np.full(shape, 3, dtype))
    # Writeable, and every element is its own memory.
    a[...] = np.arange(a.size).reshape(a.shape).astype(dtype) if a.size else 0
    assert_same_bytes(a, np.arange(a.size).reshape(a.shape).astype(dtype))


@given(alloc_cases(), st.data())
def test_full_fills_every_element_with_the_converted_value(case, data):
    shape, dtype, kw, _ = case
    value = data.draw(hnp.from_dtype(dtype) | st.integers(0, 100) | st.booleans(), label="fill_value")
    a = gb.full(shape, value, dtype, **kw)
    assert_valid_allocation(a)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = np.full(shape, value, dtype)
    assert_same_bytes(a, expected)


@pytest.mark.parametrize(
    "value, dtype, expected",
    [
        (3.7, np.int32, 3),
        (-2.9, np.int16, -2),
        (2, np.bool_, True),
        (0.0, np.bool_, False),
        (1 + 2j, np.complex64, 1 + 2j),
        (np.float32(0.1), np.float64, np.float64(np.float32(0.1))),
        (255, np.uint8, 255),
        (1e10, np.float16, np.inf),
        (np.nan, np.float32, np.nan),
        (True, np.float64, 1.0),
    ],
)
@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
def test_full_converts_by_numpy_rules(value, dtype, expected):
    a = gb.full((3, 5), value, dtype, backend="F", alignment=32)
    assert a.dtype == dtype
    assert_same_bytes(a, np.full((3, 5), expected, dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_ones_is_one_for_every_dtype(dtype):
    a = gb.ones((3, 4, 5), dtype, backend="gt:cpu_ifirst", alignment=128)
    assert_same_bytes(a, np.ones((3, 4, 5), dtype))


@pytest.mark.parametrize("dtype", [np.longdouble, np.clongdouble])
def test_extended_precision_dtypes(dtype):
    a = gb.full((5, 3), 1.25, dtype, backend="gt:cpu_ifirst", aligned_index=(1, 1))
    assert_valid_allocation(a)
    assert np.all(a == np.full((5, 3), 1.25, dtype))  # compare values: the padding bytes are undefined


@pytest.mark.parametrize("alignment", [1, 64, 4096])
def test_large_fill_and_zero(alignment):
    # Large enough to take the parallel paths; the padded rows must not disturb the values.
    shape = (257, 33, 31)
    a = gb.full(shape, -1.5, np.float32, backend="gt:cpu_kfirst", alignment=alignment, aligned_index=(1, 2, 3))
    assert_valid_allocation(a)
    assert np.all(a == np.float32(-1.5))
    z = gb.zeros((2100, 1030), np.float64, alignment=alignment)
    assert_valid_allocation(z)
    assert not np.any(z)
    o = gb.ones((1024, 1025), np.int16, backend="F", alignment=alignment)
    assert np.all(o == 1)


def test_zero_dimensional():
    for name, f in ALLOCATORS.items():
        a = f((), np.int32, aligned_index=(), halo=(), layout=(), dims=())
        assert a.shape == () and a.ndim == 0, name
        assert_valid_allocation(a)
    assert gb.zeros(())[()] == 0
    assert gb.ones((), np.complex64)[()] == 1
    assert gb.full((), 5, np.int8)[()] == 5
    a = gb.from_array(np.float32(2.5))
    assert a.shape == () and a.dtype == np.float32 and a[()] == 2.5
    assert gb.plan((), np.float64).nbytes == 8
    assert gb.plan(()).strides == ()


@pytest.mark.parametrize("shape", [(0,), (3, 0, 2), (0, 0), (5, 4, 0), (0, 7, 1, 3)])
@pytest.mark.parametrize("backend", ["C", "F", "gt:cpu_ifirst", "dace:cpu"])
def test_zero_size(shape, backend):
    for f in ALLOCATORS.values():
        a = f(shape, np.float64, backend=backend, alignment=64)
        assert a.shape == shape and a.size == 0
        assert_valid_allocation(a)
    b = gb.from_array(np.empty(shape, np.int8), backend=backend)
    assert b.shape == shape and b.dtype == np.int8


def test_shape_accepts_any_int_sequence():
    expected = gb.plan((3, 4)).strides
    for shape in ([3, 4], (np.int64(3), np.uint8(4)), np.array([3, 4]), range(3, 5)):
        assert gb.zeros(shape).shape == (3, 4), shape
        assert gb.plan(shape).strides == expected


def test_dtype_spellings():
    for spelling, expected in [("i4", np.int32), (np.float32, np.float32), (np.dtype("u2"), np.uint16), (complex, np.complex128), (bool, np.bool_), ("f2", np.float16)]:
        assert gb.zeros((2,), spelling).dtype == expected
        assert gb.plan((2,), spelling).itemsize == np.dtype(expected).itemsize


# ============================================================================================
# Layouts, dims and presets.
# ============================================================================================
def test_builtin_presets():
    ps = gb.presets()
    assert isinstance(ps, dict)
    assert set(BUILTIN_BASE_LAYOUTS) <= set(ps)
    for name, base in BUILTIN_BASE_LAYOUTS.items():
        p = ps[name]
        assert isinstance(p, gb.Preset)
        assert p.name == name
        assert p.base_layout == base, name
        assert p.alignment == BUILTIN_ALIGNMENTS[name], name
        assert p.device == BUILTIN_DEVICES[name], name
        assert gb.preset(name) == p


def test_layout_map_examples():
    assert gb.layout_map("IJK01", (0, 1, 2)) == (2, 3, 4, 0, 1)
    assert gb.layout_map("IJK01", (2, 1, 0)) == (4, 3, 2, 0, 1)
    assert gb.layout_map(("I", "K"), (1, 2, 0)) == (1, 0)
    assert gb.layout_map("IJK", "C") == (0, 1, 2)
    assert gb.layout_map("KJI", "F") == (2, 1, 0)
    assert gb.layout_map("", (0, 1, 2)) == ()
    assert gb.preset("gt:cpu_ifirst").layout_map("IJ0") == (2, 1, 0)
    assert gb.preset("dace:cpu").layout_map("IJK") == (1, 2, 0)


class _AxisName:
    def __init__(self, name):
        self.__gt_axis_name__ = name


def test_dims_accept_objects_with_gt_axis_name():
    dims = [_AxisName("I"), _AxisName("J"), "K"]
    assert gb.layout_map(dims, (2, 1, 0)) == (2, 1, 0)
    assert gb.plan((2, 3, 4), backend="gt:cpu_ifirst", dimensions=dims).dims == ("I", "J", "K")


@given(st.integers(0, 6).flatmap(dims_for), st.sampled_from(["C", "F", *itertools.permutations(range(3))]))
def test_layout_map_matches_the_reference(dims, base):
    assert gb.layout_map(dims, base) == reference_layout(tuple(dims), base)


@given(st.sampled_from(sorted(BUILTIN_BASE_LAYOUTS)), st.integers(0, 6).flatmap(dims_for))
def test_preset_layout_map_is_its_base_layout(name, dims):
    p = gb.preset(name)
    assert p.layout_map(dims) == gb.layout_map(dims, p.base_layout)
    n = len(dims)
    assert gb.plan((2,) * n, backend=name, dims=dims).layout == p.layout_map(dims)


def test_dims_are_read_by_name():
    # K has unit stride under gt:cpu_kfirst wherever K sits; I under gt:cpu_ifirst.
    a = gb.zeros((4, 5, 6), backend="gt:cpu_kfirst", dimensions="KJI")
    assert a.strides[0] == 8
    assert a.base.plan.layout == (2, 1, 0)
    a = gb.zeros((4, 5, 6), backend="gt:cpu_ifirst", dims=("K", "I", "J"))
    assert a.strides[1] == 8
    assert stride_order(a.strides) == (0, 2, 1)
    # Data dims go outermost under a semantic preset ...
    a = gb.zeros((3, 4, 5), backend="gt:cpu_kfirst", dims="I0K")
    assert stride_order(a.strides) == (1, 0, 2)
    # ... but "C" and "F" are index orders regardless of dims.
    assert gb.zeros((3, 4, 5), backend="C", dims="KJI").strides == (160, 40, 8)
    assert gb.zeros((3, 4, 5), backend="F", dims="0KI").strides == (8, 24, 96)


def test_layout_keyword_overrides_the_preset():
    a = gb.zeros((3, 4, 5), backend="gt:cpu_ifirst", layout=(0, 1, 2))
    assert a.strides == (160, 40, 8)
    assert a.base.plan.layout == (0, 1, 2)
    a = gb.zeros((3, 4, 5), backend="numpy", layout=[2, 0, 1], alignment=64)
    assert a.base.plan.layout == (2, 0, 1)
    assert stride_order(a.strides) == (1, 2, 0)


@given(shapes(max_ndim=3), dtypes, st.lists(st.integers(1, 3), min_size=1, max_size=2), st.sampled_from(CPU_PRESETS), st.data())
def test_subarray_dtypes_append_data_dims(shape, base_dtype, sub, backend, data):
    dtype = np.dtype((base_dtype, tuple(sub)))
    kw = {}
    if data.draw(st.booleans(), label="aligned"):
        kw["aligned_index"] = tuple(data.draw(st.integers(0, n)) for n in shape)
    a = gb.zeros(shape, dtype, backend=backend, **kw)
    full_shape = tuple(shape) + tuple(sub)
    assert a.shape == full_shape
    assert a.dtype == base_dtype
    assert_valid_allocation(a)
    assert not np.any(a)
    p = a.base.plan
    n = len(shape)
    assert p.aligned_index[n:] == (0,) * len(sub)
    assert p.halo[n:] == ((0, 0),) * len(sub)
    assert len(p.dims) == len(full_shape)
    assert all(d.isdigit() for d in p.dims[n:])
    assert len(set(p.dims)) == len(p.dims)
    assert p.layout == reference_layout(p.dims, BUILTIN_BASE_LAYOUTS[backend])
    if backend == "C" and a.size:
        # Index order: the same strides as NumPy's own C-ordered allocation.
        assert a.strides == np.empty(shape, dtype).strides
    elif BUILTIN_BASE_LAYOUTS[backend] not in ("C", "F"):
        # Semantic presets: the subarray axes are data dims, outermost and in order.
        assert p.layout[n:] == tuple(range(len(sub)))
    assert gb.plan(shape, dtype, backend=backend, **kw).strides == a.strides


def test_subarray_example():
    a = gb.zeros((4, 5), ("f8", (2, 3)), backend="gt:cpu_ifirst")
    assert a.shape == (4, 5, 2, 3)
    p = a.base.plan
    assert p.layout == (3, 2, 0, 1)
    assert p.dims == ("I", "J", "0", "1")
    b = gb.from_array(np.arange(120.0).reshape(4, 5, 2, 3), ("f8", (2, 3)), backend="gt:cpu_ifirst")
    assert b.strides == a.strides
    assert_same_bytes(b, np.arange(120.0).reshape(4, 5, 2, 3))


def test_subarray_fill_values():
    a = gb.full((2, 5), 7, ("i4", (3,)), backend="gt:cpu_ifirst", alignment=64)
    assert a.shape == (2, 5, 3) and a.dtype == np.int32
    assert_valid_allocation(a)
    assert np.all(a == 7)
    o = gb.ones((4,), ("c8", (2, 2)), backend="F")
    assert o.shape == (4, 2, 2) and np.all(o == 1)


@pytest.mark.parametrize("dtype", [">f8", ">i4", "<u2", ">c16"])
def test_non_native_byte_order(dtype):
    a = gb.full((3, 4), 1.5 if dtype[1] in "fc" else 6, dtype, backend="F", alignment=32)
    assert a.dtype == np.dtype(dtype)
    assert_valid_allocation(a)
    assert_same_bytes(a, np.full((3, 4), 1.5 if dtype[1] in "fc" else 6, dtype))
    assert_same_bytes(gb.ones((5,), dtype), np.ones((5,), dtype))


def test_halo_sets_the_default_aligned_index():
    a = gb.zeros((10, 10, 5), backend="gt:cpu_ifirst", halo=((3, 3), 2, (0, 1)), alignment=64)
    p = a.base.plan
    assert p.halo == ((3, 3), (2, 2), (0, 1))
    assert p.aligned_index == (3, 2, 0)
    assert a[3:, 2:, 0:].__array_interface__["data"][0] % 64 == 0
    # An explicit aligned_index wins over the halo.
    b = gb.zeros((10, 10, 5), halo=(3, 3, 0), aligned_index=(1, 1, 1))
    assert b.base.plan.aligned_index == (1, 1, 1)
    assert b.base.plan.halo == ((3, 3), (3, 3), (0, 0))


def test_aligned_index_may_be_one_past_the_end():
    a = gb.zeros((3, 5), np.float32, aligned_index=(3, 5), backend="F")
    assert_valid_allocation(a)
    assert a.base.plan.aligned_index == (3, 5)


@pytest.mark.parametrize("alignment", ALIGNMENTS)
@pytest.mark.parametrize("dtype", [np.int8, np.float64, np.complex128])
def test_alignment_keyword(alignment, dtype):
    a = gb.ones((5, 7, 3), dtype, backend="gt:cpu_ifirst", alignment=alignment, aligned_index=(2, 1, 1))
    p = a.base.plan
    assert p.row_alignment == alignment
    assert p.alignment == max(alignment, 64)
    assert_valid_allocation(a)
    # I has unit stride: every a[2, j, k] is alignment-aligned.
    starts = [a[2:, j, k].__array_interface__["data"][0] for j in range(7) for k in range(3)]
    assert all(s % alignment == 0 for s in starts)
    assert a[2:, 1:, 1:].__array_interface__["data"][0] % max(alignment, 64) == 0


def test_register_preset_and_allocate(unique_name):
    p = gb.register_preset(unique_name, device="cpu", base_layout=(1, 0, 2), alignment=256)
    assert isinstance(p, gb.Preset)
    assert (p.name, p.device, p.base_layout, p.alignment) == (unique_name, "cpu", (1, 0, 2), 256)
    assert gb.presets()[unique_name] == p
    assert gb.preset(unique_name) == p
    assert p.layout_map("IJK") == (1, 0, 2)
    a = gb.zeros((5, 6, 7), np.float32, backend=unique_name, aligned_index=(1, 1, 1))
    assert_valid_allocation(a)
    pl = a.base.plan
    assert (pl.backend, pl.row_alignment, pl.alignment, pl.layout) == (unique_name, 256, 256, (1, 0, 2))
    assert pl.padded_shape == (5, 6, 64)
    # Replacing needs replace=True and takes effect.
    q = gb.register_preset(unique_name, device="gpu", base_layout="F", alignment=8, replace=True)
    assert gb.preset(unique_name) == q != p
    assert q.base_layout == "F" and q.device == "gpu"
    assert gb.plan((2, 3), backend=unique_name).layout == (1, 0)
    # The same request as before the replacement is planned afresh, not served from the cache.
    again = gb.plan((5, 6, 7), np.float32, backend=unique_name, aligned_index=(1, 1, 1))
    assert (again.device, again.layout, again.row_alignment) == ("gpu", (2, 1, 0), 8)


def test_register_index_order_preset(unique_name):
    gb.register_preset(unique_name, device="cpu", base_layout="C", alignment=1)
    assert gb.zeros((2, 3, 4), backend=unique_name, dims="KJI").strides == (96, 32, 8)


# ============================================================================================
# from_array: a copy with gridbuf's layout, whatever the source looks like.
# ============================================================================================
@st.composite
def source_arrays(draw):
    """NumPy arrays of every kind of memory layout: transposed, strided, reversed, broadcast."""
    dtype = draw(dtypes)
    ndim = draw(st.integers(0, 4))
    ext = [draw(st.integers(0, 6)) for _ in range(ndim)]
    steps = [draw(st.sampled_from([1, 1, 2, -1, -2, 3])) for _ in range(ndim)]
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    base_shape = [max(1, e * abs(s)) for e, s in zip(ext, steps)]
    values = rng.standard_normal(base_shape) * 50
    if dtype.kind == "c":
        values = values + 1j * rng.standard_normal(base_shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        base = values.astype(dtype)
    view = base[tuple(slice(None, None, s) for s in steps)]
    view = view[tuple(slice(0, e) for e in ext)]
    view = view.transpose(draw(st.permutations(range(ndim))))
    if ndim < 4 and draw(st.booleans()):
        k = draw(st.integers(0, ndim))
        m = draw(st.integers(0, 4))
        view = np.broadcast_to(np.expand_dims(view, k), view.shape[:k] + (m,) + view.shape[k:])
    return view


def _kw_for(data, ndim, presets=CPU_PRESETS):
    kw = {"backend": data.draw(st.sampled_from(presets), label="backend")}
    if data.draw(st.booleans(), label="use layout"):
        kw["layout"] = tuple(data.draw(st.permutations(range(ndim)), label="layout"))
    if data.draw(st.booleans(), label="use alignment"):
        kw["alignment"] = data.draw(st.sampled_from(ALIGNMENTS), label="alignment")
    return kw


@given(source_arrays(), st.data())
def test_from_array_copies_any_source(src, data):
    kw = _kw_for(data, src.ndim)
    a = gb.from_array(src, **kw)
    assert a.dtype == src.dtype
    assert_valid_allocation(a)
    assert a.strides == gb.plan(src.shape, src.dtype, **kw).strides
    assert_same_bytes(a, src)
    assert not np.shares_memory(a, src)


@given(source_arrays(), dtypes, st.data())
def test_from_array_converts_dtype(src, dtype, data):
    kw = _kw_for(data, src.ndim)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = gb.from_array(src, dtype, **kw)
        expected = np.asarray(src, dtype=dtype)
    assert a.dtype == dtype
    assert_valid_allocation(a)
    assert_same_bytes(a, expected)


@pytest.mark.parametrize(
    "data, dtype",
    [
        ([[1, 2, 3], [4, 5, 6]], np.array([[1, 2, 3], [4, 5, 6]]).dtype),
        ([1.5, 2.5], np.float64),
        ([True, False], np.bool_),
        ([1j, 2], np.complex128),
        ((1, 2.0), np.float64),
        (7, np.array(7).dtype),
        (np.uint16(7), np.uint16),
    ],
)
def test_from_array_of_python_objects(data, dtype):
    a = gb.from_array(data, backend="F")
    assert a.dtype == dtype
    assert_valid_allocation(a)
    assert_same_bytes(a, np.asarray(data))


def test_from_array_keeps_non_native_byte_order():
    src = np.arange(12, dtype=">i4").reshape(3, 4)
    a = gb.from_array(src, backend="F")
    assert a.dtype == src.dtype
    np.testing.assert_array_equal(a, src)
    b = gb.from_array(src, "<i4")
    assert b.dtype == np.dtype("<i4")
    np.testing.assert_array_equal(b, src)


def test_from_array_of_unaligned_source():
    raw = np.zeros(8 * 60 + 1, np.uint8)
    src = np.frombuffer(raw.data, dtype=np.float64, count=60, offset=1).reshape(6, 10)
    assert not src.flags.aligned
    raw[1:] = np.arange(60, dtype=np.float64).view(np.uint8)
    for backend in ("C", "F"):
        a = gb.from_array(src.T, backend=backend)
        np.testing.assert_array_equal(a, np.arange(60.0).reshape(6, 10).T)


def test_from_array_is_a_copy():
    src = gb.full((4, 5), 1.0)
    a = gb.from_array(src)
    a[...] = 2.0
    assert np.all(src == 1.0)
    assert a.base is not src.base


@pytest.mark.parametrize(
    "src_shape, transpose, step, backend, alignment",
    [
        ((300, 257), (1, 0), (1, 1), "C", None),
        ((300, 257), None, (1, 1), "F", 256),
        ((70, 33, 129), (2, 0, 1), (1, 1, 1), "gt:cpu_ifirst", 64),
        ((120, 90, 40), None, (1, -1, 2), "dace:cpu", None),
        ((8, 520, 130), (0, 2, 1), (1, 2, -1), "gt:cpu_kfirst", 4096),
        ((600, 600), (1, 0), (-1, 1), "numpy", 32),
        # 16 MiB and more: streamed destination lines and a populated fresh buffer, for float64
        # and float32; 301 rows leave some destination lines unaligned.
        ((304, 256, 64), None, (1, 1, 1), "F", None),
        ((301, 260, 64), None, (1, 1, 1), "gt:cpu_ifirst", None),
    ],
)
def test_from_array_large_layout_changes(src_shape, transpose, step, backend, alignment):
    # Large enough for the tiled and parallel copy, with extents that are not multiples of the
    # tile size.
    base = np.arange(int(np.prod(src_shape)), dtype=np.float64).reshape(src_shape)
    src = base[tuple(slice(None, None, s) for s in step)]
    if transpose:
        src = src.transpose(transpose)
    a = gb.from_array(src, backend=backend, alignment=alignment)
    assert_valid_allocation(a)
    np.testing.assert_array_equal(a, src)
    b = gb.from_array(src, np.float32, backend=backend, alignment=alignment)
    np.testing.assert_array_equal(b, src.astype(np.float32))


def test_from_array_broadcast_source():
    src = np.broadcast_to(np.arange(5.0), (300, 400, 5))
    a = gb.from_array(src, backend="gt:cpu_ifirst", aligned_index=(1, 0, 0))
    assert_valid_allocation(a)
    np.testing.assert_array_equal(a, src)
    a[0, 0, 0] = -1.0  # its own memory: writing one element changes only that element
    assert a[1, 0, 0] == 0.0 and a[0, 1, 0] == 0.0


# ============================================================================================
# Lifetime: the Allocation is the array's base and lives as long as any view.
# ============================================================================================
def test_view_keeps_the_memory_alive():
    a = gb.full((64, 64), 7.0, backend="F", aligned_index=(3, 3))
    a[5, 5] = 9.0
    v = a[2:10, ::3]
    w = v.T[1:]
    expected_v, expected_w = v.copy(), w.copy()
    alloc = a.base
    alloc_refs = sys.getrefcount(alloc)
    ref = weakref.ref(a)
    del a
    gc.collect()
    # Churn the allocator so freed memory would be reused and overwritten.
    churn = [gb.full((64, 64), -1.0, backend="F") for _ in range(20)]
    churn += [np.full(4096, -2.0) for _ in range(20)]
    assert owner(v) is alloc and owner(w) is alloc
    np.testing.assert_array_equal(v, expected_v)
    np.testing.assert_array_equal(w, expected_w)
    v[...] = 1.0
    assert np.all(w[:, :-1] == 1.0)
    del churn
    # The last view gone, the array and the allocation lose their last reference.
    del v, w
    gc.collect()
    assert ref() is None
    assert sys.getrefcount(alloc) == alloc_refs - 1


def test_allocation_is_released_with_its_last_view():
    a = gb.zeros((16, 16))
    alloc = a.base
    views = [a[i:] for i in range(4)] + [a.T, a[::2, 1], a[1:][::2].T]
    assert all(owner(v) is alloc for v in views)
    del a
    gc.collect()
    assert all(owner(v) is alloc for v in views)
    del views
    gc.collect()
    # Only `alloc` and getrefcount's argument hold it: nothing leaked a reference.
    assert sys.getrefcount(alloc) == 2


def test_allocation_object():
    a = gb.zeros((4, 6), np.float32, backend="F", alignment=32, aligned_index=(1, 2))
    alloc = a.base
    p = alloc.plan
    q = gb.plan((4, 6), np.float32, backend="F", alignment=32, aligned_index=(1, 2))
    for field in ("shape", "padded_shape", "strides", "layout", "dims", "halo", "aligned_index", "alignment", "row_alignment", "byte_offset", "nbytes", "itemsize", "device", "backend"):
        assert getattr(p, field) == getattr(q, field), field
    assert alloc.data_address == a.ctypes.data
    assert alloc.nbytes >= p.byte_offset + p.nbytes
    assert "Allocation" in repr(alloc)
    assert "Plan(" in repr(q) and "strides=" in repr(q)


def test_allocation_and_plan_reprs_are_readable():
    alloc = gb.zeros((10, 11, 12), backend="gt:cpu_ifirst").base
    assert repr(alloc) == (
        f"Allocation(shape=(10, 11, 12), dtype=float64, backend='gt:cpu_ifirst', "
        f"nbytes={alloc.nbytes}, alignment={alloc.plan.alignment})"
    )
    assert repr(gb.zeros((2,), np.int16).base).startswith("Allocation(shape=(2,), dtype=int16, backend='C',")
    q = gb.plan((4, 6), np.float32, backend="F")
    assert repr(q).endswith(", backend='F')")
    # No Rust Debug text (`Preset { name: ... }`) in either.
    for r in (repr(alloc), repr(q)):
        assert "{" not in r and "Preset" not in r


# ============================================================================================
# The *_like functions.
# ============================================================================================
LIKES = {
    "empty_like": gb.empty_like,
    "zeros_like": gb.zeros_like,
    "ones_like": gb.ones_like,
    "full_like": lambda a, dtype=None, **kw: gb.full_like(a, 2, dtype, **kw),
}
_LIKE_VALUES = {"zeros_like": 0, "ones_like": 1, "full_like": 2}


def _check_like_values(kind, b):
    if kind in _LIKE_VALUES:
        assert_same_bytes(b, np.full(b.shape, _LIKE_VALUES[kind], b.dtype))


PLAN_FIELDS = ("shape", "padded_shape", "strides", "layout", "dims", "halo", "aligned_index", "alignment", "row_alignment", "itemsize", "backend")


@pytest.mark.parametrize("kind", sorted(LIKES))
@given(case=alloc_cases())
def test_like_of_a_gridbuf_array_reproduces_it(kind, case):
    shape, dtype, kw, _ = case
    a = gb.ones(shape, dtype, **kw)
    b = LIKES[kind](a)
    assert b.dtype == a.dtype and b.shape == a.shape and b.strides == a.strides
    assert_valid_allocation(b)
    for field in PLAN_FIELDS:
        assert getattr(b.base.plan, field) == getattr(a.base.plan, field), field
    assert b.base is not a.base
    _check_like_values(kind, b)
    b[...] = 0 if kind == "ones_like" else 1
    assert_same_bytes(a, np.ones(shape, dtype))  # separate memory


@pytest.mark.parametrize("kind", sorted(LIKES))
@given(case=alloc_cases(), dtype=dtypes)
def test_like_with_another_dtype_keeps_the_parameters(kind, case, dtype):
    shape, _, kw, _ = case
    a = gb.zeros(shape, **kw)
    b = LIKES[kind](a, dtype=dtype)
    assert b.dtype == dtype and b.shape == a.shape
    assert_valid_allocation(b)
    for field in ("layout", "dims", "halo", "aligned_index", "row_alignment", "alignment", "backend"):
        assert getattr(b.base.plan, field) == getattr(a.base.plan, field), field
    _check_like_values(kind, b)


@pytest.mark.parametrize("kind", sorted(LIKES))
@given(shape=shapes(min_ndim=1, min_extent=2), dtype=dtypes, data=st.data())
def test_like_of_a_foreign_array_keeps_its_stride_order(kind, shape, dtype, data):
    x = np.zeros(shape, dtype).transpose(data.draw(st.permutations(range(len(shape))), label="perm"))
    if data.draw(st.booleans(), label="reverse"):
        x = x[tuple(slice(None, None, -1) for _ in shape)]
    b = LIKES[kind](x)
    assert b.shape == x.shape and b.dtype == x.dtype
    assert_valid_allocation(b)
    assert stride_order(b.strides) == stride_order(x.strides)
    _check_like_values(kind, b)


@given(shape=shapes(min_ndim=1, min_extent=3), dtype=dtypes, data=st.data())
def test_like_of_a_gridbuf_view_keeps_its_stride_order(shape, dtype, data):
    # A view is not the whole allocation: it is treated like any other array.
    a = gb.zeros(shape, dtype, **_kw_for(data, len(shape)))
    v = a[tuple(slice(1, None) for _ in shape)].transpose(data.draw(st.permutations(range(len(shape))), label="perm"))
    b = gb.zeros_like(v)
    assert b.shape == v.shape and b.dtype == v.dtype
    assert_valid_allocation(b)
    assert stride_order(b.strides) == stride_order(v.strides)


def test_like_of_python_objects():
    b = gb.zeros_like([[1, 2, 3], [4, 5, 6]])
    assert b.shape == (2, 3) and b.dtype == np.array([1]).dtype and b.strides == (3 * b.itemsize, b.itemsize)
    assert not np.any(b)
    c = gb.full_like(2.5, 7)
    assert c.shape == () and c.dtype == np.float64 and c[()] == 7.0
    d = gb.ones_like(np.zeros((3, 4), order="F"), dtype=np.int8)
    assert d.dtype == np.int8 and stride_order(d.strides) == (1, 0)


def test_like_overrides():
    a = gb.zeros((6, 7, 8), np.float32, backend="gt:cpu_kfirst", halo=(1, 2, 0), alignment=64)
    # Another preset recomputes the layout (and the alignment comes from it).
    b = gb.zeros_like(a, backend="gt:cpu_ifirst")
    assert b.base.plan.layout == (2, 1, 0)
    assert b.base.plan.backend == "gt:cpu_ifirst"
    assert b.base.plan.row_alignment == 1
    assert b.base.plan.aligned_index == (1, 2, 0)
    c = gb.zeros_like(a, defaults="F")
    assert c.base.plan.layout == (2, 1, 0) and c.base.plan.backend == "F"
    # An explicit layout or alignment wins.
    d = gb.empty_like(a, layout=(1, 2, 0), alignment=128)
    assert d.base.plan.layout == (1, 2, 0) and d.base.plan.row_alignment == 128
    assert_valid_allocation(d)
    # New dims recompute the layout.
    e = gb.empty_like(a, dims="KJI")
    assert e.base.plan.layout == (2, 1, 0) and e.base.plan.dims == ("K", "J", "I")
    f = gb.empty_like(a, dimensions="KJI")
    assert f.strides == e.strides
    # Another aligned index or halo.
    g = gb.empty_like(a, aligned_index=(0, 0, 3))
    assert g.base.plan.aligned_index == (0, 0, 3) and g.base.plan.halo == ((1, 1), (2, 2), (0, 0))
    h = gb.empty_like(a, halo=(2, 0, 1))
    assert h.base.plan.aligned_index == (2, 0, 1)
    # Another shape drops the per-axis parameters but keeps preset and alignment.
    i = gb.ones_like(a, shape=(3, 4))
    assert i.shape == (3, 4) and i.dtype == np.float32
    assert i.base.plan.backend == "gt:cpu_kfirst" and i.base.plan.row_alignment == 64
    assert i.base.plan.aligned_index == (0, 0) and i.base.plan.halo == ((0, 0), (0, 0))
    assert np.all(i == 1)
    # full_like converts the fill value to the (new) dtype.
    j = gb.full_like(a, 2.75, dtype=np.int16)
    assert j.dtype == np.int16 and np.all(j == 2)
    assert j.base.plan.layout == a.base.plan.layout
