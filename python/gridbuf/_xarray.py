"""xarray support: DataArray accessors that expose ``__gt_dims__`` and ``__gt_data_interface__``
with the dims taken from the DataArray (GDP-3's default xarray data interface).

Registered when xarray is imported (see ``gridbuf._register_xarray_on_import``), never importing
xarray by itself. The dims are read, and the data interface built, by the same binding functions
the stencil binder and ``gridbuf.Field`` use.
"""

from __future__ import annotations

from typing import Any

from ._metadata import data_interface_for, get_dims


def gt_dims_accessor(da: Any) -> tuple[str, ...] | None:
    """``DataArray.__gt_dims__``: the DataArray's dims if they are gt dims, else None."""
    return get_dims(da)


def gt_data_interface_accessor(da: Any) -> dict[Any, dict[str, Any]] | None:
    """``DataArray.__gt_data_interface__``: the data's buffer infos with the DataArray's dims."""
    dims = get_dims(da)
    if dims is None:
        return None
    return data_interface_for(da.data, dims, strict=True)


def register(xr: Any) -> None:
    """Register the accessors on ``xr.DataArray`` (once)."""
    if getattr(xr.DataArray, "_gridbuf_registered", False):
        return
    xr.register_dataarray_accessor("__gt_dims__")(gt_dims_accessor)
    xr.register_dataarray_accessor("__gt_data_interface__")(gt_data_interface_accessor)
    xr.DataArray._gridbuf_registered = True
