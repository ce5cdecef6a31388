"""GT4Py's own gtscript objects read as gridbuf's, so that a definition written against
``gt4py.cartesian.gtscript`` runs unchanged, whatever its import spelling: field descriptors
(``Field[IJK, np.float64]`` and aliases of it), global tables, the axes and axis positions
(``I``, ``J[-1] + 1``, ``I[1:3]``, ``K + 1``), the native math functions and
``gtscript.function`` helpers.

The objects are recognised by their class's module and name, never by importing GT4Py:
``import gridbuf`` imports no GT4Py, and a definition that uses none of it pays one attribute
read per name it looks up."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._math_functions import NATIVE

_GT4PY_GTSCRIPT = "gt4py.cartesian.gtscript"
_AXIS_SETS = ("IJK", "IJ", "K", "I", "J", "IK", "JK")


def is_gtscript_function(fn: Any) -> bool:
    """Whether ``fn`` is a ``gtscript.function`` helper, gridbuf's or GT4Py's (which marks it
    with the ``_gtscript_`` attributes of its frontend)."""
    return bool(getattr(fn, "__gtscript_function__", False)) or (callable(fn) and isinstance(getattr(fn, "_gtscript_", None), dict))


def native(value: Any) -> Any:
    """``value`` as gridbuf's gtscript object if it is one of GT4Py's, else ``value`` itself."""
    if getattr(type(value), "__module__", None) == _GT4PY_GTSCRIPT:
        return _convert(value)
    if callable(value) and getattr(value, "__module__", None) == _GT4PY_GTSCRIPT:
        # GT4Py's math functions: empty bodies, known by name.
        return NATIVE.get(getattr(value, "__name__", ""), value)
    if isinstance(value, tuple) and value and all(getattr(type(v), "__module__", None) == _GT4PY_GTSCRIPT for v in value):
        return tuple(_convert(v) for v in value)  # IJ, IJK, ...
    return value


def _convert(value: Any) -> Any:
    from . import Axis, AxisIndex, AxisInterval, ShiftedAxis
    from . import I as _I
    from . import J as _J
    from . import K as _K
    from ._values import FieldType, TableType

    kind = type(value).__name__
    if kind == "Axis":
        return {"I": _I, "J": _J, "K": _K}.get(value.name, Axis(value.name))
    if kind == "AxisIndex":
        return AxisIndex(value.axis, value.index, value.offset)
    if kind == "AxisInterval":
        return AxisInterval(value.axis, value.start, value.end)
    if kind == "ShiftedAxis":
        return ShiftedAxis(value.name, value.shift)
    if kind == "_FieldDescriptor":
        names = "".join(getattr(a, "name", str(a)) for a in value.axes)
        if names and names not in _AXIS_SETS:
            from ..errors import GridbufTypeError

            raise GridbufTypeError(f"invalid Field axes {value.axes!r}: expected IJK, IJ, K, I, J, IK or JK")
        data_shape = tuple(int(n) for n in value.data_dims)
        if not names:  # GlobalTable[(dtype, (n, ...))]: no spatial axis
            return TableType(np.dtype(value.dtype), data_shape)
        if isinstance(value.dtype, str):  # a symbol given by `dtypes=` when the stencil is built
            return FieldType(np.dtype(np.float64), names, data_shape, symbol=value.dtype)
        return FieldType(np.dtype(value.dtype), names, data_shape)
    return value
