"""GPU allocation through CuPy, for presets whose device is "gpu". Imported only when used."""

from __future__ import annotations

from typing import Any

from .errors import GridbufDeviceError


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


def allocate(plan: Any, dtype: Any, fill: str, value: Any = None) -> Any:
    """Allocate a CuPy array laid out by ``plan``; ``fill`` is "empty", "zeros", "value" or "copy"."""
    cp = cupy_module(f"backend {plan.backend!r}")
    size = plan.byte_offset + plan.nbytes
    memory = cp.cuda.alloc(size + plan.alignment)
    start = (-memory.ptr) % plan.alignment + plan.byte_offset
    array = cp.ndarray(plan.shape, dtype=dtype, memptr=memory + start, strides=plan.strides)
    if fill == "zeros":
        memory.memset_async(0, size + plan.alignment)
    elif fill == "value":
        array.fill(value)
    elif fill == "copy":
        array[...] = cp.asarray(value)
    return array
