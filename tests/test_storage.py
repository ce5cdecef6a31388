"""gridbuf.storage: the Storage sections of the source documents (000, 001), name by name and rule
by rule, on the CPU and on the host stand-in device (device="host"); the same rows with the real
CuPy run where a GPU is visible and are skipped elsewhere.

Expected values are written from the documents (and NumPy), not from gridbuf's code.
"""

from __future__ import annotations

import copy
import importlib.util
import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import gridbuf as gb
from gridbuf import storage as gs
from gridbuf.errors import GridbufDeviceError, GridbufError, GridbufTypeError, GridbufValueError, UnknownPresetError

SHAPE = (6, 7, 4)


def _gpu_or_skip():
    if importlib.util.find_spec("cupy") is None:
        pytest.skip("CuPy is not installed")
    import cupy

    try:
        if cupy.cuda.runtime.getDeviceCount() == 0:
            pytest.skip("no GPU visible")
    except Exception as exc:  # noqa: BLE001 - no usable CUDA runtime
        pytest.skip(f"no usable GPU ({exc})")
    return cupy


#: (device, managed, class) of every storage kind; "gpu" rows need CuPy and a GPU.
KINDS = [
    pytest.param(None, None, gs.CPUStorage, id="cpu"),
    pytest.param("host", "gt4py", gs.SoftwareManagedGPUStorage, id="host-gt4py"),
    pytest.param("host", None, gs.GPUStorage, id="host-unmanaged"),
    pytest.param("host", "cuda", gs.CudaManagedGPUStorage, id="host-cuda"),
    pytest.param("gpu", "gt4py", gs.SoftwareManagedGPUStorage, id="gpu-gt4py"),
    pytest.param("gpu", None, gs.GPUStorage, id="gpu-unmanaged"),
    pytest.param("gpu", "cuda", gs.CudaManagedGPUStorage, id="gpu-cuda"),
]


def _kw(device, managed):
    if device == "gpu":
        _gpu_or_skip()
    return {} if device is None else {"device": device, "managed": managed}


def _values(s):
    """The values of any storage as a NumPy array (a copy, through the documented methods)."""
    if isinstance(s, gs.GPUStorage):
        a = s.to_cupy()
        return a.get() if hasattr(a, "get") else np.array(a)
    if isinstance(s, gs.SoftwareManagedGPUStorage):
        s.synchronize()
    return np.array(s.to_numpy())


def _ptr(a):
    if hasattr(a, "__cuda_array_interface__"):
        return a.__cuda_array_interface__["data"][0]
    return a.__array_interface__["data"][0]


# -- constructors --------------------------------------------------------------------------------


@pytest.mark.parametrize("device, managed, cls", KINDS)
@pytest.mark.parametrize(
    "make, expected",
    [
        (lambda kw: gs.zeros(SHAPE, **kw), 0.0),
        (lambda kw: gs.ones(SHAPE, **kw), 1.0),
        (lambda kw: gs.full(SHAPE, 2.5, **kw), 2.5),
    ],
    ids=["zeros", "ones", "full"],
)
def test_fill_constructors_give_the_class_and_values(device, managed, cls, make, expected):
    s = make(_kw(device, managed))
    assert type(s) is cls and isinstance(s, gs.Storage)
    assert s.shape == SHAPE and s.dtype == np.float64 and s.axes == "IJK"
    assert np.all(_values(s) == expected)


@pytest.mark.parametrize("device, managed, cls", KINDS)
def test_empty_gives_the_class_shape_and_dtype(device, managed, cls):
    s = gs.empty(SHAPE, np.float32, **_kw(device, managed))
    assert type(s) is cls and s.shape == SHAPE and s.dtype == np.float32


@pytest.mark.parametrize("device, managed, cls", KINDS)
@pytest.mark.parametrize("fn, args, expected", [("empty_like", (), None), ("zeros_like", (), 0.0), ("ones_like", (), 1.0), ("full_like", (4.0,), 4.0)])
def test_like_constructors_keep_every_parameter(device, managed, cls, fn, args, expected):
    kw = _kw(device, managed)
    t = gs.ones(SHAPE, np.float32, axes="IJK", defaults="gt:cpu_ifirst", halo=(2, 1, 0), aligned_index=(2, 1, 0), alignment=64, **kw)
    s = getattr(gs, fn)(t, *args)
    assert type(s) is cls
    assert (s.shape, s.dtype, s.axes, s.halo, s.layout, s.strides) == (t.shape, t.dtype, t.axes, t.halo, t.layout, t.strides)
    assert (s.alignment, s.aligned_index, s.device, s.managed) == (t.alignment, t.aligned_index, t.device, t.managed)
    if expected is not None:
        assert np.all(_values(s) == expected)
    assert _ptr(s.to_ndarray()) != _ptr(t.to_ndarray())


def test_like_overrides_and_refuses_a_shape():
    t = gs.zeros(SHAPE, halo=(1, 1, 0), defaults="gt:cpu_kfirst")
    s = gs.zeros_like(t, np.float32, halo=(2, 2, 0))
    assert s.dtype == np.float32 and s.halo == ((2, 2), (2, 2), (0, 0)) and s.layout == t.layout
    m = gs.zeros_like(t, device="host")
    assert type(m) is gs.SoftwareManagedGPUStorage and m.strides == t.strides
    with pytest.raises(GridbufTypeError, match="shape"):
        gs.zeros_like(t, shape=(3, 3, 3))
    with pytest.raises(GridbufTypeError, match="data"):
        gs.zeros_like(np.zeros(SHAPE))


def test_as_storage_wraps_without_copying():
    a = np.arange(np.prod(SHAPE), dtype=float).reshape(SHAPE)
    s = gs.as_storage(a, axes="IJK", halo=(1, 1, 0))
    assert type(s) is gs.CPUStorage and np.shares_memory(s.to_numpy(), a)
    s[1, 1, 1] = -1.0
    assert a[1, 1, 1] == -1.0
    assert s.halo == ((1, 1), (1, 1), (0, 0)) and gs.as_storage(s) is s


def test_as_storage_of_two_buffers_is_software_managed_with_the_given_state():
    h = np.zeros(SHAPE)
    d = np.ones(SHAPE)
    s = gs.as_storage(h, d, device="host", sync_state="device_dirty")
    assert type(s) is gs.SoftwareManagedGPUStorage and s.sync_state.state == "device_dirty"
    assert np.shares_memory(s.to_cupy(), d)
    s.synchronize()
    assert np.all(h == 1.0)  # the device was current: copied into the wrapped host buffer


def test_as_storage_makes_gpu_and_managed_storages_on_the_stand_in():
    d = np.arange(24.0).reshape(2, 3, 4)
    g = gs.as_storage(device_data=d, device="host", managed=None)
    assert type(g) is gs.GPUStorage and np.shares_memory(g.to_cupy(), d)
    c = gs.as_storage(d, device="host", managed="cuda")
    assert type(c) is gs.CudaManagedGPUStorage and np.shares_memory(c.to_numpy(), d)


def test_as_storage_checks_the_layout_against_the_buffer():
    c = np.zeros(SHAPE)  # C order: K unit stride
    assert gs.as_storage(c, layout="IJK").layout == (0, 1, 2)
    assert gs.as_storage(np.asfortranarray(c), defaults="F").layout == (2, 1, 0)
    with pytest.raises(GridbufValueError, match="layout 'KJI'"):
        gs.as_storage(c, layout="KJI")
    with pytest.raises(GridbufValueError, match="defaults"):
        gs.as_storage(c, defaults="gt:cpu_ifirst")


@pytest.mark.parametrize("device, managed, cls", KINDS)
def test_storage_copies_and_keeps_the_dtype(device, managed, cls):
    src = np.arange(np.prod(SHAPE), dtype=np.float32).reshape(SHAPE)
    s = gs.storage(src, **_kw(device, managed))
    assert type(s) is cls and s.dtype == np.float32
    assert np.array_equal(_values(s), src)
    src[0, 0, 0] = 99.0
    assert _values(s)[0, 0, 0] == 0.0


def test_storage_of_a_storage_keeps_axes_and_halo_and_copy_false_wraps():
    t = gs.storage(np.ones((4, 5)), axes="JK", halo=((1, 0), (0, 2)))
    s = gs.storage(t, dtype=np.float32)
    assert (s.axes, s.halo, s.dtype) == ("JK", ((1, 0), (0, 2)), np.float32)
    a = np.zeros(SHAPE)
    assert np.shares_memory(gs.storage(a, copy=False).to_numpy(), a)
    e = gs.storage(copy=False, shape=SHAPE, axes="IJK")
    assert type(e) is gs.CPUStorage and e.shape == SHAPE


# -- keywords ------------------------------------------------------------------------------------


def _unit_axis(s):
    strides = s.strides
    return s.axes[strides.index(min(strides))]


@pytest.mark.parametrize(
    "defaults, axes, unit",
    [
        # Document 000's table: F and C by index, backends by the semantic axis.
        ("F", "IJK", "I"), ("F", "KJI", "K"),
        ("C", "IJK", "K"), ("C", "KJI", "I"),
        ("gtx86", "IJK", "K"), ("gtx86", "KJI", "K"),
        ("gtcuda", "IJK", "I"), ("gtcuda", "KJI", "I"),
    ],
)  # fmt: skip
def test_default_layout_table_of_the_documents(defaults, axes, unit):
    kw = {"device": "host", "managed": None} if defaults == "gtcuda" else {}
    s = gs.zeros((5, 6, 7), axes=axes, defaults=defaults, **kw)
    assert _unit_axis(s) == unit


@pytest.mark.parametrize("defaults", sorted(gb.presets()))
@pytest.mark.parametrize("device, managed, cls", [k for k in KINDS if k.values[0] != "gpu"])
def test_defaults_are_gridbufs_presets_on_any_device(defaults, device, managed, cls):
    s = gs.zeros(SHAPE, np.float32, defaults=defaults, aligned_index=(1, 0, 0), device=device, managed=managed)
    # device alone decides where the buffers live; the preset gives the layout and alignment
    assert type(s) is cls
    assert s.strides == gb.plan(SHAPE, np.float32, backend=defaults, aligned_index=(1, 0, 0)).strides


@pytest.mark.parametrize("axes", ["IJK", "KJI", "JI", "K", "IK", "JK"])
def test_axes_label_the_dims_and_accept_three_entry_shapes(axes):
    s = gs.zeros((4, 5, 6), axes=axes, halo=(1, 2, 0), aligned_index=(1, 2, 0))
    full = {"I": 4, "J": 5, "K": 6}
    if len(axes) < 3:  # document 000: three entries in I, J, K order, the absent ones ignored
        assert s.shape == tuple(full[a] for a in axes)
        assert s.halo == tuple(((1, 1), (2, 2), (0, 0))["IJK".index(a)] for a in axes)
    assert s.axes == axes and s.dims == tuple(axes) and s.ndim == len(axes)


@pytest.mark.parametrize(
    "layout, unit", [("KJI", "I"), ("IJK", "K"), ("IKJ", "J"), ((2, 1, 0), "I"), (lambda axes: "JKI", "I")]
)
def test_layout_by_axis_names_maps_or_callable(layout, unit):
    s = gs.zeros((5, 6, 7), layout=layout)
    assert _unit_axis(s) == unit
    if isinstance(layout, str):  # the first name has the largest stride
        assert s.strides[s.axes.index(layout[0])] == max(s.strides)


def test_layout_names_for_fewer_axes_keep_their_order():
    s = gs.zeros((5, 6), axes="JK", layout="KJI")  # K slowest, then J
    assert s.strides[1] > s.strides[0]


@pytest.mark.parametrize("device, managed, cls", KINDS)
def test_device_and_managed_pick_the_class(device, managed, cls):
    s = gs.zeros((3, 3, 3), **_kw(device, managed))
    assert type(s) is cls and s.device == device and s.managed == managed and s.gpu == (device is not None)


def test_managed_defaults_to_gt4py_with_a_device():
    assert type(gs.zeros((3, 3, 3), device="host")) is gs.SoftwareManagedGPUStorage
    assert type(gs.zeros((3, 3, 3), device="host", managed=False)) is gs.GPUStorage


def test_halo_alignment_and_aligned_index_reach_the_allocation():
    s = gs.zeros((10, 11, 12), defaults="gt:cpu_ifirst", halo=(3, (1, 2), 0), alignment=64, aligned_index=(3, 1, 0))
    assert s.halo == ((3, 3), (1, 2), (0, 0)) and s.domain_shape == (4, 8, 12)
    assert s.alignment == 64 and s.aligned_index == (3, 1, 0)
    a = s.to_numpy()
    first = a.__array_interface__["data"][0] + sum(i * st for i, st in zip((3, 1, 0), a.strides))
    assert first % 64 == 0 and a.strides[1] % 64 == 0  # every row's aligned element is aligned
    p = gb.plan((10, 11, 12), np.float64, backend="gt:cpu_ifirst", halo=(3, (1, 2), 0), alignment=64, aligned_index=(3, 1, 0))
    assert s.strides == p.strides


# -- attributes ----------------------------------------------------------------------------------


@pytest.mark.parametrize("device, managed, cls", KINDS)
def test_attributes(device, managed, cls):
    s = gs.zeros((6, 7, 4), np.float32, axes="IJK", halo=(1, 2, 0), **_kw(device, managed))
    assert s.axes == "IJK" and s.ndim == 3 and s.shape == (6, 7, 4) and s.dtype == np.float32
    assert s.halo == ((1, 1), (2, 2), (0, 0)) and s.domain_shape == (4, 3, 4)
    assert s.nbytes == 6 * 7 * 4 * 4 and len(s.strides) == 3
    has_host = cls is not gs.GPUStorage
    assert (s.data is not None) == has_host
    assert (s.device_data is not None) == (device is not None)
    assert (s.flags is not None) == has_host
    if has_host:
        assert isinstance(s.data, memoryview)
        host = s.to_numpy()
        assert type(s.flags) is type(host.flags) and s.flags.writeable
        assert (s.flags.c_contiguous, s.flags.f_contiguous) == (host.flags.c_contiguous, host.flags.f_contiguous)


def test_flags_follow_the_layout_and_do_not_sync():
    c = gs.zeros((6, 7, 4), axes="IJK", defaults="C")
    f = gs.zeros((6, 7, 4), axes="IJK", defaults="F")
    assert c.flags.c_contiguous and not c.flags.f_contiguous
    assert f.flags.f_contiguous and not f.flags.c_contiguous
    m = gs.zeros((3, 4, 2), axes="IJK", device="host", managed="gt4py")
    m.set_device_modified()
    state = m.sync_state
    before = (state.state, state.device_to_host, state.host_to_device)
    assert m.flags.writeable  # reading flags copies nothing and marks nothing modified
    assert (state.state, state.device_to_host, state.host_to_device) == before == (state.SYNC_DEVICE_DIRTY, 0, 0)


@pytest.mark.parametrize("device, managed, cls", KINDS)
def test_halo_setter_changes_the_domain_not_the_memory(device, managed, cls):
    s = gs.zeros((6, 7, 4), halo=(1, 1, 0), **_kw(device, managed))
    ptr, strides, aligned = _ptr(s.to_ndarray()), s.strides, s.aligned_index
    s.halo = (2, (0, 3), 1)
    assert s.halo == ((2, 2), (0, 3), (1, 1)) and s.domain_shape == (2, 4, 2)
    assert (_ptr(s.to_ndarray()), s.strides, s.aligned_index) == (ptr, strides, aligned)
    with pytest.raises(GridbufValueError, match="halo"):
        s.halo = (4, 0, 0)


@pytest.mark.parametrize("device, managed, cls", KINDS)
def test_domain_view_starts_at_the_first_domain_point(device, managed, cls):
    src = np.arange(6 * 7 * 4, dtype=float).reshape(6, 7, 4)
    s = gs.storage(src, halo=(1, (2, 1), 0), **_kw(device, managed))
    v = s.domain_view
    assert type(v) is cls and v.shape == (4, 4, 4) and v.halo == ((0, 0),) * 3
    assert np.array_equal(_values(v), src[1:5, 2:6, :])
    v[0, 0, 0] = -5.0  # a view: writes reach the storage
    assert _values(s)[1, 2, 0] == -5.0


# -- methods -------------------------------------------------------------------------------------


def test_to_numpy_to_cupy_to_ndarray_on_cpu():
    s = gs.zeros(SHAPE)
    assert isinstance(s.to_numpy(), np.ndarray) and s.to_ndarray() is s.to_numpy()
    with pytest.raises(GridbufDeviceError, match="to_cupy") as err:
        s.to_cupy()
    assert isinstance(err.value, RuntimeError) and "device=None" in str(err.value)


def test_to_numpy_on_a_gpu_storage_raises_and_to_cupy_views():
    s = gs.ones(SHAPE, device="host", managed=None)
    with pytest.raises(GridbufDeviceError, match="to_numpy"):
        s.to_numpy()
    with pytest.raises(GridbufDeviceError):
        np.asarray(s)
    assert s.to_cupy() is s.to_ndarray() and np.all(s.to_cupy() == 1.0)


def test_to_methods_of_software_managed_sync_and_mark():
    s = gs.zeros(SHAPE, device="host")
    s.to_cupy()[...] = 3.0
    assert s.sync_state.state == "device_dirty"
    assert np.all(s.to_numpy() == 3.0)  # made current: one device-to-host copy
    assert s.sync_state.state == "host_dirty" and s.sync_state.device_to_host == 1


@pytest.mark.parametrize("device, managed, cls", [k for k in KINDS if k.values[2] is not gs.SoftwareManagedGPUStorage])
def test_sync_methods_are_no_ops_without_two_buffers(device, managed, cls):
    s = gs.full(SHAPE, 2.0, **_kw(device, managed))
    for call in (s.synchronize, s.set_host_modified, s.set_device_modified, s.set_synchronized):
        assert call() is None
    for call in (s.host_to_device, s.device_to_host):
        assert call() is None and call(force=True) is None
    assert np.all(_values(s) == 2.0)


def test_software_managed_host_to_device_copies_only_when_the_host_is_newer():
    s = gs.zeros(SHAPE, device="host")
    st_ = s.sync_state
    s.host_to_device()
    assert st_.transfers == 0 and st_.state == "clean"
    s.set_host_modified()
    s.to_numpy()[...] = 1.0
    s.host_to_device()
    assert st_.host_to_device == 1 and st_.state == "clean" and np.all(s.mirrored.device(write=False) == 1.0)
    s.to_cupy()[...] = 2.0  # device newer
    s.host_to_device()  # no copy, and not marked in sync: the device's values stay
    assert st_.host_to_device == 1 and st_.state == "device_dirty"
    s.host_to_device(force=True)  # forced: the host's values overwrite the device's
    assert st_.host_to_device == 2 and st_.state == "clean" and np.all(s.mirrored.device(write=False) == 1.0)


def test_software_managed_device_to_host_and_synchronize():
    s = gs.zeros(SHAPE, device="host")
    st_ = s.sync_state
    s.to_cupy()[...] = 4.0
    s.device_to_host()
    assert st_.device_to_host == 1 and st_.state == "clean" and np.all(s.mirrored.host(write=False) == 4.0)
    s.device_to_host(force=True)
    assert st_.device_to_host == 2
    s.to_numpy()[...] = 5.0
    s.synchronize()
    assert st_.state == "clean" and np.all(s.mirrored.device(write=False) == 5.0)
    s.synchronize()
    assert st_.transfers == 3


def test_software_managed_set_methods_drive_the_sync_state():
    s = gs.zeros(SHAPE, device="host")
    s.set_device_modified()
    assert s.sync_state.state == "device_dirty"
    with pytest.raises(GridbufDeviceError):
        s.set_host_modified()  # the device holds changes the host lacks
    assert s.sync_state.state == "device_dirty"
    s.set_synchronized()
    assert s.sync_state.state == "clean" and s.sync_state.transfers == 0
    s.set_host_modified()
    assert s.sync_state.state == "host_dirty"


@pytest.mark.parametrize("device, managed, cls", KINDS)
def test_copy_and_deepcopy_allocate_new_buffers_with_the_same_parameters(device, managed, cls):
    s = gs.storage(np.arange(24.0).reshape(2, 3, 4), halo=(1, 0, 0), defaults="gt:cpu_ifirst", **_kw(device, managed))
    for c in (s.copy(), copy.deepcopy(s)):
        assert type(c) is cls and (c.halo, c.layout, c.axes, c.strides) == (s.halo, s.layout, s.axes, s.strides)
        assert np.array_equal(_values(c), _values(s)) and _ptr(c.to_ndarray()) != _ptr(s.to_ndarray())


@pytest.mark.parametrize("device, managed, cls", KINDS)
def test_getitem_masks_indexed_axes_and_keeps_sliced_ones(device, managed, cls):
    src = np.arange(6 * 7 * 4, dtype=float).reshape(6, 7, 4)
    s = gs.storage(src, **_kw(device, managed))
    v = s[:, 3, 1:3]
    assert type(v) is cls and v.axes == "IK" and v.shape == (6, 2)
    assert np.array_equal(_values(v), src[:, 3, 1:3])
    if cls is not gs.GPUStorage:
        assert s[1, 2, 3] == src[1, 2, 3]
        picked = s[[0, 1], [1, 2], [2, 3]]  # advanced indexing: the values, as a plain array
        assert not isinstance(picked, gs.Storage) and np.array_equal(np.asarray(picked), src[[0, 1], [1, 2], [2, 3]])


@pytest.mark.parametrize("device, managed, cls", KINDS)
def test_setitem_broadcasts_like_a_unary_ufunc_with_out(device, managed, cls):
    kw = _kw(device, managed)
    s = gs.zeros((3, 4, 5), **kw)
    k = gs.storage(np.arange(5.0), axes="K", **kw)
    s[:, 1:3, :] = k  # 000: equivalent to np.positive(k, out=s[:, 1:3, :])
    expected = np.zeros((3, 4, 5))
    expected[:, 1:3, :] = np.arange(5.0)
    assert np.array_equal(_values(s), expected)


# -- types and priorities ------------------------------------------------------------------------


def test_types_and_array_priority():
    for cls in (gs.CPUStorage, gs.GPUStorage, gs.CudaManagedGPUStorage, gs.SoftwareManagedGPUStorage):
        assert issubclass(cls, gs.Storage)
    assert issubclass(gs.CPUStorage, gb.Field)  # a Field under the documents' names
    assert gs.CPUStorage.__array_priority__ == gs.GPUStorage.__array_priority__ == 10
    assert gs.CudaManagedGPUStorage.__array_priority__ == gs.SoftwareManagedGPUStorage.__array_priority__ == 11
    assert gs.SyncState is gb.SyncState


# -- ufuncs, broadcasting, output parameters --------------------------------------------------

ON_HOST_KINDS = [k for k in KINDS if k.values[0] != "gpu"]


@pytest.mark.parametrize("device, managed, cls", ON_HOST_KINDS)
@given(ni=st.integers(1, 5), nj=st.integers(1, 5), nk=st.integers(1, 5), seed=st.integers(0, 2**16))
def test_ij_plus_k_is_ijk(device, managed, cls, ni, nj, nk, seed):
    rng = np.random.default_rng(seed)
    a_np, b_np = rng.random((ni, nj)), rng.random(nk)
    a = gs.storage(a_np, axes="IJ", device=device, managed=managed)
    b = gs.storage(b_np, axes="K", device=device, managed=managed)
    for c in (a + b, np.add(a, b)):
        assert type(c) is cls and c.axes == "IJK" and c.shape == (ni, nj, nk)
        assert np.allclose(_values(c), a_np[:, :, None] + b_np[None, None, :])


@pytest.mark.parametrize("device, managed, cls", ON_HOST_KINDS)
def test_reductions_mask_the_reduced_axis(device, managed, cls):
    src = np.arange(3 * 4 * 5, dtype=float).reshape(3, 4, 5)
    s = gs.storage(src, device=device, managed=managed)
    r = np.add.reduce(s, axis=2)
    assert type(r) is cls and r.axes == "IJ" and np.array_equal(_values(r), src.sum(axis=2))
    m = np.maximum.reduce(s, axis=0)
    assert m.axes == "JK" and np.array_equal(_values(m), src.max(axis=0))
    t = np.sum(s, axis=1)
    assert t.axes == "IK" and np.array_equal(_values(t), src.sum(axis=1))
    assert np.all(s >= 0.0) == True  # noqa: E712 - np.all of a storage reduces every axis


@pytest.mark.parametrize("device, managed, cls", ON_HOST_KINDS)
def test_output_halo_is_the_intersection_of_the_domains(device, managed, cls):
    # K: a's domain is [1, 8), b's is [3, 9): the result's is [3, 8) of 10 levels.
    a = gs.ones((10,), axes="K", halo=((1, 2),), device=device, managed=managed)
    b = gs.ones((10,), axes="K", halo=((3, 1),), device=device, managed=managed)
    assert (a + b).halo == ((3, 2),) and (b * a).halo == ((3, 2),)


@pytest.mark.parametrize("device, managed, cls", ON_HOST_KINDS)
def test_output_layout_is_the_first_storages(device, managed, cls):
    i_first = gs.ones(SHAPE, defaults="gt:cpu_ifirst", device=device, managed=managed)
    k_first = gs.ones(SHAPE, defaults="gt:cpu_kfirst", device=device, managed=managed)
    assert i_first.layout != k_first.layout
    assert (i_first + k_first).layout == i_first.layout
    assert (k_first + i_first).layout == k_first.layout
    assert (2.0 * k_first + i_first).layout == k_first.layout


def test_output_aligned_index_is_the_largest_and_alignment_the_lcm():
    a = gs.ones(SHAPE, aligned_index=(1, 0, 0), alignment=64)
    b = gs.ones(SHAPE, aligned_index=(0, 2, 0), alignment=128)
    c = a + b
    assert c.aligned_index == (1, 2, 0) and c.alignment == math.lcm(64, 128)


@pytest.mark.parametrize("device, managed, cls", ON_HOST_KINDS)
def test_output_parameter_and_replication_along_missing_axes(device, managed, cls):
    kw = {"device": device, "managed": managed}
    ij = gs.storage(np.arange(12.0).reshape(3, 4), axes="IJ", **kw)
    out = gs.zeros((3, 4, 5), **kw)
    res = np.add(ij, 1.0, out=out)
    assert res is out
    assert np.array_equal(_values(out), np.broadcast_to((np.arange(12.0).reshape(3, 4) + 1.0)[:, :, None], (3, 4, 5)))


def test_plain_arrays_of_the_same_or_a_3d_shape_broadcast():
    s = gs.ones((3, 4, 5))
    assert np.array_equal(_values(s + np.full((3, 4, 5), 2.0)), np.full((3, 4, 5), 3.0))
    col = np.arange(5.0).reshape(1, 1, 5)
    r = s * col
    assert type(r) is gs.CPUStorage and np.array_equal(_values(r), np.broadcast_to(col, (3, 4, 5)))


# -- mixing devices --------------------------------------------------------------------------------


def test_cpu_storage_refuses_device_operands_and_writes_nothing():
    c = gs.ones(SHAPE)
    g = gs.ones(SHAPE, device="host", managed=None)
    with pytest.raises(GridbufDeviceError, match="GPUStorage"):
        c + g
    out = gs.zeros(SHAPE)
    with pytest.raises(GridbufDeviceError):
        np.add(c, g, out=out)
    assert np.all(out.to_numpy() == 0.0)
    with pytest.raises(GridbufDeviceError):
        c[...] = g
    assert np.all(c.to_numpy() == 1.0)


def test_gpu_storage_refuses_host_arrays_and_computes_on_the_device():
    g = gs.ones(SHAPE, device="host", managed=None)
    with pytest.raises(GridbufDeviceError, match="host|device"):
        g + np.ones(SHAPE)
    with pytest.raises(GridbufDeviceError):
        g[...] = np.zeros(SHAPE)
    assert np.all(g.to_cupy() == 1.0)
    r = g + g * 2.0
    assert type(r) is gs.GPUStorage and np.all(r.to_cupy() == 3.0)


def test_software_managed_computes_on_the_device_unless_no_operand_is_there():
    m = gs.ones(SHAPE, device="host")  # clean: counts as on the device
    c = gs.full(SHAPE, 2.0)
    r = m + c
    assert type(r) is gs.SoftwareManagedGPUStorage and r.sync_state.state == "device_dirty"
    r2 = c + m  # the managed storage has priority: it handles the operation either way
    assert type(r2) is gs.SoftwareManagedGPUStorage and r2.sync_state.state == "device_dirty"
    m.set_host_modified()  # modified on the host: now it counts as a host array
    r3 = m + c
    assert r3.sync_state.state == "host_dirty" and np.all(_values(r3) == 3.0)
    assert np.all(_values(r) == 3.0) and np.all(_values(r2) == 3.0)


def test_software_managed_setitem_writes_on_the_side_of_the_value():
    target = gs.zeros(SHAPE, device="host")
    on_device = gs.full(SHAPE, 7.0, device="host")  # clean: on the device
    target[...] = on_device
    assert target.sync_state.state == "device_dirty"
    assert np.all(_values(target) == 7.0)
    target[:, :, 0] = np.full(SHAPE[:2], 1.0)  # a host value: written on the host
    assert target.sync_state.state == "host_dirty"
    expected = np.full(SHAPE, 7.0)
    expected[:, :, 0] = 1.0
    assert np.array_equal(_values(target), expected)


def test_cuda_managed_computes_on_the_device_iff_every_operand_is_there():
    c = gs.ones(SHAPE, device="host", managed="cuda")
    g = gs.ones(SHAPE, device="host", managed=None)
    assert c._compute_side([c, g, 2.0]) == "device"
    assert c._compute_side([c, np.ones(SHAPE)]) == "host"
    assert type(c + g) is gs.CudaManagedGPUStorage and type(g + c) is gs.CudaManagedGPUStorage
    assert np.all(_values(c + np.ones(SHAPE)) == 2.0)
    assert c._compute_side([g, np.ones(SHAPE), c]) == "host"
    with pytest.raises(GridbufDeviceError):
        np.add(g, np.ones(SHAPE), out=c)  # host compute (a NumPy operand) cannot read the GPU storage
    assert np.all(_values(c) == 1.0)


# -- stencils accept storages ------------------------------------------------------------------------


@pytest.mark.parametrize("device, managed, cls", [k for k in ON_HOST_KINDS if k.values[2] is not gs.GPUStorage])
def test_native_kernels_run_on_storages(device, managed, cls):
    src = np.random.default_rng(1).random((8, 8, 3))
    inp = gs.storage(src, device=device, managed=managed)
    out = gs.zeros((8, 8, 3), device=device, managed=managed)
    gb.kernels.copy(inp, out, origin=(0, 0, 0))
    assert np.array_equal(_values(out), src)


# -- bad input ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, exc, words",
    [
        ({"axes": "IXK"}, GridbufValueError, ["axes", "IXK"]),
        ({"axes": "IIK"}, GridbufValueError, ["axes", "IIK"]),
        ({"layout": "IJX"}, GridbufValueError, ["layout", "IJX"]),
        ({"layout": (0, 0, 1)}, GridbufValueError, ["layout"]),
        ({"defaults": "gtfoo"}, UnknownPresetError, ["defaults", "gtfoo"]),
        ({"managed": "cuda"}, GridbufValueError, ["managed", "cuda", "device"]),
        ({"managed": "gt4py"}, GridbufValueError, ["managed", "gt4py", "device"]),
        ({"device": "tpu"}, GridbufValueError, ["device", "tpu"]),
        ({"device": "host", "managed": "yes"}, GridbufValueError, ["managed", "yes"]),
        ({"colour": "red"}, GridbufTypeError, ["colour"]),
    ],
)
@pytest.mark.parametrize("make", ["zeros", "storage", "as_storage"])
def test_bad_keywords_raise_naming_the_parameter_and_write_nothing(kwargs, exc, words, make):
    data = np.arange(np.prod(SHAPE), dtype=float).reshape(SHAPE)
    before = data.copy()
    with pytest.raises(exc) as err:
        if make == "zeros":
            gs.zeros(SHAPE, **kwargs)
        else:
            getattr(gs, make)(data, **kwargs)
    assert isinstance(err.value, GridbufError)
    for w in words:
        assert w in str(err.value)
    assert np.array_equal(data, before)


@given(axes=st.text(alphabet="IJKXYZij0", min_size=1, max_size=4))
def test_axes_are_accepted_exactly_when_the_core_accepts_them_as_dims(axes):
    shape = (2,) * len(axes)
    try:
        expected = gb.plan(shape, np.float64, dims=axes).dims
    except GridbufError:
        expected = None
    if expected is None:
        with pytest.raises(GridbufError, match="axes"):
            gs.zeros(shape, axes=axes)
    else:
        assert gs.zeros(shape, axes=axes).dims == tuple(expected)


def test_to_cupy_of_a_cpu_storage_is_a_gridbuf_error():
    with pytest.raises(GridbufDeviceError) as err:
        gs.ones((2, 2, 2)).to_cupy()
    assert isinstance(err.value, RuntimeError) and "to_cupy" in str(err.value)


def test_import_of_gridbuf_does_not_import_the_storage_module_or_optional_dependencies():
    code = (
        "import sys, gridbuf; "
        "assert 'gridbuf.storage' not in sys.modules; "
        "gridbuf.storage.zeros((2, 2, 2)); "
        "assert not {'cupy', 'xarray', 'gt4py'} & set(sys.modules), sorted(sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_plain_arrays_of_other_shapes_are_refused():
    # 000 "Mixing Types": only the broadcast shape, or 3-D with ones where broadcasting is needed.
    with pytest.raises(GridbufValueError):
        gs.ones((3, 4, 5)) + np.ones((4, 5))


def test_software_managed_element_reads_see_the_newest_side():
    s = gs.zeros(SHAPE, device="host")
    s.to_cupy()[2, 3, 1] = 8.0  # device modified
    assert s[2, 3, 1] == 8.0 and s.sync_state.device_to_host == 1
    assert np.array_equal(s[[2, 0], [3, 0], [1, 0]], [8.0, 0.0])


# -- the device="gpu" code paths against tests/fake_cupy.py (host memory behind CuPy's API) -------


@pytest.fixture
def fake_cp(monkeypatch):
    import fake_cupy

    monkeypatch.setitem(sys.modules, "cupy", fake_cupy)
    fake_cupy.reset()
    return fake_cupy


def test_gpu_paths_with_a_fake_cupy_allocate_sync_and_refuse(fake_cp):
    m = gs.zeros(SHAPE, device="gpu", halo=(1, 1, 0))
    assert type(m) is gs.SoftwareManagedGPUStorage and m.device == "gpu" and m.halo == ((1, 1), (1, 1), (0, 0))
    assert isinstance(m.to_cupy(), fake_cp.ndarray) and m.sync_state.state == "device_dirty"
    m.to_numpy()[...] = 3.0  # one device-to-host copy (the device side was marked), then host modified
    m.host_to_device()
    assert fake_cp.TRANSFERS == {"host_to_device": 1, "device_to_host": 1} and m.sync_state.state == "clean"
    assert np.all(m.to_cupy().get() == 3.0)  # .get() is a transfer of its own
    before = fake_cp.TRANSFERS["device_to_host"]
    m.synchronize()  # the device side is marked modified by to_cupy: one copy back
    assert fake_cp.TRANSFERS["device_to_host"] == before + 1 and m.sync_state.state == "clean"

    g = gs.ones(SHAPE, device="gpu", managed=None, defaults="gt:cpu_kfirst")
    assert type(g) is gs.GPUStorage and g.device == "gpu" and isinstance(g.to_cupy(), fake_cp.ndarray)
    assert g.strides == gb.plan(SHAPE, np.float64, backend="gt:cpu_kfirst").strides  # the preset's layout, on the device
    assert g.data is None and g.device_data is not None and "gpu" in g.__gt_data_interface__
    with pytest.raises(GridbufDeviceError):
        g.to_numpy()
    with pytest.raises(GridbufDeviceError):
        gs.ones(SHAPE) + g  # a CPU storage never reads device memory
    w = gs.as_storage(device_data=g.to_cupy())
    assert type(w) is gs.GPUStorage and w.to_cupy().data.ptr == g.to_cupy().data.ptr


@given(
    n=st.integers(6, 12),
    ha=st.tuples(st.integers(0, 3), st.integers(0, 3)),
    hb=st.tuples(st.integers(0, 3), st.integers(0, 3)),
    hij=st.tuples(st.integers(0, 2), st.integers(0, 2)),
)
def test_output_halo_is_the_intersection_for_any_halos(n, ha, hb, hij):
    # Equal shapes: the intersection of [lo, n - hi) per axis has halo (max lo, max hi).
    a = gs.ones((n, 5, 4), halo=(ha, hij, 0))
    b = gs.ones((n, 5, 4), halo=(hb, 0, 0), device="host")
    expected = ((max(ha[0], hb[0]), max(ha[1], hb[1])), hij, (0, 0))
    assert (a * b).halo == expected and (b - a).halo == expected
    assert (a * b).domain_shape == (n - expected[0][0] - expected[0][1], 5 - sum(hij), 4)
