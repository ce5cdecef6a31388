"""The opt-in ``Field`` wrapper: labels an existing array with dims, a halo and an origin,
without copying, and exposes every interface the array has plus gridbuf's own."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from . import _gridbuf
from ._metadata import data_interface, get_dims, host_entry, normalize_dims, normalize_origin
from .errors import GridbufTypeError, GridbufValueError


def _default_dims(ndim: int) -> tuple[str, ...]:
    return tuple("IJK"[:ndim]) if ndim <= 3 else ("I", "J", "K", *(str(d) for d in range(ndim - 3)))


def normalize_halo(halo: Any, shape: Sequence[int]) -> tuple[tuple[int, int], ...]:
    """Validate a halo: per axis an int or a (lower, upper) pair, fitting inside the shape."""
    expected = "expected one non-negative int or (lower, upper) pair per axis"
    try:
        entries = tuple(halo)
    except TypeError:
        raise GridbufTypeError(f"invalid type for halo ({halo!r}): {expected}") from None
    if len(entries) != len(shape):
        raise GridbufValueError(f"invalid halo {halo!r}: {expected}, {len(shape)} in all")
    out = []
    for axis, (h, n) in enumerate(zip(entries, shape)):
        pair = (h, h) if isinstance(h, (int, np.integer)) else tuple(h) if isinstance(h, Sequence) else None
        if pair is None or len(pair) != 2 or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in pair):
            raise GridbufTypeError(f"invalid type for halo ({halo!r}): {expected}")
        lo, hi = int(pair[0]), int(pair[1])
        if lo < 0 or hi < 0:
            raise GridbufValueError(f"invalid halo {halo!r}: {expected}")
        if lo + hi > n:
            raise GridbufValueError(f"invalid halo {halo!r}: the halo of axis {axis} ({lo} + {hi}) is larger than its extent {n}")
        out.append((lo, hi))
    return tuple(out)


def _allocation_plan(array: Any) -> Any:
    """The plan of a whole array gridbuf allocated, else None."""
    owner = getattr(array, "base", None)
    if isinstance(owner, _gridbuf.Allocation) and isinstance(array, np.ndarray):
        plan = owner.plan
        if array.shape == plan.shape and array.strides == plan.strides:
            return plan
    return None


class Field:
    """An array labelled with dims, a halo and an origin; the array is kept, never copied.

    Parameters
    ----------
    array : array_like
        Any array exposing ``__array_interface__``, ``__cuda_array_interface__``, the buffer
        protocol or DLPack (including another ``Field``, whose array is reused).
    dims : str or sequence of str, optional
        Dims per axis. Default: what the array declares (``__gt_dims__``, data interface, xarray),
        else ``"IJK"[:ndim]`` then data dims.
    origin : sequence of int, optional
        Start of the compute domain. Default: the array's ``__gt_origin__``, else the lower halo.
    halo : sequence of int or (int, int), optional
        Halo per axis. Default: the array's data-interface halo, the halo it was allocated with by
        gridbuf, else none.

    Raises
    ------
    GridbufTypeError
        The array exposes no interface gridbuf understands.
    GridbufValueError
        Dims, halo or origin that do not fit the array.
    """

    __slots__ = ("_array", "_dims", "_halo", "_origin", "__weakref__")

    def __init__(self, array: Any, dims: Any = None, origin: Any = None, halo: Any = None) -> None:
        if isinstance(array, Field):
            dims = array.dims if dims is None else dims
            halo = array.halo if halo is None else halo
            origin = array.origin if origin is None and halo is None else origin
            array = array.array
        shape = getattr(array, "shape", None)
        if shape is None or not any(
            hasattr(array, a) for a in ("__array_interface__", "__cuda_array_interface__", "__dlpack__", "__array__")
        ):
            if isinstance(array, (memoryview, bytearray)) or hasattr(array, "__buffer__"):
                array = np.asarray(array)  # a view of the same memory, not a copy
                shape = array.shape
            else:
                raise GridbufTypeError(
                    f"invalid type for array ({type(array).__name__}): expected an array exposing the array "
                    "interface, the CUDA array interface, DLPack or the buffer protocol; use Field.from_array to copy"
                )
        shape = tuple(int(n) for n in shape)
        self._array = array
        if dims is None:
            dims = get_dims(array)
        self._dims = _default_dims(len(shape)) if dims is None else normalize_dims(dims, len(shape), "dims")
        if halo is None:
            info = host_entry(data_interface(array))
            plan = _allocation_plan(array)
            if info is not None and info.get("halo") is not None:
                halo = info["halo"]
            elif plan is not None:
                halo = plan.halo
            else:
                halo = ((0, 0),) * len(shape)
        self._halo = normalize_halo(halo, shape)
        if origin is None:
            origin = getattr(array, "__gt_origin__", None)
        if origin is None:
            self._origin = tuple(lo for lo, _ in self._halo)
        else:
            self._origin = normalize_origin(origin, shape, "origin")

    # -- allocation ---------------------------------------------------------------------------
    @classmethod
    def _allocate(cls, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Field:
        array = fn(*args, **kwargs)
        plan = array.base.plan
        return cls(array, dims=plan.dims, halo=plan.halo)

    @classmethod
    def empty(cls, shape: Any, dtype: Any = None, **kwargs: Any) -> Field:
        """Allocate with :func:`gridbuf.empty`; dims and halo come from the allocation."""
        return cls._allocate(_gridbuf.empty, (shape, dtype), kwargs)

    @classmethod
    def zeros(cls, shape: Any, dtype: Any = None, **kwargs: Any) -> Field:
        """Allocate with :func:`gridbuf.zeros`; dims and halo come from the allocation."""
        return cls._allocate(_gridbuf.zeros, (shape, dtype), kwargs)

    @classmethod
    def ones(cls, shape: Any, dtype: Any = None, **kwargs: Any) -> Field:
        """Allocate with :func:`gridbuf.ones`; dims and halo come from the allocation."""
        return cls._allocate(_gridbuf.ones, (shape, dtype), kwargs)

    @classmethod
    def full(cls, shape: Any, fill_value: Any, dtype: Any = None, **kwargs: Any) -> Field:
        """Allocate with :func:`gridbuf.full`; dims and halo come from the allocation."""
        return cls._allocate(_gridbuf.full, (shape, fill_value, dtype), kwargs)

    @classmethod
    def from_array(cls, data: Any, dtype: Any = None, **kwargs: Any) -> Field:
        """Copy ``data`` with :func:`gridbuf.from_array`; dims and halo come from the allocation.

        When ``dims`` is not given, the dims ``data`` declares are kept.
        """
        if "dims" not in kwargs and "dimensions" not in kwargs and not isinstance(data, (list, tuple)):
            declared = get_dims(data)
            if declared is not None:
                kwargs["dims"] = declared
        return cls._allocate(_gridbuf.from_array, (data, dtype), kwargs)

    # -- description --------------------------------------------------------------------------
    @property
    def array(self) -> Any:
        """The wrapped array."""
        return self._array

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of the array, halo included."""
        return tuple(int(n) for n in self._array.shape)

    @property
    def dtype(self) -> np.dtype[Any]:
        """Dtype of the array."""
        return np.dtype(self._array.dtype)

    @property
    def ndim(self) -> int:
        """Number of axes."""
        return len(self._array.shape)

    @property
    def dims(self) -> tuple[str, ...]:
        """Dims per axis."""
        return self._dims

    @property
    def halo(self) -> tuple[tuple[int, int], ...]:
        """Halo per axis as (lower, upper)."""
        return self._halo

    @property
    def origin(self) -> tuple[int, ...]:
        """Start of the compute domain."""
        return self._origin

    @property
    def domain_shape(self) -> tuple[int, ...]:
        """Shape without the halo."""
        return tuple(n - lo - hi for n, (lo, hi) in zip(self.shape, self._halo))

    @property
    def domain_view(self) -> Field:
        """A Field over the halo-free part of the array (a view, origin zero, no halo)."""
        index = tuple(slice(lo, n - hi) for n, (lo, hi) in zip(self.shape, self._halo))
        return Field(self._array[index], dims=self._dims, origin=(0,) * self.ndim, halo=((0, 0),) * self.ndim)

    def __repr__(self) -> str:
        return f"Field(shape={self.shape}, dtype={self.dtype}, dims={self._dims}, halo={self._halo}, origin={self._origin})"

    # -- interfaces ---------------------------------------------------------------------------
    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        if copy:
            return np.array(self._array, dtype=dtype, copy=True)
        return np.asarray(self._array, dtype=dtype)

    @property
    def __array_interface__(self) -> dict[str, Any]:
        iface = getattr(self._array, "__array_interface__", None)
        if iface is not None:
            return iface
        if hasattr(self._array, "__cuda_array_interface__"):
            raise AttributeError("the wrapped array lives on a GPU and has no __array_interface__")
        return np.asarray(self._array).__array_interface__

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        iface = getattr(self._array, "__cuda_array_interface__", None)
        if iface is None:
            raise AttributeError("the wrapped array has no __cuda_array_interface__")
        return iface

    def __dlpack__(self, **kwargs: Any) -> Any:
        target = self._array if hasattr(self._array, "__dlpack__") else np.asarray(self._array)
        return target.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        target = self._array if hasattr(self._array, "__dlpack_device__") else np.asarray(self._array)
        return target.__dlpack_device__()

    @property
    def __gt_dims__(self) -> tuple[str, ...]:
        return self._dims

    @property
    def __gt_origin__(self) -> tuple[int, ...]:
        return self._origin

    @property
    def __gt_data_interface__(self) -> dict[Any, dict[str, Any]]:
        inner = data_interface(self._array) or {}
        out: dict[Any, dict[str, Any]] = {}
        host = getattr(self._array, "__array_interface__", None)
        if host is None and not hasattr(self._array, "__cuda_array_interface__"):
            host = np.asarray(self._array).__array_interface__
        gpu = getattr(self._array, "__cuda_array_interface__", None)
        for key, iface in ((None, host), ("gpu", gpu)):
            if iface is None:
                continue
            info = dict(iface)
            callbacks = host_entry(inner) if key is None else inner.get("gpu")
            for name in ("acquire", "release", "touch"):
                if callbacks is not None and callbacks.get(name) is not None:
                    info[name] = callbacks[name]
            info["dims"] = self._dims
            info["halo"] = self._halo
            out[key] = info
        return out
