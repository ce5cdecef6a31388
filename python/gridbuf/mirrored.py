"""Mirrored fields: a host buffer and a device buffer of the same plan, synchronised lazily.

GDP-3's "software managed" storage. Both buffers have the same shape, strides and alignment;
one :class:`gridbuf.SyncState` (the state machine of the Rust core) is shared by every view of
them (slices, :class:`gridbuf.Field` wrappers, xarray DataArrays), and says which buffer holds the
newest data. A copy runs only when a stale side is accessed:

- through the data interface (``__gt_data_interface__``): its ``"cpu"`` entry describes the host
  buffer and its ``"gpu"`` / ``"cuda"`` entries the device buffer; ``acquire`` makes that side
  current (one copy if the other side is newer), ``touch`` marks it modified, ``release`` ends the
  access. gridbuf's stencils and :func:`gridbuf.acquired` call them;
- through the plain interfaces, which cannot say whether the caller writes and are therefore
  pessimistic: reading ``__array_interface__`` (``numpy.asarray``) makes the host current and
  marks it modified, reading ``__cuda_array_interface__`` (``cupy.asarray``) does the same for the
  device;
- explicitly: :meth:`gridbuf.MirroredField.host`, :meth:`gridbuf.MirroredField.device`,
  :meth:`gridbuf.MirroredField.sync` and the :meth:`gridbuf.MirroredField.access` context manager, which marks the side modified only when
  asked to.

The device side is a CuPy array on the GPU (``device="gpu"``, CuPy imported only then), or, when
asked for with ``device="host"``, a second host buffer allocated by gridbuf that stands in for it
(as Kokkos' ``DualView`` does when both memory spaces are the host): the same state machine and
copy scheduling then run on any machine. A stand-in has no ``__cuda_array_interface__``; its
``"gpu"`` / ``"cuda"`` data-interface entries describe the second host buffer, so that the device
side of the protocol can be exercised without a GPU.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import weakref

import numpy as np

from . import _gridbuf
from ._gridbuf import SyncState
from .errors import GridbufDeviceError, GridbufTypeError, GridbufValueError

__all__ = ["MirroredField", "SyncState", "as_mirrored", "empty", "from_array", "full", "ones", "zeros"]

_DEVICES = ("gpu", "host")
#: The live pair of buffers of each sync state, by ``id`` (a pair keeps its state alive).
_PAIRS: weakref.WeakValueDictionary[int, _Pair] = weakref.WeakValueDictionary()
_SIDES = {"host": "host", "cpu": "host", "device": "device", "gpu": "device", "cuda": "device"}


def _side(side: Any) -> str:
    if not isinstance(side, str) or side not in _SIDES:
        raise GridbufValueError(f"invalid side {side!r}: expected 'host' (or 'cpu') or 'device' (or 'gpu', 'cuda')")
    return _SIDES[side]


def _span(array: Any, xp: Any) -> Any:
    """A 1-D uint8 view of the memory ``array`` spans (padding included), of library ``xp``."""
    if array.size == 0:
        return xp.empty(0, dtype=np.uint8)
    low, high = _extent(array)
    if xp is np:
        ptr = array.__array_interface__["data"][0]
        holder = _Raw(ptr + low, high - low, array)
        return np.asarray(holder)
    mem = xp.cuda.UnownedMemory(array.data.ptr + low, high - low, array, array.device.id)
    return xp.ndarray((high - low,), dtype=np.uint8, memptr=xp.cuda.MemoryPointer(mem, 0))


def _address(array: Any, xp: Any) -> int:
    return int(array.__array_interface__["data"][0]) if xp is np else int(array.data.ptr)


def _extent(array: Any) -> tuple[int, int]:
    """Lowest and one past the highest byte offset ``array`` reaches from its first element."""
    if array.size == 0:
        return 0, 0
    low = sum(s * (n - 1) for n, s in zip(array.shape, array.strides) if s < 0)
    high = sum(s * (n - 1) for n, s in zip(array.shape, array.strides) if s > 0) + array.dtype.itemsize
    return low, high


class _Raw:
    """Describes ``nbytes`` of host memory at ``ptr`` as a writable uint8 array; keeps ``owner``."""

    __slots__ = ("__array_interface__", "_owner")

    def __init__(self, ptr: int, nbytes: int, owner: Any) -> None:
        self._owner = owner
        self.__array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (ptr, False), "version": 3}


class _Pair:
    """What every view of one mirrored field shares: the two whole buffers, their spans, the
    sync state and the copy between them."""

    __slots__ = ("host", "device", "state", "kind", "plan", "_host_span", "_device_span", "_xp", "__weakref__")

    def __init__(self, host: Any, device: Any, state: SyncState, kind: str, plan: Any) -> None:
        self.host, self.device, self.state, self.kind, self.plan = host, device, state, kind, plan
        self._xp = np if kind == "host" else _cupy("a mirrored field with device='gpu'")
        self._host_span = _span(host, np)
        self._device_span = _span(device, self._xp)
        _PAIRS[id(state)] = self

    def offsets(self, host: Any, device: Any) -> tuple[int, int]:
        """Byte offsets of the views ``host`` and ``device`` from the starts of the spans."""
        return (
            _address(host, np) - _address(self._host_span, np),
            _address(device, self._xp) - _address(self._device_span, self._xp),
        )

    def contains(self, host: Any, device: Any) -> bool:
        """Whether ``host`` and ``device`` are views at the same place of this pair's buffers."""
        h_off, d_off = self.offsets(host, device)
        if h_off != d_off:
            return False
        low, high = _extent(host)
        return 0 <= h_off + low and h_off + high <= self._host_span.size

    def copy(self, src: str, dst: str) -> None:
        """Copy the whole buffer from side ``src`` to side ``dst`` (called by the sync state)."""
        h, d = self._host_span, self._device_span
        if self.kind == "host":
            if dst == "device":
                np.copyto(d, h)
            else:
                np.copyto(h, d)
        elif dst == "device":
            d.set(h)
        else:
            d.get(out=h)

    def acquire(self, side: str) -> Any:
        return self.state.acquire(side, self.copy)


def _cupy(what: str) -> Any:
    from ._gpu import cupy_module

    return cupy_module(what)


class MirroredField(np.lib.mixins.NDArrayOperatorsMixin):
    """A host buffer and a device buffer of the same plan with a shared :class:`gridbuf.SyncState`.

    Create one with :func:`gridbuf.mirrored.zeros`, :func:`~gridbuf.mirrored.empty`,
    :func:`~gridbuf.mirrored.ones`, :func:`~gridbuf.mirrored.full`,
    :func:`~gridbuf.mirrored.from_array` (allocating both buffers) or :func:`gridbuf.as_mirrored`
    (wrapping existing buffers). Indexing gives views that share the buffers and the sync state.

    Notes
    -----
    A mirrored field is a NumPy duck array (``__array_ufunc__``, ``__array_function__``,
    operators): NumPy functions compute on the host side and return NumPy arrays; ufunc inputs
    are read without marking, ``out=`` arguments and any argument of other NumPy functions are
    marked modified. xarray therefore keeps it as a DataArray's data, sharing the sync state.

    The state covers the whole buffers: touching a view marks the whole field modified on that
    side, and a sync copies the whole buffers (one contiguous copy, padding included).
    """

    __slots__ = ("_pair", "_host", "_device", "__weakref__")

    def __init__(self, pair: _Pair, host: Any, device: Any) -> None:
        self._pair = pair
        self._host = host
        self._device = device

    # -- description ---------------------------------------------------------------------------
    @property
    def sync_state(self) -> SyncState:
        """The state shared by every view of these buffers."""
        return self._pair.state

    @property
    def device_kind(self) -> str:
        """``"gpu"`` (a CuPy device buffer) or ``"host"`` (a host stand-in)."""
        return self._pair.kind

    @property
    def plan(self) -> Any:
        """The :class:`gridbuf.Plan` of both buffers when gridbuf allocated them, else None."""
        return self._pair.plan

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._host.shape)

    @property
    def strides(self) -> tuple[int, ...]:
        return tuple(self._host.strides)

    @property
    def dtype(self) -> np.dtype:
        return self._host.dtype

    @property
    def ndim(self) -> int:
        return self._host.ndim

    @property
    def size(self) -> int:
        return int(self._host.size)

    def __len__(self) -> int:
        return len(self._host)

    def __repr__(self) -> str:
        return (
            f"MirroredField(shape={self.shape}, dtype={self.dtype}, device={self.device_kind!r}, "
            f"state={self.sync_state.state!r})"
        )

    def __getitem__(self, index: Any) -> MirroredField:
        host = self._host[index]
        if not isinstance(host, np.ndarray):  # a scalar element: read it
            with self.access("host", write=False) as h:
                return h[index]
        return MirroredField(self._pair, host, self._device[index])

    def __setitem__(self, index: Any, value: Any) -> None:
        side = "device" if _is_device_value(value) and self.device_kind == "gpu" else "host"
        if side == "device":
            from ._gpu import check_same_device

            check_same_device([self._device, value], "assigning to a mirrored field")
        if isinstance(value, MirroredField):
            value = value.host(write=False) if side == "host" else value.device(write=False)
        with self.access(side, write=True) as a:
            a[index] = value

    def transpose(self, *axes: Any) -> MirroredField:
        """A view with permuted axes, sharing the buffers and the sync state."""
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = () if axes[0] is None else tuple(axes[0])
        perm = axes or None
        return MirroredField(self._pair, self._host.transpose(perm), self._device.transpose(perm))

    @property
    def T(self) -> MirroredField:  # noqa: N802 - NumPy's name
        return self.transpose()

    # -- NumPy protocols (NEP 13 / NEP 18): computed on the host side --------------------------
    # They make a mirrored field a duck array, so that xarray keeps it (and its sync state) as a
    # DataArray's data instead of converting it to a NumPy array.
    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        inputs = tuple(_on_host(x, write=False) for x in inputs)
        out = kwargs.get("out")
        if out is not None:
            kwargs["out"] = tuple(_on_host(x, write=True) for x in out)
        result = getattr(ufunc, method)(*inputs, **kwargs)
        if out is not None and any(isinstance(x, MirroredField) for x in out):
            return out[0] if len(out) == 1 else out  # in-place: the mirrored fields themselves
        return result

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        # The function may write to any argument, so every mirrored argument is marked modified.
        args = tuple(_on_host(x, write=True) for x in args)
        kwargs = {k: _on_host(v, write=True) for k, v in kwargs.items()}
        return func(*args, **kwargs)

    # -- explicit access -----------------------------------------------------------------------
    @contextmanager
    def access(self, side: str, *, write: bool = True) -> Iterator[Any]:
        """Acquire ``side`` for a block: the array of that side, current, is yielded.

        Parameters
        ----------
        side : {"host", "device"}
            Which buffer (also ``"cpu"``, ``"gpu"``, ``"cuda"``).
        write : bool, optional
            Mark the side modified when the block ends without an exception (default True).

        Yields
        ------
        numpy.ndarray or cupy.ndarray
            This view of the buffer of ``side``.
        """
        side = _side(side)
        self._pair.acquire(side)
        try:
            yield self._host if side == "host" else self._device
            if write:
                self._pair.state.touch(side)
        finally:
            self._pair.state.release(side)

    def host(self, *, write: bool = True) -> np.ndarray:
        """This view of the host buffer, made current (one copy if the device side is newer).

        Parameters
        ----------
        write : bool, optional
            Mark the host side modified (default True: the caller may write through the returned
            array at any later time, so the device side must be treated as stale). Pass False
            only when the array is read, and not after the device side is written.

        Returns
        -------
        numpy.ndarray
        """
        with self.access("host", write=write) as a:
            return a

    def device(self, *, write: bool = True) -> Any:
        """This view of the device buffer, made current; see :meth:`host`.

        Returns
        -------
        cupy.ndarray or numpy.ndarray
            A CuPy array, or a NumPy array for a host stand-in.
        """
        with self.access("device", write=write) as a:
            return a

    def sync(self) -> str | None:
        """Copy the newer side into the stale one, if they differ.

        Returns
        -------
        str or None
            ``"host_to_device"`` or ``"device_to_host"`` when a copy ran, else None.
        """
        return self._pair.state.sync(self._pair.copy)

    def mark_modified(self, side: str) -> None:
        """Declare ``side`` modified by a write gridbuf did not see (GDP-3's
        ``set_host_modified`` / ``set_device_modified``).

        Raises
        ------
        GridbufDeviceError
            The other side holds changes this side lacks (sync first), or has an open access.
        """
        self._pair.state.mark_modified(_side(side))

    # -- interfaces ----------------------------------------------------------------------------
    @property
    def __array_interface__(self) -> dict[str, Any]:
        # Pessimistic: whoever reads the interface may write through it.
        return self.host(write=True).__array_interface__

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        if self._pair.kind != "gpu":
            raise AttributeError("a mirrored field with a host stand-in device has no __cuda_array_interface__")
        return self.device(write=True).__cuda_array_interface__

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        if copy:
            with self.access("host", write=False) as h:
                return np.array(h, dtype=dtype, copy=True)
        return np.asarray(self.host(write=True), dtype=dtype)

    @property
    def __gt_data_interface__(self) -> dict[Any, dict[str, Any]]:
        pair = self._pair
        state = pair.state
        host = dict(self._host.__array_interface__)
        if pair.kind == "gpu":
            dev = dict(self._device.__cuda_array_interface__)
        else:
            dev = dict(self._device.__array_interface__)
            dev["version"] = 3
        host.update(
            acquire=lambda: pair.acquire("host"),
            touch=lambda: state.touch("host"),
            release=lambda: state.release("host"),
        )
        dev.update(
            acquire=lambda: pair.acquire("device"),
            touch=lambda: state.touch("device"),
            release=lambda: state.release("device"),
        )
        dims = getattr(pair.plan, "dims", None)
        if dims is not None and pair.plan is not None and self._host.shape == tuple(pair.plan.shape):
            host["dims"] = dev["dims"] = tuple(dims)
        return {"cpu": host, "gpu": dev, "cuda": dev}


def _on_host(x: Any, *, write: bool) -> Any:
    """The host array of a mirrored field (made current, marked modified when ``write``);
    sequences are mapped item by item, anything else is returned as it is."""
    if isinstance(x, MirroredField):
        return x.host(write=write)
    if isinstance(x, (tuple, list)):
        return type(x)(_on_host(v, write=write) for v in x)
    return x


def _is_device_value(value: Any) -> bool:
    return not isinstance(value, np.ndarray) and getattr(type(value), "__cuda_array_interface__", None) is not None


def _device(device: Any) -> str:
    if device not in _DEVICES:
        raise GridbufValueError(
            f"invalid device {device!r}: expected 'gpu' (a CuPy buffer on the GPU) or 'host' (a second host buffer "
            "standing in for the device)"
        )
    return str(device)


def _host_twin_keywords(plan: Any) -> dict[str, Any]:
    """Keywords that make gridbuf allocate host memory with the layout of ``plan``."""
    return {
        "backend": "C",
        "dims": plan.dims,
        "layout": plan.layout,
        "alignment": plan.row_alignment,
        "aligned_index": plan.aligned_index,
        "halo": plan.halo,
    }


def _allocate(shape: Any, dtype: Any, device: str, kw: dict[str, Any], fill: Callable[..., Any], *args: Any) -> MirroredField:
    """Both buffers of one plan, filled on their own sides (no transfer): state clean."""
    device = _device(device)
    plan = _gridbuf.plan(shape, dtype, **kw)
    host_kw = _host_twin_keywords(plan) if plan.device == "gpu" else kw
    host = fill(shape, *args, dtype, **host_kw)
    if device == "gpu":
        dev_kw = kw if plan.device == "gpu" else {**_host_twin_keywords(plan), "backend": "gt:gpu"}
        dev = fill(shape, *args, dtype, **dev_kw)
    else:
        dev = fill(shape, *args, dtype, **host_kw)
    _check_twins(host, dev)
    pair = _Pair(host, dev, SyncState("clean"), device, plan)
    return MirroredField(pair, host, dev)


def _check_twins(host: Any, dev: Any) -> None:
    if tuple(host.shape) != tuple(dev.shape) or tuple(host.strides) != tuple(dev.strides) or host.dtype != dev.dtype:
        raise GridbufValueError(
            f"invalid device_data: shape {tuple(dev.shape)}, strides {tuple(dev.strides)}, dtype {dev.dtype} differ "
            f"from the host buffer's shape {tuple(host.shape)}, strides {tuple(host.strides)}, dtype {host.dtype}; "
            "both buffers of a mirrored field need the same plan"
        )


def empty(shape: Any, dtype: Any = None, *, device: str = "gpu", **kwargs: Any) -> MirroredField:
    """Allocate a mirrored field with uninitialised values (state ``"clean"``: both are garbage).

    Parameters
    ----------
    shape : sequence of int
        Shape, halo included.
    dtype : dtype_like, optional
        Default float64.
    device : {"gpu", "host"}
        ``"gpu"``: the device buffer is a CuPy array; ``"host"``: a second host buffer stands in.
    **kwargs
        Allocation keywords of :func:`gridbuf.empty` (``backend``, ``aligned_index``, ``dims``,
        ``layout``, ``alignment``, ``halo``). A GPU preset's plan is used for both buffers.

    Returns
    -------
    MirroredField

    Raises
    ------
    GridbufDeviceError
        ``device="gpu"`` without CuPy or a GPU.
    GridbufValueError, GridbufTypeError
        Invalid allocation keywords or device.
    """
    return _allocate(shape, dtype, device, kwargs, _gridbuf.empty)


def zeros(shape: Any, dtype: Any = None, *, device: str = "gpu", **kwargs: Any) -> MirroredField:
    """Allocate a mirrored field of zeros, both buffers zeroed on their own side (no transfer).

    Parameters are those of :func:`empty`.

    Returns
    -------
    MirroredField
    """
    return _allocate(shape, dtype, device, kwargs, _gridbuf.zeros)


def ones(shape: Any, dtype: Any = None, *, device: str = "gpu", **kwargs: Any) -> MirroredField:
    """Allocate a mirrored field of ones, both buffers filled on their own side (no transfer).

    Parameters are those of :func:`empty`.

    Returns
    -------
    MirroredField
    """
    return _allocate(shape, dtype, device, kwargs, _gridbuf.ones)


def full(shape: Any, fill_value: Any, dtype: Any = None, *, device: str = "gpu", **kwargs: Any) -> MirroredField:
    """Allocate a mirrored field filled with ``fill_value`` on both sides (no transfer).

    Parameters
    ----------
    shape : sequence of int
    fill_value : scalar
    dtype, device, **kwargs
        As for :func:`empty`.

    Returns
    -------
    MirroredField
    """
    return _allocate(shape, dtype, device, kwargs, _gridbuf.full, fill_value)


def from_array(data: Any, dtype: Any = None, *, device: str = "gpu", **kwargs: Any) -> MirroredField:
    """Allocate a mirrored field and copy ``data`` into the buffer of the side it lives on.

    Host data is copied into the host buffer (state ``"host_dirty"``: the device buffer is filled
    by one transfer on its first access); device data (a CuPy array) into the device buffer
    (state ``"device_dirty"``). Layout changes happen on the side the data lives on.

    Parameters
    ----------
    data : array_like
        Host data (anything ``numpy.asarray`` accepts) or, with ``device="gpu"``, a CuPy array.
    dtype, device, **kwargs
        As for :func:`empty`.

    Returns
    -------
    MirroredField
    """
    on_device = _is_device_value(data)
    if on_device and device != "gpu":
        raise GridbufDeviceError(
            f"invalid data ({type(data).__name__}): it lives in GPU memory, but device={device!r} keeps no GPU buffer"
        )
    if isinstance(data, MirroredField):
        data = data.host(write=False)
    shape = tuple(data.shape) if hasattr(data, "shape") else np.shape(data)
    if dtype is None:
        dtype = data.dtype if hasattr(data, "dtype") else np.asarray(data).dtype
    m = empty(shape, dtype, device=device, **kwargs)
    side = "device" if on_device else "host"
    # The buffers are uninitialised, so no transfer: the other side is simply stale afterwards.
    with m.access(side, write=True) as target:
        target[...] = data
    return m


def as_mirrored(data: Any, device_data: Any, *, sync_state: Any) -> MirroredField:
    """Wrap an existing host buffer and device buffer as a mirrored field, without copying.

    GDP-3's ``as_storage(data, device_data, sync_state=...)``.

    Parameters
    ----------
    data : numpy.ndarray
        The host buffer (anything ``numpy.asarray`` views without copying).
    device_data : cupy.ndarray or numpy.ndarray
        The device buffer with the same shape, strides and dtype: a CuPy array, or a host array
        that stands in for the device.
    sync_state : {"clean", "host_dirty", "device_dirty"} or SyncState
        Which buffer is current now; or the :class:`gridbuf.SyncState` of the mirrored field these
        buffers were taken from (views of its buffers, at the same place on both sides), which
        the new field then shares, syncing the whole buffers of that field.

    Returns
    -------
    MirroredField

    Raises
    ------
    GridbufValueError
        The buffers differ in shape, strides or dtype, or ``sync_state`` is not a state.
    GridbufDeviceError
        ``data`` lives on the GPU, or ``device_data`` on a GPU that CuPy cannot use.
    GridbufTypeError
        A buffer that is not an array.
    """
    if _is_device_value(data):
        raise GridbufDeviceError(f"invalid data ({type(data).__name__}): it lives in GPU memory, expected the host buffer")
    if not isinstance(data, np.ndarray):
        try:
            data = np.asarray(data)
        except Exception as exc:  # noqa: BLE001 - any failure means "not an array"
            raise GridbufTypeError(f"invalid type for data ({type(data).__name__}): expected a host array ({exc})") from None
    if _is_device_value(device_data):
        kind = "gpu"
        cp = _cupy("as_mirrored with a GPU device_data")
        if not isinstance(device_data, cp.ndarray):
            device_data = cp.asarray(device_data)  # a view of the same memory (CUDA array interface)
    elif isinstance(device_data, np.ndarray):
        kind = "host"
    else:
        raise GridbufTypeError(
            f"invalid type for device_data ({type(device_data).__name__}): expected a CuPy array, an object with "
            "__cuda_array_interface__, or a NumPy array standing in for the device"
        )
    if kind == "host" and np.shares_memory(data, device_data):
        raise GridbufValueError("invalid device_data: it shares memory with data, so the two sides could not differ")
    _check_twins(data, device_data)
    if isinstance(sync_state, SyncState):
        state = sync_state
        pair = _PAIRS.get(id(state))
        if pair is not None:
            if pair.kind != kind or not pair.contains(data, device_data):
                raise GridbufValueError(
                    f"invalid sync_state {state!r}: it belongs to a mirrored field whose buffers do not hold data and "
                    "device_data at the same place; a SyncState is shared only by views of the same buffers"
                )
            return MirroredField(pair, data, device_data)
    elif isinstance(sync_state, str):
        state = SyncState(sync_state)
    else:
        raise GridbufTypeError(
            f"invalid type for sync_state ({sync_state!r}): expected 'clean', 'host_dirty', 'device_dirty' or a SyncState"
        )
    pair = _Pair(data, device_data, state, kind, None)
    return MirroredField(pair, data, device_data)
