"""Exception classes of gridbuf.

Every error gridbuf raises derives from :class:`GridbufError` and from the matching built-in
exception, so ``except ValueError`` keeps working in code written for NumPy or GT4Py.

The classes are declared once, in the compiled module (``crates/gridbuf-python/src/errors.rs``),
which raises them; this module is their public home.
"""

from __future__ import annotations

from ._gridbuf import (
    GridbufDeviceError,
    GridbufError,
    GridbufMemoryError,
    GridbufOverflowError,
    GridbufTypeError,
    GridbufValueError,
    UnknownPresetError,
)

__all__ = [
    "GridbufError",
    "GridbufValueError",
    "GridbufTypeError",
    "GridbufOverflowError",
    "GridbufMemoryError",
    "UnknownPresetError",
    "GridbufDeviceError",
]
