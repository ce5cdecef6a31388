"""gridbuf: the storage layer for stencil codes on structured grids.

Allocates N-dimensional fields with the stride order (layout), alignment and halos a stencil
backend runs fastest on, and returns them as plain NumPy arrays. The allocation functions are a
drop-in for ``gt4py.storage``'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import errors
from ._acquire import acquired
from ._allocation import empty_like, full_like, ones_like, zeros_like
from ._gridbuf import (
    Allocation,
    ArrayInfo,
    DLPackOwner,
    Plan,
    Preset,
    SyncState,
    array_info,
    as_numpy,
    empty,
    from_array,
    full,
    layout_map,
    ones,
    plan,
    preset,
    presets,
    register_preset,
    zeros,
)
from ._hooks import register_xarray_on_import as _register_xarray_on_import
from ._interop import as_cupy
from ._metadata import get_dims, get_origin
from ._versions import show_versions
from .field import Field
from . import kernels
from . import mirrored
from .mirrored import MirroredField, as_mirrored
from .stencil import Alignment, DefaultParameters, Extent, LayoutMap, stencil
from .errors import (
    GridbufDeviceError,
    GridbufError,
    GridbufMemoryError,
    GridbufOverflowError,
    GridbufTypeError,
    GridbufValueError,
    UnknownPresetError,
)

__version__ = "0.1.0"

_register_xarray_on_import()

if TYPE_CHECKING:
    from . import storage
else:

    def __getattr__(name: str) -> Any:
        # gridbuf.storage (GDP-3's Storage API) is imported on first use, keeping `import gridbuf` lean.
        if name == "storage":
            import importlib

            return importlib.import_module(".storage", __name__)
        raise AttributeError(f"module 'gridbuf' has no attribute {name!r}")


__all__ = [
    "Alignment",
    "Allocation",
    "DefaultParameters",
    "Extent",
    "LayoutMap",
    "MirroredField",
    "SyncState",
    "as_mirrored",
    "mirrored",
    "kernels",
    "stencil",
    "storage",
    "ArrayInfo",
    "DLPackOwner",
    "Field",
    "GridbufDeviceError",
    "GridbufError",
    "GridbufMemoryError",
    "GridbufOverflowError",
    "GridbufTypeError",
    "GridbufValueError",
    "Plan",
    "Preset",
    "UnknownPresetError",
    "acquired",
    "array_info",
    "as_cupy",
    "as_numpy",
    "empty",
    "empty_like",
    "errors",
    "from_array",
    "full",
    "full_like",
    "get_dims",
    "get_origin",
    "layout_map",
    "ones",
    "ones_like",
    "plan",
    "preset",
    "presets",
    "register_preset",
    "show_versions",
    "zeros",
    "zeros_like",
]
