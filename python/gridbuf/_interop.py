"""``as_cupy``: the GPU counterpart of :func:`gridbuf.as_numpy`. CuPy is imported only when used."""

from __future__ import annotations

from typing import Any

from ._gpu import cupy_module, managed_as_cupy, managed_owner
from ._gridbuf import DLPackOwner, array_info
from .errors import GridbufDeviceError, GridbufValueError

#: Memory kinds (``ArrayInfo.device``) a CuPy array can address directly.
_CUPY_DEVICES = ("cuda", "cuda_managed")


def as_cupy(obj: Any) -> Any:
    """View an array's GPU memory as a CuPy array, without copying.

    Parameters
    ----------
    obj : array_like
        Anything :func:`gridbuf.array_info` accepts whose memory lives on a CUDA device (or is
        CUDA managed memory): a CuPy array, a ``gridbuf.Field`` or xarray DataArray holding one,
        an object with ``__cuda_array_interface__``, a CUDA DLPack producer, or an object whose
        ``__gt_data_interface__`` has a ``"gpu"``/``"cuda"`` entry.

    Returns
    -------
    cupy.ndarray
        The CuPy array itself, or a view of the same memory that keeps ``obj`` alive.

    Raises
    ------
    GridbufDeviceError
        CuPy is not installed, no GPU is visible, or the memory is not GPU memory (host memory is
        never copied implicitly; use ``cupy.asarray`` to copy it).
    GridbufValueError
        The array is read-only (CuPy arrays cannot be), or one of its interfaces is invalid.
    """
    cp = cupy_module("as_cupy")
    if isinstance(obj, cp.ndarray):
        return obj
    managed = managed_owner(obj)
    if managed is not None:  # managed="cuda" memory, a NumPy array on the host
        return managed_as_cupy(obj, managed)
    info = array_info(obj)
    if info.device not in _CUPY_DEVICES:
        raise GridbufDeviceError(
            f"as_cupy views GPU memory without copying, but this array lives in {info.device} memory "
            f"(from {info.interface}); copy it with cupy.asarray, or use gridbuf.as_numpy"
        )
    if info.readonly:
        raise GridbufValueError(
            f"invalid array: it is read-only (from {info.interface}), and a CuPy array cannot be; "
            "copy it with cupy.array to get a writable array"
        )
    owner = info.owner
    if isinstance(owner, cp.ndarray):  # a Field or DataArray holding a CuPy array
        return owner
    if isinstance(owner, DLPackOwner):
        return cp.from_dlpack(owner.producer)  # a fresh capsule, with DLPack's stream handshake
    if getattr(owner, "__cuda_array_interface__", None) is not None:
        return cp.asarray(owner)  # CuPy synchronises on the interface's stream
    return _from_info(cp, info)


def _from_info(cp: Any, info: Any) -> Any:
    """A CuPy array over the memory ``info`` describes, keeping ``info.owner`` alive."""
    if info.nbytes == 0:
        return cp.ndarray(info.shape, dtype=info.dtype)
    if info.stream is not None:
        cp.cuda.ExternalStream(info.stream).synchronize()
    reach = [s * (n - 1) for n, s in zip(info.shape, info.strides)]
    low = sum(r for r in reach if r < 0)
    high = sum(r for r in reach if r > 0) + info.itemsize
    device_id = -1 if info.device_id is None else info.device_id
    memory = cp.cuda.UnownedMemory(info.ptr + low, high - low, info.owner, device_id)
    return cp.ndarray(info.shape, dtype=info.dtype, memptr=cp.cuda.MemoryPointer(memory, -low), strides=info.strides)
