"""xarray support: DataArray accessors that expose ``__gt_dims__`` and ``__gt_data_interface__``
with the dims taken from the DataArray (GDP-3's default xarray data interface).

Registered when xarray is imported (see ``gridbuf._register_xarray_on_import``), never importing
xarray by itself.
"""

from __future__ import annotations

from typing import Any

from ._metadata import data_interface, get_dims, normalize_dims
from .errors import GridbufError, GridbufValueError


def _gt_dims_of(da: Any) -> tuple[str, ...] | None:
    try:
        dims = normalize_dims(tuple(str(d) for d in da.dims), da.ndim, "DataArray.dims")
    except GridbufError:
        return None  # a DataArray labelled with other names (lat, lon, ...) declares no gt dims
    inner = get_dims(da.data)
    if inner is not None and inner != dims:
        raise GridbufValueError(
            f"invalid DataArray dims {dims!r}: the underlying data declares the different dims {inner!r}"
        )
    return dims


def gt_dims_accessor(da: Any) -> tuple[str, ...] | None:
    """``DataArray.__gt_dims__``: the DataArray's dims if they are gt dims, else None."""
    return _gt_dims_of(da)


def gt_data_interface_accessor(da: Any) -> dict[Any, dict[str, Any]] | None:
    """``DataArray.__gt_data_interface__``: the data's buffer infos with the DataArray's dims."""
    dims = _gt_dims_of(da)
    if dims is None:
        return None
    data = da.data
    inner = data_interface(data)
    if inner is not None:
        out = {}
        for key, info in inner.items():
            info = dict(info)
            if info.get("dims") is not None and tuple(normalize_dims(info["dims"], da.ndim, "dims")) != dims:
                raise GridbufValueError(
                    f"invalid DataArray dims {dims!r}: its data's interface for device {key!r} declares {tuple(info['dims'])!r}"
                )
            info["dims"] = dims
            out[key] = info
        return out
    out = {}
    host = getattr(data, "__array_interface__", None)
    gpu = getattr(data, "__cuda_array_interface__", None)
    if host is not None:
        out[None] = {**host, "dims": dims}
    if gpu is not None:
        out["gpu"] = {**gpu, "dims": dims}
    return out or None


def register(xr: Any) -> None:
    """Register the accessors on ``xr.DataArray`` (once)."""
    if getattr(xr.DataArray, "_gridbuf_registered", False):
        return
    xr.register_dataarray_accessor("__gt_dims__")(gt_dims_accessor)
    xr.register_dataarray_accessor("__gt_data_interface__")(gt_data_interface_accessor)
    xr.DataArray._gridbuf_registered = True
