"""A host-memory stand-in for the part of CuPy that gridbuf's device paths use.

"Device" memory is host memory here, but it is reachable only the way CuPy's is: through
``__cuda_array_interface__``, ``.data.ptr`` and the explicit copies ``set`` / ``get`` /
``asarray`` (implicit conversion to NumPy raises, as in CuPy). Every host<->device copy is
counted in ``TRANSFERS``, so tests can check how many transfers a device path does. It runs
gridbuf's device code paths without a GPU; it says nothing about CUDA itself (streams,
alignment of real device allocations, peer access), which only ``tests/test_device.py`` with
the real CuPy on a GPU checks.
"""

from __future__ import annotations

import types
from typing import Any

import numpy as np

TRANSFERS = {"host_to_device": 0, "device_to_host": 0}


def reset() -> None:
    TRANSFERS["host_to_device"] = TRANSFERS["device_to_host"] = 0


class _Device:
    def __init__(self, ident: int) -> None:
        self.id = ident


class _Alloc:
    """Owned "device" memory (a host buffer)."""

    def __init__(self, size: int) -> None:
        self._buf = np.zeros(max(size, 1), dtype=np.uint8)
        self.ptr = int(self._buf.ctypes.data)
        self.size = size
        self.device_id = 0


class ManagedMemory(_Alloc):
    pass


class UnownedMemory:
    def __init__(self, ptr: int, size: int, owner: Any, device_id: int = -1) -> None:
        self.ptr, self.size, self._owner = int(ptr), int(size), owner
        self.device_id = 0 if device_id < 0 else device_id


class MemoryPointer:
    def __init__(self, mem: Any, offset: int) -> None:
        self.mem = mem
        self.ptr = mem.ptr + offset
        self.device_id = mem.device_id

    def __add__(self, n: int) -> MemoryPointer:
        return MemoryPointer(self.mem, self.ptr - self.mem.ptr + n)

    def memset_async(self, value: int, size: int) -> None:
        _host_view(self.ptr, (size,), (1,), np.uint8, self)[...] = value


class _Holder:
    def __init__(self, iface: dict[str, Any], keep: Any) -> None:
        self.__array_interface__ = iface
        self._keep = keep


def _host_view(ptr: int, shape: Any, strides: Any, dtype: Any, keep: Any) -> np.ndarray:
    iface = {"shape": tuple(shape), "strides": tuple(strides), "typestr": np.dtype(dtype).str, "data": (ptr, False), "version": 3}
    return np.asarray(_Holder(iface, keep))


class ndarray:  # noqa: N801 - CuPy's name
    def __init__(self, shape: Any, dtype: Any = float, memptr: Any = None, strides: Any = None) -> None:
        shape = tuple(int(n) for n in (shape if isinstance(shape, (tuple, list)) else (shape,)))
        dtype = np.dtype(dtype)
        if strides is None:
            strides, acc = [], dtype.itemsize
            for n in reversed(shape):
                strides.insert(0, acc)
                acc *= max(n, 1)
        if memptr is None:
            memptr = MemoryPointer(_Alloc(int(np.prod(shape)) * dtype.itemsize), 0)
        self.data = memptr
        self._a = _host_view(memptr.ptr, shape, strides, dtype, memptr)

    @classmethod
    def _of(cls, host_view: np.ndarray, mem: Any) -> ndarray:
        out = cls.__new__(cls)
        ptr = host_view.__array_interface__["data"][0]
        out.data = MemoryPointer(mem, ptr - mem.ptr)
        out._a = host_view
        return out

    shape = property(lambda self: self._a.shape)
    strides = property(lambda self: self._a.strides)
    dtype = property(lambda self: self._a.dtype)
    size = property(lambda self: self._a.size)
    ndim = property(lambda self: self._a.ndim)
    itemsize = property(lambda self: self._a.itemsize)
    nbytes = property(lambda self: self._a.nbytes)
    device = property(lambda self: _Device(self.data.device_id))

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return {
            "shape": self.shape,
            "strides": self.strides,
            "typestr": self.dtype.str,
            "data": (self.data.ptr, False),
            "version": 3,
            "stream": None,
        }

    def __array__(self, *args: Any, **kwargs: Any) -> np.ndarray:
        raise TypeError("Implicit conversion to a NumPy array is not allowed. Please use `.get()` to construct a NumPy array explicitly.")

    def __getitem__(self, index: Any) -> ndarray:
        v = self._a[index]
        if not isinstance(v, np.ndarray):
            v = self._a[index, ...] if not isinstance(index, tuple) else self._a[index + (Ellipsis,)]
        return ndarray._of(v, self.data.mem)

    def __setitem__(self, index: Any, value: Any) -> None:
        if isinstance(value, ndarray):
            self._a[index] = value._a
        elif isinstance(value, np.ndarray):
            TRANSFERS["host_to_device"] += 1
            self._a[index] = value
        else:
            self._a[index] = value

    def fill(self, value: Any) -> None:
        self._a.fill(value)

    def set(self, arr: np.ndarray, stream: Any = None) -> None:
        if not isinstance(arr, np.ndarray) or arr.shape != self.shape or arr.dtype != self.dtype:
            raise TypeError("set needs a NumPy array of the same shape and dtype")
        TRANSFERS["host_to_device"] += 1
        self._a[...] = arr

    def get(self, stream: Any = None, order: str = "C", out: Any = None, blocking: bool = True) -> np.ndarray:
        TRANSFERS["device_to_host"] += 1
        if out is None:
            return self._a.copy()
        out[...] = self._a
        return out

    def copy(self) -> ndarray:
        out = ndarray(self.shape, self.dtype)
        out._a[...] = self._a
        return out

    def sum(self) -> ndarray:
        out = ndarray((), self.dtype)
        out._a[...] = self._a.sum()
        return out

    def __float__(self) -> float:
        return float(self._a)


def asarray(obj: Any, dtype: Any = None) -> ndarray:
    if isinstance(obj, ndarray):
        return obj
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None and not isinstance(obj, np.ndarray):
        mem = UnownedMemory(cai["data"][0], 0, obj, 0)
        return ndarray(cai["shape"], cai["typestr"], MemoryPointer(mem, 0), cai.get("strides") or None)
    host = np.asarray(obj, dtype=dtype)
    out = ndarray(host.shape, host.dtype)
    TRANSFERS["host_to_device"] += 1
    out._a[...] = host
    return out


def zeros(shape: Any, dtype: Any = float) -> ndarray:
    return ndarray(shape, dtype)


def empty(shape: Any, dtype: Any = float) -> ndarray:
    return ndarray(shape, dtype)


class _Stream:
    def synchronize(self) -> None:
        pass


def _alloc(size: int) -> MemoryPointer:
    return MemoryPointer(_Alloc(size), 0)


def _malloc_managed(size: int) -> MemoryPointer:
    return MemoryPointer(ManagedMemory(size), 0)


cuda = types.SimpleNamespace(
    alloc=_alloc,
    malloc_managed=_malloc_managed,
    UnownedMemory=UnownedMemory,
    MemoryPointer=MemoryPointer,
    ManagedMemory=ManagedMemory,
    runtime=types.SimpleNamespace(getDeviceCount=lambda: 1),
    get_current_stream=lambda: _Stream(),
    ExternalStream=lambda handle: _Stream(),
)


def from_dlpack(obj: Any) -> ndarray:  # pragma: no cover - not used by the device paths
    raise NotImplementedError
