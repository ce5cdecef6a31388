"""Mirrored fields on the host stand-in (device="host"): the sync state, copy scheduling and
transfer counts that the GPU device side runs too, on any machine."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gridbuf as gb
from gridbuf import mirrored

SHAPE = (6, 7, 4)


def _mf(backend="gt:cpu_ifirst", **kw):
    return mirrored.from_array(np.arange(np.prod(SHAPE), dtype=float).reshape(SHAPE), device="host", backend=backend, **kw)


def test_import_does_not_import_cupy():
    assert "cupy" not in sys.modules or pytest.skip("cupy imported by another test")


@pytest.mark.parametrize("backend", ["gt:gpu", "dace:gpu", "dace:gpu_IJK", "gt:cpu_ifirst", "C"])
def test_both_buffers_follow_the_plan(backend):
    m = mirrored.zeros(SHAPE, np.float32, device="host", backend=backend, aligned_index=(1, 0, 0))
    p = gb.plan(SHAPE, np.float32, backend=backend, aligned_index=(1, 0, 0))
    h, d = m._pair.host, m._pair.device
    assert h.strides == d.strides == p.strides
    for a in (h, d):
        assert (a.__array_interface__["data"][0] + a.strides[0]) % p.alignment == 0
    assert m.plan.strides == p.strides
    assert m.sync_state.state == "clean" and m.sync_state.transfers == 0


def test_fills_need_no_transfer():
    m = mirrored.full(SHAPE, 2.5, device="host")
    assert np.all(m.device(write=False) == 2.5) and np.all(m.host(write=False) == 2.5)
    assert m.sync_state.transfers == 0


def test_from_array_marks_the_host_and_copies_once():
    data = np.random.default_rng(0).random(SHAPE)
    m = mirrored.from_array(data, device="host", backend="gt:gpu")
    assert m.sync_state.state == "host_dirty"
    assert np.array_equal(m.device(write=False), data)
    assert np.array_equal(m.device(write=False), data)
    assert (m.sync_state.host_to_device, m.sync_state.device_to_host) == (1, 0)


def test_each_sync_copies_only_when_needed():
    m = _mf()
    s = m.sync_state
    assert m.sync() == "host_to_device" and m.sync() is None
    with m.access("device") as d:
        d[0, 0, 0] = -1.0
    assert s.state == "device_dirty"
    assert m.host(write=False)[0, 0, 0] == -1.0
    assert s.state == "clean"
    m.host(write=False)
    m.device(write=False)
    assert (s.host_to_device, s.device_to_host) == (1, 1)


def test_views_share_the_state_and_sync_whole_buffers():
    m = _mf()
    m.sync()
    v = m[1:3, ::2]
    assert v.sync_state is m.sync_state
    with v.access("device") as d:
        d[...] = 100.0
    assert m.sync_state.state == "device_dirty"
    h = m.host(write=False)
    assert np.all(h[1:3, ::2] == 100.0) and h[0, 0, 0] == 0.0
    assert m.sync_state.device_to_host == 1


def test_plain_interfaces_are_pessimistic():
    m = _mf()
    m.sync()
    a = np.asarray(m)  # may write: the device side is stale now
    assert m.sync_state.state == "host_dirty"
    a[0, 0, 0] = 42.0
    assert m.device(write=False)[0, 0, 0] == 42.0
    assert not hasattr(m, "__cuda_array_interface__")  # a stand-in is not CUDA memory
    assert m.sync_state.state == "clean"
    np.array(m, copy=True)  # NumPy reads __array_interface__ before __array__: pessimistic too
    assert m.sync_state.state == "host_dirty"


def test_data_interface_protocol_with_acquired():
    m = _mf()
    out = mirrored.zeros(SHAPE, device="host", backend="gt:cpu_ifirst")
    iface = m.__gt_data_interface__
    assert set(iface) == {"cpu", "gpu", "cuda"}
    assert iface["gpu"]["data"][0] == m._pair.device.__array_interface__["data"][0]
    with gb.acquired([m, out], outputs=[out], device="gpu"):
        assert m.sync_state.device_open == 1
        out._pair.device[...] = m._pair.device + 1
    assert m.sync_state.state == "clean" and m.sync_state.host_to_device == 1
    assert out.sync_state.state == "device_dirty" and out.sync_state.transfers == 0
    assert np.array_equal(out.host(write=False), m.host(write=False) + 1)
    assert out.sync_state.device_to_host == 1


def test_conflicting_access_is_refused_and_changes_nothing():
    m = _mf()
    with m.access("host"):
        before = repr(m.sync_state)
        with pytest.raises(gb.GridbufDeviceError, match="device side .* host side"):
            m.device()
        with pytest.raises(gb.GridbufDeviceError):
            m.mark_modified("device")
        assert repr(m.sync_state) == before
    with pytest.raises(gb.GridbufDeviceError, match="no access"):
        m.sync_state.release("host")
    with pytest.raises(gb.GridbufDeviceError, match="no access"):
        m.sync_state.touch("device")


def test_mark_modified_refuses_to_lose_data():
    m = _mf()  # host newer
    with pytest.raises(gb.GridbufDeviceError, match="sync first"):
        m.mark_modified("device")
    m.mark_modified("host")
    assert m.sync_state.state == "host_dirty"


def test_failed_copy_leaves_the_state():
    s = gb.SyncState("host_dirty")

    def boom(src, dst):
        raise RuntimeError("copy failed")

    with pytest.raises(RuntimeError, match="copy failed"):
        s.acquire("device", boom)
    assert (s.state, s.device_open, s.transfers) == ("host_dirty", 0, 0)
    assert s.acquire("device", lambda a, b: None) == "host_to_device"
    assert (s.state, s.device_open, s.transfers) == ("clean", 1, 1)


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda: gb.SyncState("dirty"), gb.GridbufValueError, "invalid state 'dirty'"),
        (lambda: gb.SyncState(1), gb.GridbufTypeError, "invalid type for state"),
        (lambda: gb.SyncState().touch("gpu0"), gb.GridbufValueError, "invalid side 'gpu0'"),
        (lambda: gb.SyncState().acquire("host", 3), gb.GridbufTypeError, "invalid type for copy"),
        (lambda: mirrored.zeros(SHAPE, device="tpu"), gb.GridbufValueError, "invalid device 'tpu'"),
        (lambda: _mf().access("both").__enter__(), gb.GridbufValueError, "invalid side 'both'"),
        (lambda: mirrored.zeros((-1, 2), device="host"), gb.GridbufValueError, "shape"),
    ],
)
def test_bad_input_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_as_mirrored_wraps_without_copying():
    h = np.zeros(SHAPE)
    d = np.ones(SHAPE)
    m = gb.as_mirrored(h, d, sync_state="device_dirty")
    assert np.shares_memory(m.host(write=False), h) and h[0, 0, 0] == 1.0
    assert m.sync_state.device_to_host == 1


def test_as_mirrored_bad_input_writes_nothing():
    h = np.zeros(SHAPE)
    with pytest.raises(gb.GridbufValueError, match="same plan"):
        gb.as_mirrored(h, np.ones(SHAPE, order="F"), sync_state="clean")
    with pytest.raises(gb.GridbufValueError, match="shares memory"):
        gb.as_mirrored(h, h[...], sync_state="clean")
    with pytest.raises(gb.GridbufTypeError, match="sync_state"):
        gb.as_mirrored(h, np.ones(SHAPE), sync_state=None)
    with pytest.raises(gb.GridbufTypeError, match="device_data"):
        gb.as_mirrored(h, [1, 2], sync_state="clean")
    assert not h.any()


def test_as_mirrored_shares_a_state_only_with_views_of_the_same_buffers():
    m = _mf()
    v = gb.as_mirrored(m._pair.host[2:], m._pair.device[2:], sync_state=m.sync_state)
    with v.access("device") as d:
        d[...] = 5.0
    assert m.sync_state.state == "device_dirty"
    assert np.all(m.host(write=False)[2:] == 5.0) and m.host(write=False)[0, 0, 0] == 0.0
    with pytest.raises(gb.GridbufValueError, match="same buffers"):
        gb.as_mirrored(np.zeros(SHAPE), np.zeros(SHAPE), sync_state=m.sync_state)
    with pytest.raises(gb.GridbufValueError, match="same buffers"):
        gb.as_mirrored(m._pair.host[2:4], m._pair.device[3:5], sync_state=m.sync_state)


# -- the binder and gb.acquired ---------------------------------------------------------------


@pytest.mark.parametrize("kernel", ["copy", "laplacian"])
def test_native_kernel_acquires_host_and_leaves_the_device_of_outputs_stale(kernel):
    inp = _mf()
    out = mirrored.zeros(SHAPE, device="host", backend="gt:cpu_ifirst")
    inp.sync()
    with inp.access("device") as d:  # the newest input is on the device
        d[...] *= 2
    out.sync_state.set_state("clean")
    expected_in = inp._pair.device.copy()
    if kernel == "copy":
        gb.kernels.copy(inp, out)
    else:
        gb.kernels.laplacian(inp, out, origin=(1, 1, 0), domain=(SHAPE[0] - 2, SHAPE[1] - 2, SHAPE[2]))
    # Every field was acquired on the host and released; the input was synced to the host first.
    assert inp.sync_state.device_to_host == 1 and inp.sync_state.host_open == 0
    assert np.array_equal(inp._pair.host, expected_in)
    # The output was touched on the host: its device side is stale, and a device access copies once.
    assert out.sync_state.state == "host_dirty" and out.sync_state.host_open == 0
    assert out.sync_state.transfers == 0
    dev = out.device(write=False)
    assert np.array_equal(dev, out._pair.host)
    out.device(write=False)
    assert out.sync_state.host_to_device == 1
    if kernel == "copy":
        assert np.array_equal(dev, expected_in)


def test_native_kernel_leaves_inputs_clean():
    # The binder reads memory whose data-interface entry has callbacks only through that entry
    # (extract.rs), so the pessimistic plain-interface read never dirties an input.
    inp = _mf()
    out = mirrored.zeros(SHAPE, device="host")
    inp.sync()
    gb.kernels.copy(inp, out)
    assert inp.sync_state.state == "clean"


def test_kernel_through_field_wrappers_shares_the_state():
    inp = _mf()
    out = mirrored.zeros(SHAPE, device="host", backend="gt:cpu_ifirst")
    out.sync()
    gb.kernels.copy(gb.Field(inp), gb.Field(out, dims="IJK"))
    assert out.sync_state.state == "host_dirty"
    assert np.array_equal(out.device(write=False), inp.host(write=False))


def test_dataarray_keeps_the_mirrored_field_and_its_state():
    xr = pytest.importorskip("xarray")
    m = _mf()
    out = mirrored.zeros(SHAPE, device="host", backend="gt:cpu_ifirst")
    m.sync()
    da, do = xr.DataArray(m, dims=("I", "J", "K")), xr.DataArray(out, dims=("I", "J", "K"))
    assert da.data is m and m.sync_state.state == "clean"  # a duck array: kept, not converted
    assert set(da.__gt_data_interface__) == {"cpu", "gpu", "cuda"} and da.__gt_dims__ == ("I", "J", "K")
    view = da.transpose("K", "J", "I")[1:]
    assert isinstance(view.data, gb.MirroredField) and view.data.sync_state is m.sync_state
    gb.kernels.copy(da, do)  # through the DataArrays' data interface: out's host side touched
    assert out.sync_state.state == "host_dirty" and out.sync_state.host_open == 0
    assert np.array_equal(out.device(write=False), m.host(write=False))
    assert out.sync_state.host_to_device == 1


def test_numpy_protocols_compute_on_the_host_and_mark_only_writes():
    m = _mf()
    m.sync()
    r = m + 1  # a ufunc reading m: a NumPy result, m not marked
    assert isinstance(r, np.ndarray) and m.sync_state.state == "clean"
    assert np.array_equal(r, m.host(write=False) + 1)
    with m.access("device") as d:
        d[...] = 3.0
    m *= 2  # in place: syncs the host first (one copy), writes it, stays a MirroredField
    assert isinstance(m, gb.MirroredField) and m.sync_state.state == "host_dirty"
    assert m.sync_state.device_to_host == 1
    assert np.all(m.device(write=False) == 6.0)
    assert float(np.sum(m)) == 6.0 * np.prod(SHAPE)  # __array_function__: pessimistic
    assert m.sync_state.state == "host_dirty"
    t = m.T
    assert t.shape == SHAPE[::-1] and t.sync_state is m.sync_state


def test_kernel_error_leaves_no_access_open():
    inp = _mf()
    out = mirrored.zeros((3, 3, 3), device="host")
    with pytest.raises(gb.GridbufValueError):
        gb.kernels.copy(inp, out, domain=SHAPE)  # out is too small
    assert out.sync_state.host_open == 0 and inp.sync_state.host_open == 0
    # The device side is usable afterwards (no access is left open that would refuse it).
    assert np.array_equal(out.device(write=False), out.host(write=False))


# -- random access sequences --------------------------------------------------------------------

ops = st.lists(
    st.tuples(
        st.sampled_from(["access", "sync", "asarray", "view_access"]),
        st.sampled_from(["host", "device"]),
        st.booleans(),
        st.floats(-100, 100, allow_nan=False),
    ),
    max_size=30,
)


@settings(max_examples=60, deadline=None)
@given(ops)
def test_random_sequences_keep_the_data_and_copy_only_when_needed(sequence):
    m = mirrored.zeros((3, 4, 2), device="host")
    expected = np.zeros((3, 4, 2))
    current = {"host": True, "device": True}
    copies = 0
    for op, side, write, value in sequence:
        s = m.sync_state
        if op == "sync":
            ran = m.sync()
            assert (ran is not None) == (not all(current.values()))
            copies += ran is not None
            current = {"host": True, "device": True}
            continue
        target = m if op == "access" else m[1:, ::2]
        region = (slice(None),) * 3 if op == "access" else (slice(1, None), slice(None, None, 2))
        if op == "asarray":
            side, write = "host", True
        before = s.transfers
        with target.access(side, write=write) as a:
            # A side is read only when current: it holds everything written so far.
            whole = m._pair.host if side == "host" else m._pair.device
            assert np.array_equal(whole, expected)
            if write:
                a[...] = value
                expected[region] = value
        copies += s.transfers - before
        assert s.transfers - before == (0 if current[side] else 1)
        current[side] = True
        if write:
            current = {side: True, ("device" if side == "host" else "host"): False}
    assert m.sync_state.transfers == copies
    assert np.array_equal(m.host(write=False), expected)
    assert np.array_equal(m.device(write=False), expected)
