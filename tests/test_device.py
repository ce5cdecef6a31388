"""Device paths: GPU presets, from_array to and on the device, ``*_like`` of device arrays,
unified memory, and mirrored fields whose device side is CuPy.

Every test runs twice: with ``cp="fake"`` against ``tests/fake_cupy.py`` (host memory behind
CuPy's interface, transfers counted; runs everywhere), and with ``cp="cupy"`` against the real
CuPy on a GPU (skipped where CuPy or a GPU is missing).
"""

from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pytest

import gridbuf as gb
from gridbuf import mirrored

import fake_cupy

SHAPE = (10, 11, 12)


def _real_cupy():
    if importlib.util.find_spec("cupy") is None:
        pytest.skip("CuPy is not installed")
    import cupy

    try:
        if cupy.cuda.runtime.getDeviceCount() == 0:
            pytest.skip("no GPU visible")
    except Exception as exc:  # noqa: BLE001 - no usable CUDA runtime
        pytest.skip(f"no usable GPU ({exc})")
    return cupy


@pytest.fixture(params=["fake", "cupy"])
def cp(request, monkeypatch):
    if request.param == "fake":
        monkeypatch.setitem(sys.modules, "cupy", fake_cupy)
        fake_cupy.reset()
        return fake_cupy
    return _real_cupy()


def _host(cp, a):
    cp.cuda.get_current_stream().synchronize()
    return a.get()


def _transfers(cp):
    """Host<->device copies so far (the fake counts them; None for the real CuPy)."""
    return dict(fake_cupy.TRANSFERS) if cp is fake_cupy else None


def _aligned(ptr_of_aligned, plan):
    return ptr_of_aligned % plan.alignment == 0


@pytest.mark.parametrize("backend", ["gt:gpu", "dace:gpu", "dace:gpu_IJK"])
def test_gpu_presets_allocate_the_plan_on_the_device(cp, backend):
    aligned_index = (1, 0, 0)
    p = gb.plan(SHAPE, np.float64, backend=backend, aligned_index=aligned_index)
    z = gb.zeros(SHAPE, backend=backend, aligned_index=aligned_index)
    f = gb.full(SHAPE, 3.5, backend=backend, aligned_index=aligned_index)
    for a in (z, f):
        assert isinstance(a, cp.ndarray)
        assert a.strides == p.strides and a.shape == p.shape
        assert _aligned(a.data.ptr + a.strides[0], p)
    assert not _host(cp, z).any()
    assert np.all(_host(cp, f) == 3.5)
    if cp is fake_cupy:
        assert _transfers(cp) == {"host_to_device": 0, "device_to_host": 2}  # only the two .get()


def test_from_array_host_to_device_is_one_transfer_plus_a_layout_change(cp):
    data = np.random.default_rng(1).random(SHAPE)  # C order; gt:gpu has I unit stride
    a = gb.from_array(data, backend="gt:gpu")
    assert isinstance(a, cp.ndarray) and a.strides == gb.plan(SHAPE, backend="gt:gpu").strides
    if cp is fake_cupy:
        assert _transfers(cp)["host_to_device"] == 1
    assert np.array_equal(_host(cp, a), data)


def test_from_array_of_a_device_array_stays_on_the_device(cp):
    data = np.random.default_rng(2).random(SHAPE)
    src = cp.asarray(data)
    before = _transfers(cp)
    a = gb.from_array(src, backend="dace:gpu_IJK", dtype=np.float64)
    b = gb.from_array(src, backend="gt:gpu")
    assert _transfers(cp) == before  # no host round trip
    assert isinstance(a, cp.ndarray) and isinstance(b, cp.ndarray)
    assert b.strides == gb.plan(SHAPE, backend="gt:gpu").strides
    assert np.array_equal(_host(cp, a), data) and np.array_equal(_host(cp, b), data)


def test_from_array_of_a_device_array_with_a_host_preset_names_the_device(cp):
    src = cp.asarray(np.ones(SHAPE))
    with pytest.raises(gb.GridbufDeviceError, match="lives in GPU memory.*backend \"gt:cpu_ifirst\""):
        gb.from_array(src, backend="gt:cpu_ifirst")


def test_like_of_device_arrays_keeps_device_layout_and_alignment(cp):
    a = gb.zeros(SHAPE, np.float32, backend="gt:gpu", aligned_index=(2, 1, 0), halo=(2, 1, 0))
    p = gb.plan(SHAPE, np.float32, backend="gt:gpu", aligned_index=(2, 1, 0), halo=(2, 1, 0))
    for like in (gb.zeros_like(a), gb.empty_like(a), gb.full_like(a, 2.0), gb.ones_like(a)):
        assert isinstance(like, cp.ndarray)
        assert like.strides == a.strides and like.dtype == np.float32
        assert _aligned(like.data.ptr + 2 * like.strides[0] + like.strides[1], p)
    # A foreign device array: stays on the device and keeps its stride order.
    foreign = cp.asarray(np.ones(SHAPE))  # C order
    like = gb.zeros_like(foreign)
    assert isinstance(like, cp.ndarray)
    assert np.argsort(like.strides).tolist() == np.argsort(foreign.strides).tolist()


def test_like_of_a_dataarray_holding_a_device_array(cp):
    if cp is fake_cupy:
        pytest.skip("xarray wraps only a real CuPy array (NEP-18)")
    xr = pytest.importorskip("xarray")
    a = gb.zeros(SHAPE, backend="gt:gpu")
    da = xr.DataArray(a, dims=("I", "J", "K"))
    like = gb.ones_like(da)
    assert isinstance(like, cp.ndarray) and like.strides == a.strides


def test_unified_memory_is_one_allocation_for_numpy_and_cupy(cp):
    p = gb.plan(SHAPE, backend="gt:gpu", aligned_index=(1, 0, 0))
    a = gb.full(SHAPE, 2.0, backend="gt:gpu", aligned_index=(1, 0, 0), managed="cuda")
    assert isinstance(a, np.ndarray) and a.strides == p.strides
    assert _aligned(a.__array_interface__["data"][0] + a.strides[0], p)
    c = gb.as_cupy(a)
    assert isinstance(c, cp.ndarray) and c.data.ptr == a.__array_interface__["data"][0]
    assert c.strides == a.strides
    c[1:3] = 5.0  # written on the device...
    cp.cuda.get_current_stream().synchronize()
    assert np.all(a[1:3] == 5.0) and np.all(a[3:] == 2.0)  # ...read on the host, no copy
    v = gb.as_cupy(a[2:, 1:])  # views too
    assert v.data.ptr == a[2:, 1:].__array_interface__["data"][0]
    z = gb.zeros(SHAPE, backend="gt:cpu_ifirst", managed="cuda")  # any preset's plan
    assert isinstance(z, np.ndarray) and not z.any()
    if cp is fake_cupy:
        assert _transfers(cp) == {"host_to_device": 0, "device_to_host": 0}


def test_from_array_into_unified_memory(cp):
    data = np.arange(np.prod(SHAPE), dtype=np.float64).reshape(SHAPE)
    a = gb.from_array(data, backend="gt:gpu", managed="cuda")
    b = gb.from_array(cp.asarray(data), backend="gt:gpu", managed="cuda")
    assert isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
    assert np.array_equal(a, data) and np.array_equal(b, data)


def test_mirrored_gpu_field_copies_only_when_needed(cp):
    data = np.random.default_rng(3).random(SHAPE)
    m = mirrored.from_array(data, backend="gt:gpu")
    s = m.sync_state
    assert m.device_kind == "gpu" and s.state == "host_dirty"
    d = m.device(write=False)
    assert isinstance(d, cp.ndarray) and d.strides == m.strides
    m.device(write=False)
    assert (s.host_to_device, s.device_to_host) == (1, 0)
    with m.access("device") as d:
        d[0] = -1.0
    h = m.host(write=False)
    assert h[0, 0, 0] == -1.0 and np.array_equal(h[1:], data[1:])
    assert (s.host_to_device, s.device_to_host) == (1, 1)
    if cp is fake_cupy:
        assert _transfers(cp) == {"host_to_device": 1, "device_to_host": 1}


def test_mirrored_gpu_fills_and_plans(cp):
    m = mirrored.full(SHAPE, 4.0, backend="dace:gpu", aligned_index=(1, 1, 0))
    p = gb.plan(SHAPE, backend="dace:gpu", aligned_index=(1, 1, 0))
    assert m._pair.host.strides == m._pair.device.strides == p.strides
    assert np.all(_host(cp, m.device(write=False)) == 4.0) and np.all(m.host(write=False) == 4.0)
    assert m.sync_state.transfers == 0
    cpu_plan = mirrored.zeros(SHAPE, backend="gt:cpu_ifirst")  # a host preset's plan on both sides
    assert cpu_plan._pair.device.strides == gb.plan(SHAPE, backend="gt:cpu_ifirst").strides


def test_mirrored_gpu_plain_interfaces_are_pessimistic(cp):
    m = mirrored.zeros(SHAPE, backend="gt:gpu")
    c = cp.asarray(m)  # __cuda_array_interface__: may write on the device
    assert m.sync_state.state == "device_dirty" and c.data.ptr == m._pair.device.data.ptr
    np.asarray(m)  # __array_interface__: one copy to the host, then the host may write
    assert m.sync_state.state == "host_dirty" and m.sync_state.device_to_host == 1


def test_mirrored_gpu_native_kernel_leaves_device_of_outputs_stale(cp):
    inp = mirrored.from_array(np.random.default_rng(4).random(SHAPE), backend="gt:gpu")
    out = mirrored.zeros(SHAPE, backend="gt:gpu")
    gb.kernels.copy(inp, out)
    assert out.sync_state.state == "host_dirty" and out.sync_state.transfers == 0
    dev = out.device(write=False)
    out.device(write=False)
    assert out.sync_state.host_to_device == 1
    assert np.array_equal(_host(cp, dev), inp.host(write=False))


def test_mirrored_gpu_data_interface_entries(cp):
    m = mirrored.zeros(SHAPE, backend="gt:gpu")
    iface = m.__gt_data_interface__
    assert iface["gpu"] is iface["cuda"]
    assert iface["gpu"]["data"][0] == m._pair.device.data.ptr
    assert iface["cpu"]["data"][0] == m._pair.host.__array_interface__["data"][0]
    with gb.acquired([m], outputs=[m], device="gpu"):
        pass
    assert m.sync_state.state == "device_dirty"


def test_as_mirrored_wraps_a_cupy_buffer_without_copying(cp):
    host = np.zeros(SHAPE)
    dev = cp.asarray(np.full(SHAPE, 7.0))
    m = gb.as_mirrored(host, dev, sync_state="device_dirty")
    assert m.device_kind == "gpu" and m._pair.device.data.ptr == dev.data.ptr
    assert m.host(write=False)[0, 0, 0] == 7.0 and host[0, 0, 0] == 7.0
    with pytest.raises(gb.GridbufDeviceError, match="GPU memory"):
        gb.as_mirrored(dev, host, sync_state="clean")


def test_assigning_from_another_gpu_is_refused(cp):
    if cp is not fake_cupy:
        pytest.skip("needs two GPUs; the fake pretends")
    m = mirrored.zeros((2, 3), backend="gt:gpu")
    other = cp.asarray(np.ones((2, 3)))
    other.data.device_id = 1
    with pytest.raises(gb.GridbufDeviceError, match="different GPUs.*cuda:1"):
        m[...] = other
    assert m.sync_state.state == "clean" and not m.host(write=False).any()
