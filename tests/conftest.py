"""Shared strategies, reference computations and invariant checks for the gridbuf test suite.

The reference functions here are written from the documented contract (GT4Py's allocation
rule), not from gridbuf's implementation: the tests compare gridbuf against them.
"""

from __future__ import annotations

import itertools
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from _scratch import scratch_dir

# Tier two (C compiled in the background) off unless a test asks for it, so every other test
# runs one known tier on two busy cores; its own cache directory, so no run reads another's.
os.environ.setdefault("GRIDBUF_TIER2", "0")
os.environ.setdefault("GRIDBUF_TIER2_CACHE", os.path.join(scratch_dir("gridbuf_tier2_"), "cache"))

import gridbuf as gb  # noqa: E402

# --------------------------------------------------------------------------------------------
# Hypothesis profiles: "default" keeps the whole suite well under a minute on two cores;
# GRIDBUF_HYPOTHESIS_PROFILE=thorough runs ten times as many examples.
# --------------------------------------------------------------------------------------------
_COMMON = dict(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)
settings.register_profile("default", max_examples=120, **_COMMON)
settings.register_profile("thorough", max_examples=1200, **_COMMON)
settings.register_profile("quick", max_examples=20, **_COMMON)
settings.load_profile(os.environ.get("GRIDBUF_HYPOTHESIS_PROFILE", "default"))

# --------------------------------------------------------------------------------------------
# The contract's constants.
# --------------------------------------------------------------------------------------------
DTYPES = [
    np.dtype(t)
    for t in (
        np.bool_,
        np.int8,
        np.int16,
        np.int32,
        np.int64,
        np.uint8,
        np.uint16,
        np.uint32,
        np.uint64,
        np.float16,
        np.float32,
        np.float64,
        np.complex64,
        np.complex128,
    )
]

#: Base layout of every built-in preset: a permutation over (I, J, K), or "C"/"F".
BUILTIN_BASE_LAYOUTS = {
    "C": "C",
    "F": "F",
    "numpy": (0, 1, 2),
    "debug": (0, 1, 2),
    "gt:cpu_kfirst": (0, 1, 2),
    "dace:cpu_kfirst": (0, 1, 2),
    "gt:cpu_ifirst": (2, 1, 0),
    "dace:cpu_KJI": (2, 1, 0),
    "dace:gpu": (2, 1, 0),
    "dace:cpu": (1, 2, 0),
    "dace:gpu_IJK": (0, 1, 2),
    "gt:gpu": (2, 1, 0),
}
BUILTIN_ALIGNMENTS = {name: 1 for name in BUILTIN_BASE_LAYOUTS} | {"gt:gpu": 128}
BUILTIN_DEVICES = {name: "cpu" for name in BUILTIN_BASE_LAYOUTS} | {
    "gt:gpu": "gpu",
    "dace:gpu": "gpu",
    "dace:gpu_IJK": "gpu",
}
CPU_PRESETS = [n for n, d in BUILTIN_DEVICES.items() if d == "cpu"]
GPU_PRESETS = [n for n, d in BUILTIN_DEVICES.items() if d == "gpu"]
ALIGNMENTS = [2**k for k in range(13)]  # 1 .. 4096
MIN_ALIGNMENT = 64

#: Every array gridbuf allocates; `gb.full` takes a fill value and is wrapped to match.
ALLOCATORS = {
    "empty": gb.empty,
    "zeros": gb.zeros,
    "ones": gb.ones,
    "full": lambda shape, dtype=None, **kw: gb.full(shape, 3, dtype, **kw),
}


# --------------------------------------------------------------------------------------------
# Reference computations from the contract.
# --------------------------------------------------------------------------------------------
def default_dims(ndim: int) -> tuple[str, ...]:
    """``"IJK"[:ndim]``, then data dims ``"0"``, ``"1"``, ..."""
    return tuple("IJK"[:ndim]) + tuple(str(d) for d in range(max(0, ndim - 3)))


def reference_layout(dims, base) -> tuple[int, ...]:
    """Layout map for ``dims`` under a base layout.

    "C": index order; "F": reversed index order; a permutation over (I, J, K): the Cartesian dims
    keep the relative order the base gives them (read by name, wherever they sit), data dims go
    outermost in the order they appear.
    """
    ndim = len(dims)
    if base == "C":
        return tuple(range(ndim))
    if base == "F":
        return tuple(reversed(range(ndim)))
    data_axes = [ax for ax, d in enumerate(dims) if d not in "IJK"]
    cart_axes = sorted((ax for ax, d in enumerate(dims) if d in "IJK"), key=lambda ax: base["IJK".index(dims[ax])])
    layout = [0] * ndim
    for rank, ax in enumerate(data_axes + cart_axes):
        layout[ax] = rank
    return tuple(layout)


def unit_axis(layout) -> int | None:
    """The axis with unit stride (highest layout rank)."""
    return int(np.argmax(layout)) if len(layout) else None


def reference_strides(shape, layout, itemsize: int, row_alignment: int):
    """(padded_shape, strides) by GT4Py's rule: the unit-stride axis is padded to a multiple
    of ``row_alignment`` bytes (whole elements), the other axes are packed around it."""
    shape = list(shape)
    padded = list(shape)
    block = max(row_alignment // itemsize, 1)
    u = unit_axis(layout)
    if u is not None:
        padded[u] = -(-shape[u] // block) * block
    strides = [0] * len(shape)
    acc = itemsize
    for ax in sorted(range(len(shape)), key=lambda a: -layout[a]):
        strides[ax] = acc
        acc *= padded[ax]
    return tuple(padded), tuple(strides)


def element_offsets(shape, strides) -> np.ndarray:
    """Byte offset from element 0 of every element, in C index order, as int64."""
    off = np.zeros((), dtype=np.int64)
    for ax, (n, s) in enumerate(zip(shape, strides)):
        idx_shape = [1] * len(shape)
        idx_shape[ax] = n
        off = off + (np.arange(n, dtype=np.int64) * s).reshape(idx_shape)
    return np.broadcast_to(off, tuple(shape)).ravel()


def address_of(arr: np.ndarray, index) -> int:
    """Address of ``arr[index]`` (index may be one past the end along an axis)."""
    return arr.__array_interface__["data"][0] + sum(i * s for i, s in zip(index, arr.strides))


def stride_order(strides) -> tuple[int, ...]:
    """Axes sorted from the largest to the smallest absolute stride."""
    return tuple(sorted(range(len(strides)), key=lambda ax: -abs(strides[ax])))


def layout_from_stride_order(strides) -> tuple[int, ...]:
    layout = [0] * len(strides)
    for rank, ax in enumerate(stride_order(strides)):
        layout[ax] = rank
    return tuple(layout)


# --------------------------------------------------------------------------------------------
# Invariants every gridbuf array must satisfy.
# --------------------------------------------------------------------------------------------
def assert_valid_allocation(arr) -> None:
    """Checks the memory contract of an array gridbuf allocated (values are not checked)."""
    assert type(arr) is np.ndarray, type(arr)
    alloc = arr.base
    assert isinstance(alloc, gb.Allocation), type(alloc)
    assert arr.flags.writeable
    p = alloc.plan
    assert arr.shape == p.shape
    assert arr.strides == p.strides
    assert arr.itemsize == p.itemsize
    data = arr.__array_interface__["data"][0]
    assert data == alloc.data_address

    # Alignment: the aligned element sits on max(row_alignment, 64) bytes; the memory block
    # holds the offset and the padded array.
    assert p.alignment == max(p.row_alignment, MIN_ALIGNMENT)
    assert (data - p.byte_offset) % p.alignment == 0
    assert p.byte_offset + p.nbytes <= alloc.nbytes
    assert address_of(arr, p.aligned_index) % p.alignment == 0, (p, data)

    if arr.size == 0:
        return
    itemsize = arr.itemsize
    if arr.ndim == 0:
        assert p.nbytes >= itemsize
        return
    offs = element_offsets(arr.shape, arr.strides)
    # Every element inside the allocation ...
    assert offs.min() >= 0
    assert int(offs.max()) + itemsize <= p.nbytes
    # ... and no two elements overlapping.
    s = np.sort(offs)
    assert np.all(np.diff(s) >= itemsize), "elements overlap"

    # Strides follow the layout: unit stride on the top-ranked axis, strictly decreasing with
    # the rank over the axes of extent > 1.
    u = unit_axis(p.layout)
    assert arr.strides[u] == itemsize
    ranked = [ax for ax in sorted(range(arr.ndim), key=lambda a: p.layout[a]) if arr.shape[ax] > 1]
    for outer, inner in zip(ranked, ranked[1:]):
        assert arr.strides[outer] > arr.strides[inner], (p.layout, arr.strides)

    # Row alignment: every element whose unit-stride index equals the aligned index's is
    # aligned to row_alignment.
    row_shape = list(arr.shape)
    row_shape[u] = 1
    if all(row_shape):
        start = address_of(arr, [p.aligned_index[ax] if ax == u else 0 for ax in range(arr.ndim)])
        rows = start + element_offsets(row_shape, arr.strides)
        assert np.all(rows % p.row_alignment == 0), p


def owner(arr):
    """The object at the end of an array's ``.base`` chain (NumPy stops collapsing the chain at
    an object that is not an ndarray, so a view's base is the array it was taken from)."""
    while isinstance(arr, np.ndarray):
        arr = arr.base
    return arr


def assert_same_bytes(actual: np.ndarray, expected: np.ndarray) -> None:
    """Same shape, dtype and element bytes (exact, also for NaN and -0.0)."""
    assert actual.shape == expected.shape
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.tobytes() == np.ascontiguousarray(expected).tobytes()


# --------------------------------------------------------------------------------------------
# Hypothesis strategies.
# --------------------------------------------------------------------------------------------
dtypes = st.sampled_from(DTYPES)
#: Largest extent per axis for a given ndim, so that no case has more than a few thousand elements.
_MAX_EXTENT = {0: 1, 1: 40, 2: 12, 3: 8, 4: 5, 5: 4, 6: 3}


@st.composite
def shapes(draw, min_ndim=0, max_ndim=6, min_extent=0):
    ndim = draw(st.integers(min_ndim, max_ndim))
    return tuple(draw(st.lists(st.integers(min_extent, _MAX_EXTENT[ndim]), min_size=ndim, max_size=ndim)))


@st.composite
def dims_for(draw, ndim: int):
    """Valid dims for ``ndim`` axes: some of I, J, K in any order and at any position, the rest
    data dims numbered in their order of appearance."""
    n_cart = draw(st.integers(0, min(3, ndim)))
    cart = draw(st.permutations("IJK"))[:n_cart]
    positions = sorted(draw(st.permutations(range(ndim)))[:n_cart])
    dims, c, d = [], iter(cart), itertools.count()
    for ax in range(ndim):
        dims.append(next(c) if ax in positions else str(next(d)))
    return "".join(dims) if draw(st.booleans()) else tuple(dims)


@st.composite
def alloc_cases(draw, presets=None, allow_zero=True):
    """(shape, dtype, keywords, expected) for an allocation, ``expected`` from the contract."""
    shape = draw(shapes(min_extent=0 if allow_zero else 1))
    ndim = len(shape)
    dtype = draw(dtypes)
    backend = draw(st.sampled_from([None] + (presets or CPU_PRESETS)))
    kw: dict = {}
    if backend is not None:
        kw[draw(st.sampled_from(["backend", "defaults"]))] = backend
    name = backend or "C"

    dims = default_dims(ndim)
    if draw(st.booleans()):
        dims_value = draw(dims_for(ndim))
        kw[draw(st.sampled_from(["dimensions", "dims"]))] = dims_value
        dims = tuple(dims_value)
    layout = reference_layout(dims, BUILTIN_BASE_LAYOUTS[name])
    if draw(st.booleans()):
        layout = tuple(draw(st.permutations(range(ndim))))
        kw["layout"] = layout

    row_alignment = BUILTIN_ALIGNMENTS[name]
    if draw(st.booleans()):
        row_alignment = draw(st.sampled_from(ALIGNMENTS))
        kw["alignment"] = row_alignment

    halo = tuple((0, 0) for _ in shape)
    aligned_index = tuple(0 for _ in shape)
    if draw(st.booleans()):
        halo, halo_kw = [], []
        for n in shape:
            lo = draw(st.integers(0, n))
            hi = draw(st.integers(0, n - lo))
            if lo == hi and draw(st.booleans()):
                halo_kw.append(lo)
            else:
                halo_kw.append((lo, hi))
            halo.append((lo, hi))
        halo = tuple(halo)
        kw["halo"] = tuple(halo_kw) if draw(st.booleans()) else list(halo_kw)
        aligned_index = tuple(lo for lo, _ in halo)
    if draw(st.booleans()):
        aligned_index = tuple(draw(st.integers(0, n)) for n in shape)  # n itself is allowed
        kw["aligned_index"] = aligned_index

    padded, strides = reference_strides(shape, layout, dtype.itemsize, row_alignment)
    expected = dict(
        shape=shape,
        padded_shape=padded,
        strides=strides,
        layout=layout,
        dims=tuple(dims),
        halo=halo,
        aligned_index=aligned_index,
        row_alignment=row_alignment,
        alignment=max(row_alignment, MIN_ALIGNMENT),
        itemsize=dtype.itemsize,
        device=BUILTIN_DEVICES[name],
        backend=name,
    )
    return shape, dtype, kw, expected


def assert_plan_matches(p, expected: dict) -> None:
    for field, value in expected.items():
        assert getattr(p, field) == value, (field, getattr(p, field), value, p)


@pytest.fixture
def unique_name(request):
    """A preset name no other test uses."""
    return f"test:{request.node.name}"
