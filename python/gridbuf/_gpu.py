"""GPU allocation through CuPy, for presets whose device is "gpu", and CUDA unified (managed)
memory. Imported only when used; CuPy itself only when a device is."""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import GridbufDeviceError, GridbufValueError


def cupy_module(what: str) -> Any:
    """Import CuPy and check that a GPU is visible, else raise GridbufDeviceError."""
    try:
        import cupy
    except ImportError:
        raise GridbufDeviceError(f"{what} needs CuPy and a GPU, but CuPy is not installed") from None
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # noqa: BLE001 - any CUDA runtime failure means no usable GPU
        raise GridbufDeviceError(f"{what} needs a GPU, but the CUDA runtime reports none ({exc})") from None
    if count == 0:
        raise GridbufDeviceError(f"{what} needs a GPU, but none is visible")
    return cupy


class DeviceAllocation:
    """Owns the device memory of a gridbuf GPU allocation and remembers its plan, so that
    ``*_like`` of the CuPy array keeps its layout and alignment."""

    __slots__ = ("memory", "plan", "data_address")

    def __init__(self, memory: Any, plan: Any, data_address: int) -> None:
        self.memory = memory
        self.plan = plan
        self.data_address = data_address


class ManagedAllocation:
    """CUDA managed (unified) memory laid out by a plan: ``numpy.asarray`` and ``cupy.asarray``
    of it (or :func:`gridbuf.as_cupy` of the NumPy array) address the same memory."""

    __slots__ = ("memory", "plan", "data_address", "device_id", "__array_interface__", "__cuda_array_interface__")

    def __init__(self, memory: Any, plan: Any, dtype: Any, data_address: int) -> None:
        self.memory = memory
        self.plan = plan
        self.data_address = data_address
        self.device_id = int(memory.device_id)
        desc = {
            "shape": tuple(plan.shape),
            "typestr": np.dtype(dtype).str,
            "strides": tuple(plan.strides),
            "data": (data_address, False),
        }
        self.__array_interface__ = {**desc, "version": 3}
        self.__cuda_array_interface__ = {**desc, "version": 3, "stream": None}


def device_id_of(array: Any) -> int | None:
    """The CUDA device of an array exposing ``__cuda_array_interface__`` (None if unknown)."""
    dev = getattr(array, "device", None)
    ident = getattr(dev, "id", None)
    return None if ident is None else int(ident)


def check_same_device(arrays: Any, what: str) -> int | None:
    """Raise GridbufDeviceError when the CuPy arrays of one call live on different GPUs."""
    seen: dict[int, int] = {}
    for i, a in enumerate(arrays):
        d = device_id_of(a)
        if d is not None:
            seen.setdefault(d, i)
    if len(seen) > 1:
        where = ", ".join(f"argument {i} on cuda:{d}" for d, i in seen.items())
        raise GridbufDeviceError(f"{what} got arrays on different GPUs ({where}); copy them to one device first")
    return next(iter(seen), None)


def _empty_device(cp: Any, plan: Any, dtype: Any) -> tuple[Any, Any, int]:
    size = plan.byte_offset + plan.nbytes + plan.alignment
    memory = cp.cuda.alloc(size)  # CuPy's memory pool
    start = (-memory.ptr) % plan.alignment + plan.byte_offset
    owner = DeviceAllocation(memory, plan, memory.ptr + start)
    unowned = cp.cuda.UnownedMemory(memory.ptr, size, owner, memory.device_id)
    array = cp.ndarray(plan.shape, dtype=dtype, memptr=cp.cuda.MemoryPointer(unowned, start), strides=plan.strides)
    return array, memory, size


def allocate(plan: Any, dtype: Any, fill: str, value: Any = None, managed: Any = None) -> Any:
    """Allocate an array laid out by ``plan``; ``fill`` is "empty", "zeros", "value" or "copy".

    Without ``managed`` a CuPy array in device memory; with ``managed="cuda"`` a NumPy array in
    CUDA managed memory (see :func:`allocate_managed`).
    """
    if managed is not None:
        return allocate_managed(plan, dtype, fill, value, managed)
    cp = cupy_module(f"backend {plan.backend!r}")
    array, memory, size = _empty_device(cp, plan, dtype)
    if fill == "zeros":
        memory.memset_async(0, size)
    elif fill == "value":
        array.fill(value)
    elif fill == "copy":
        # Host data: one host-to-device transfer (into the source's own layout), then the layout
        # change on the device. Device data: a device-side copy only.
        array[...] = cp.asarray(value)
    return array


def allocate_managed(plan: Any, dtype: Any, fill: str, value: Any, managed: Any) -> np.ndarray:
    """A NumPy array laid out by ``plan`` in CUDA managed memory, filled on the host.

    :func:`gridbuf.as_cupy` of it (or ``cupy.asarray`` of its ``.base``) is a CuPy array of the
    same memory, without copies.
    """
    if managed != "cuda":
        raise GridbufValueError(f"invalid managed {managed!r}: expected 'cuda' (CUDA unified memory) or None")
    cp = cupy_module(f"managed='cuda' memory for backend {plan.backend!r}")
    size = plan.byte_offset + plan.nbytes + plan.alignment
    memory = cp.cuda.malloc_managed(size)
    start = (-memory.ptr) % plan.alignment + plan.byte_offset
    owner = ManagedAllocation(memory, plan, dtype, memory.ptr + start)
    array = np.asarray(owner)
    if fill == "zeros":
        array.fill(0)
    elif fill == "value":
        array.fill(value)
    elif fill == "copy":
        src = value
        if not isinstance(src, np.ndarray) and hasattr(type(src), "__cuda_array_interface__"):
            cp.asarray(array.base)[...] = src  # device data: copied on the device
            cp.cuda.get_current_stream().synchronize()
        else:
            np.copyto(array, src)
    return array


def device_plan(a: Any) -> Any:
    """The plan of a whole CuPy array gridbuf allocated, else None."""
    mem = getattr(getattr(a, "data", None), "mem", None)
    owner = getattr(mem, "_owner", None)
    if isinstance(owner, DeviceAllocation):
        p = owner.plan
        if tuple(a.shape) == tuple(p.shape) and tuple(a.strides) == tuple(p.strides) and a.data.ptr == owner.data_address:
            return p
    return None


def managed_owner(a: Any) -> ManagedAllocation | None:
    """The managed allocation a NumPy array (or a view of one) lives in, else None."""
    base = a
    while isinstance(base, np.ndarray):
        base = base.base
    return base if isinstance(base, ManagedAllocation) else None


def managed_as_cupy(a: np.ndarray, owner: ManagedAllocation) -> Any:
    """A CuPy array over the same managed memory as the NumPy array ``a`` (no copy)."""
    cp = cupy_module("as_cupy of managed memory")
    if a.size == 0:
        return cp.ndarray(a.shape, dtype=a.dtype)
    low = sum(s * (n - 1) for n, s in zip(a.shape, a.strides) if s < 0)
    high = sum(s * (n - 1) for n, s in zip(a.shape, a.strides) if s > 0) + a.itemsize
    ptr = a.__array_interface__["data"][0]
    mem = cp.cuda.UnownedMemory(ptr + low, high - low, a, owner.device_id)
    return cp.ndarray(a.shape, dtype=a.dtype, memptr=cp.cuda.MemoryPointer(mem, -low), strides=a.strides)
