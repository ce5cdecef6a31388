"""What an array says about itself: its dims (``__gt_dims__``), its origin (``__gt_origin__``),
its halo and its data interface (``__gt_data_interface__`` / ``__gt_interface__``).

Every rule and every reading lives in the Rust core and binding (``gridbuf._gridbuf``, module
``metadata``); the stencil binder uses the same functions without calling back into Python.
This module names them for the Python layer.
"""

from __future__ import annotations

from typing import Any

from ._gridbuf import (
    data_interface,
    data_interface_entry,
    data_interface_for,
    default_dims,
    get_dims,
    get_origin,
    normalize_dims,
    normalize_halo,
    normalize_origin,
)

#: Device keys of a data interface that mean host memory (GDP-3 uses None, its notebook "cpu"),
#: in the order they are looked up (by ``data_interface_entry``).
HOST_KEYS: tuple[Any, ...] = (None, "cpu")
#: Device keys that mean GPU memory, in the order they are looked up.
GPU_KEYS: tuple[Any, ...] = ("gpu", "cuda")

__all__ = [
    "GPU_KEYS",
    "HOST_KEYS",
    "data_interface",
    "data_interface_entry",
    "data_interface_for",
    "default_dims",
    "get_dims",
    "get_origin",
    "normalize_dims",
    "normalize_halo",
    "normalize_origin",
]
