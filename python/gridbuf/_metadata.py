"""What an array says about itself: its dims (``__gt_dims__``), its origin (``__gt_origin__``) and
its data interface (``__gt_data_interface__`` / ``__gt_interface__``)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from .errors import GridbufTypeError, GridbufValueError

_DATA_DIM = re.compile(r"[0-9]+\Z")
#: Device keys of a data interface that mean host memory (GDP-3 uses None, its notebook "cpu").
HOST_KEYS: tuple[Any, ...] = (None, "cpu")
#: Device keys that mean GPU memory.
GPU_KEYS: tuple[Any, ...] = ("gpu", "cuda")


def _dim_name(d: Any, source: str) -> str:
    name = getattr(d, "__gt_axis_name__", None)
    if name is None:
        name = getattr(d, "value", d)
    if not isinstance(name, str):
        raise GridbufTypeError(
            f"invalid type for {source} entry {d!r}: expected a dimension name (str), an object with "
            "__gt_axis_name__, or an enum whose .value is a name"
        )
    return name


def normalize_dims(dims: Any, ndim: int | None, source: str) -> tuple[str, ...]:
    """Validate dims given as a string (one character per axis) or a sequence of names.

    Parameters
    ----------
    dims : str or sequence
        ``"KJI"``, ``("I", "J", "0")``, or objects with ``__gt_axis_name__`` or ``.value``.
    ndim : int or None
        Number of axes the dims must name; None skips the check.
    source : str
        What the dims came from, for error messages.

    Returns
    -------
    tuple of str
        The validated names.
    """
    if isinstance(dims, str):
        names = tuple(dims)
    elif isinstance(dims, Sequence) or (hasattr(dims, "__iter__") and not isinstance(dims, (bytes, Mapping))):
        names = tuple(_dim_name(d, source) for d in dims)
    else:
        raise GridbufTypeError(f"invalid type for {source} ({dims!r}): expected a string such as 'IJK' or a sequence of names")
    for name in names:
        if name not in ("I", "J", "K") and not _DATA_DIM.match(name):
            raise GridbufValueError(
                f"invalid {source} {names!r}: {name!r} is not a dimension name (expected 'I', 'J', 'K' or a decimal string such as '0')"
            )
    if len(set(names)) != len(names):
        raise GridbufValueError(f"invalid {source} {names!r}: each dimension may appear only once")
    if ndim is not None and len(names) != ndim:
        raise GridbufValueError(f"invalid {source} {names!r}: the array has {ndim} axes, so it needs {ndim} names")
    return names


def _shape_of(obj: Any) -> tuple[int, ...] | None:
    shape = getattr(obj, "shape", None)
    if shape is None:
        for attr in ("__array_interface__", "__cuda_array_interface__"):
            iface = getattr(obj, attr, None)
            if isinstance(iface, Mapping) and "shape" in iface:
                return tuple(iface["shape"])
        info = host_entry(data_interface(obj)) or gpu_entry(data_interface(obj))
        if info is not None and "shape" in info:
            return tuple(info["shape"])
        return None
    return tuple(shape)


def data_interface(obj: Any) -> Mapping[Any, Any] | None:
    """The ``__gt_data_interface__`` (or the older ``__gt_interface__``) of ``obj``, or None."""
    for attr in ("__gt_data_interface__", "__gt_interface__"):
        iface = getattr(obj, attr, None)
        if iface is not None:
            if not isinstance(iface, Mapping):
                raise GridbufTypeError(
                    f"invalid {attr} of {type(obj).__name__}: expected a mapping from device key to buffer info, got {type(iface).__name__}"
                )
            return iface
    return None


def host_entry(iface: Mapping[Any, Any] | None) -> Mapping[str, Any] | None:
    """The buffer info for host memory in a data interface, or None."""
    if iface is None:
        return None
    for key in HOST_KEYS:
        if key in iface:
            return iface[key]
    return None


def gpu_entry(iface: Mapping[Any, Any] | None) -> Mapping[str, Any] | None:
    """The buffer info for GPU memory in a data interface, or None."""
    if iface is None:
        return None
    for key in GPU_KEYS:
        if key in iface:
            return iface[key]
    return None


def get_dims(obj: Any, annotation: Any = None) -> tuple[str, ...] | None:
    """The semantic dims of an array, in index order.

    Looks, in order, at ``obj.__gt_dims__``, the ``"dims"`` of its data interface, the ``.dims``
    of an xarray DataArray, and the dims of ``annotation`` (a ``gridbuf.Field[...]`` annotation,
    an object with ``.dims``, a string or a sequence of names).

    Parameters
    ----------
    obj : array_like
        Any array gridbuf understands.
    annotation : optional
        Fallback dims, e.g. from a stencil's parameter annotation.

    Returns
    -------
    tuple of str or None
        The dims, validated against the number of axes; None when nothing declares them.

    Raises
    ------
    GridbufValueError
        Invalid, duplicated or too few/many names.
    GridbufTypeError
        Dims of a type that cannot name dimensions.
    """
    shape = _shape_of(obj)
    ndim = None if shape is None else len(shape)
    dims = getattr(obj, "__gt_dims__", None)
    if dims is not None:
        return normalize_dims(dims, ndim, "__gt_dims__")
    info = host_entry(data_interface(obj)) or gpu_entry(data_interface(obj))
    if info is not None and info.get("dims") is not None:
        return normalize_dims(info["dims"], ndim, "__gt_data_interface__ dims")
    if type(obj).__module__.startswith("xarray.") and hasattr(obj, "dims"):
        # Only gt names count: a DataArray labelled (lat, lon, ...) declares no gt dims.
        names = tuple(str(d) for d in obj.dims)
        if all(n in ("I", "J", "K") or _DATA_DIM.match(n) for n in names):
            return normalize_dims(names, ndim, "DataArray.dims")
    if annotation is not None:
        dims = getattr(annotation, "dims", annotation)
        if dims is not None:
            return normalize_dims(dims, ndim, "annotation dims")
    return None


def get_origin(obj: Any) -> tuple[int, ...] | None:
    """The ``__gt_origin__`` of an array as a tuple of ints, validated against its shape.

    Parameters
    ----------
    obj : array_like
        Any array gridbuf understands.

    Returns
    -------
    tuple of int or None
        The origin, or None when the array does not declare one.

    Raises
    ------
    GridbufTypeError
        The origin is not a sequence of ints.
    GridbufValueError
        Wrong length, negative, or beyond the shape.
    """
    origin = getattr(obj, "__gt_origin__", None)
    if origin is None:
        return None
    return normalize_origin(origin, _shape_of(obj), "__gt_origin__")


def normalize_origin(origin: Any, shape: Sequence[int] | None, source: str) -> tuple[int, ...]:
    """Validate an origin: one int per axis, each between 0 and the axis extent."""
    try:
        values = tuple(origin)
    except TypeError:
        raise GridbufTypeError(f"invalid type for {source} ({origin!r}): expected a sequence of ints") from None
    if not all(isinstance(v, int) and not isinstance(v, bool) or hasattr(v, "__index__") and not isinstance(v, bool) for v in values):
        raise GridbufTypeError(f"invalid type for {source} ({origin!r}): expected a sequence of ints")
    values = tuple(int(v) for v in values)
    if shape is not None:
        if len(values) != len(shape):
            raise GridbufValueError(f"invalid {source} {values!r}: expected one entry per axis of the shape {tuple(shape)!r}")
        for axis, (o, n) in enumerate(zip(values, shape)):
            if not 0 <= o <= n:
                raise GridbufValueError(
                    f"invalid {source} {values!r}: entry {o} of axis {axis} must lie between 0 and the extent {n}"
                )
    elif any(v < 0 for v in values):
        raise GridbufValueError(f"invalid {source} {values!r}: entries must be non-negative")
    return values
