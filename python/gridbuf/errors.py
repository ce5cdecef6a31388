"""Exception classes of gridbuf.

Every error gridbuf raises derives from :class:`GridbufError` and from the matching built-in
exception, so ``except ValueError`` keeps working in code written for NumPy or GT4Py.
"""

from __future__ import annotations

__all__ = [
    "GridbufError",
    "GridbufValueError",
    "GridbufTypeError",
    "GridbufOverflowError",
    "GridbufMemoryError",
    "UnknownPresetError",
    "GridbufDeviceError",
]


class GridbufError(Exception):
    """Base class of every error gridbuf raises."""


class GridbufValueError(GridbufError, ValueError):
    """A parameter has an allowed type but a value that is not valid."""


class GridbufTypeError(GridbufError, TypeError):
    """A parameter has a type gridbuf cannot use."""


class GridbufOverflowError(GridbufError, OverflowError):
    """A size, stride or offset does not fit the address space."""


class GridbufMemoryError(GridbufError, MemoryError):
    """The memory for an allocation could not be obtained."""


class UnknownPresetError(GridbufValueError, RuntimeError):
    """A preset (backend) name that is not registered; the message lists the valid names.

    Also a :class:`RuntimeError`, the class ``gt4py.storage`` raises for an unknown backend, so
    handlers written for GT4Py keep working after the switch.
    """


class GridbufDeviceError(GridbufError, RuntimeError):
    """A device (GPU) or its array library (CuPy) is needed but not available, or memory lives on
    a device the operation cannot use."""
