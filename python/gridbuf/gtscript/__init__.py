"""A drop-in for the core of ``gt4py.cartesian.gtscript`` that runs stencils in gridbuf's Rust
core, with no compile step.

Replace ``from gt4py.cartesian import gtscript`` with ``from gridbuf import gtscript`` and the
same definitions run: the source is parsed once, lowered to a small IR and handed to Rust, which
plans it (extents of temporaries, K-loop order, tiles, sweeps), compiles each statement to
machine code (Cranelift; ``GRIDBUF_GTSCRIPT_JIT=0`` keeps everything on the tape interpreter)
and runs it in tiles over all cores (``GRIDBUF_GTSCRIPT_SWEEP=0`` turns the plane-by-plane
sweeps off, for comparison; both switches are read when a stencil is defined). Calls go through gridbuf's argument binder (``origin=``,
``domain=``, ``validate_args=``) exactly like :func:`gridbuf.stencil` kernels.

Supported subset: ``Field[dtype]``, ``Field[IJ, dtype]``, ``Field[K, dtype]``,
``Field[IJK, (dtype, (n,))]`` (float64 or float32, one dtype per stencil), typed scalar
parameters, ``with computation(PARALLEL|FORWARD|BACKWARD), interval(...)`` blocks (also nested
``with interval`` blocks), assignments to fields and temporaries at offset zero, relative
offsets, data-dim indices, arithmetic, comparisons, ``and``/``or``/``not``, ``x if c else y``,
``if``/``elif``/``else``, ``**``, GT4Py's native math functions (imported or bare), ``gtscript.function`` helpers and externals
(``from __externals__ import NAME``). Data-dim fields (vectors ``(dtype, (n,))`` and matrices
``(dtype, (r, c))``) can also be used whole, as in GT4Py, on the right of an assignment to a
whole data-dim field of the same shape (``out = a``, ``out[0, 0, 0] = m @ v``), which writes
one component after the other: element-wise ``+ - * / ** %`` between vectors of one length or
a vector and a scalar (also unary ``-``, and scalar subexpressions, which GT4Py 1.1.12 fails
on), matrix ``@`` vector, ``m.T``, and a scalar assigned to every component. Matrix @ matrix,
vector @ vector, element-wise operations on matrices, math functions, ``x if c else y`` and
temporaries of whole vectors, and whole-vector assignments inside ``if`` are rejected, as GT4Py
rejects them; so is a component (``a[0, 0, 0][1]``) on the right of a whole-vector assignment,
which GT4Py reads as the whole vector (assign it to a temporary first). Anything else is rejected when the stencil is defined, with a
:class:`gridbuf.GridbufValueError` naming the construct and the line.
"""

from __future__ import annotations

import builtins as _b
import inspect
import math as _m
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _gridbuf
from ..errors import GridbufTypeError, GridbufValueError
from ._frontend import FieldType, Lowering

__all__ = [
    "BACKWARD", "FORWARD", "PARALLEL", "I", "J", "K", "IJ", "IJK", "Field", "GTStencil",
    "abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "cbrt", "ceil", "computation",
    "cos", "cosh", "erf", "erfc", "exp", "floor", "function", "gamma", "interval", "isfinite",
    "isinf", "isnan", "log", "log10", "max", "min", "mod", "round", "round_away_from_zero",
    "sin", "sinh", "sqrt", "stencil", "tan", "tanh", "trunc",
]  # fmt: skip


class _Order:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


PARALLEL = _Order("PARALLEL")
FORWARD = _Order("FORWARD")
BACKWARD = _Order("BACKWARD")


class _Axis:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


I = _Axis("I")  # noqa: E741 - GT4Py's name
J = _Axis("J")
K = _Axis("K")
IJ = (I, J)
IJK = (I, J, K)
_AXIS_SETS = {(I, J, K): "IJK", (I, J): "IJ", (K,): "K", (I,): "I", (J,): "J", (I, K): "IK", (J, K): "JK"}


def _axes(spec: Any) -> str:
    spec = spec if isinstance(spec, tuple) else (spec,)
    key = tuple(spec)
    if key in _AXIS_SETS:
        return _AXIS_SETS[key]
    raise GridbufTypeError(f"invalid Field axes {spec!r}: expected IJK, IJ or K")


class Field:
    """``Field[dtype]``, ``Field[IJ, dtype]``, ``Field[K, dtype]``, ``Field[IJK, (dtype, (n,))]``."""

    def __class_getitem__(cls, params: Any) -> FieldType:
        axes = "IJK"
        if isinstance(params, tuple) and len(params) == 2:
            first = params[0]
            if isinstance(first, _Axis) or (isinstance(first, tuple) and first and all(isinstance(a, _Axis) for a in first)):
                axes, params = _axes(first), params[1]
        data_shape: tuple[int, ...] = ()
        if isinstance(params, tuple) and len(params) == 2 and isinstance(params[1], tuple):
            params, data_shape = params[0], tuple(int(n) for n in params[1])
        try:
            dtype = np.dtype(params)
        except TypeError:
            if isinstance(params, str):
                # A symbol given at stencil creation: `dtypes={"DT": np.float32}`.
                return FieldType(np.dtype(np.float64), axes, data_shape, symbol=params)
            raise GridbufTypeError(f"invalid Field dtype {params!r}: expected a NumPy dtype") from None
        return FieldType(dtype, axes, data_shape)


def computation(order: Any) -> Any:
    """Only meaningful inside a stencil definition."""
    raise GridbufValueError("computation(...) can only be used inside a gtscript stencil definition")


def interval(*args: Any) -> Any:
    """Only meaningful inside a stencil definition."""
    raise GridbufValueError("interval(...) can only be used inside a gtscript stencil definition")


def _math(name: str, f: Callable[..., Any]) -> Callable[..., Any]:
    def fn(*args: Any) -> Any:
        return f(*args)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``{name}`` in stencil definitions (outside one it applies NumPy's)."
    return fn


def _round_away_from_zero(x: Any) -> Any:
    return np.copysign(np.floor(np.abs(x) + 0.5), x)


abs = _math("abs", np.abs)  # noqa: A001 - GT4Py's names
min = _math("min", np.minimum)  # noqa: A001
max = _math("max", np.maximum)  # noqa: A001
mod = _math("mod", np.mod)
sqrt = _math("sqrt", np.sqrt)
exp = _math("exp", np.exp)
log = _math("log", np.log)
log10 = _math("log10", np.log10)
sin = _math("sin", np.sin)
cos = _math("cos", np.cos)
tan = _math("tan", np.tan)
asin = _math("asin", np.arcsin)
acos = _math("acos", np.arccos)
atan = _math("atan", np.arctan)
sinh = _math("sinh", np.sinh)
cosh = _math("cosh", np.cosh)
tanh = _math("tanh", np.tanh)
asinh = _math("asinh", np.arcsinh)
acosh = _math("acosh", np.arccosh)
atanh = _math("atanh", np.arctanh)
gamma = _math("gamma", np.vectorize(_m.gamma, otypes=[float]))
cbrt = _math("cbrt", np.cbrt)
erf = _math("erf", np.vectorize(_m.erf, otypes=[float]))
erfc = _math("erfc", np.vectorize(_m.erfc, otypes=[float]))
floor = _math("floor", np.floor)
ceil = _math("ceil", np.ceil)
trunc = _math("trunc", np.trunc)
round = _math("round", np.round)  # noqa: A001
round_away_from_zero = _math("round_away_from_zero", _round_away_from_zero)
isfinite = _math("isfinite", np.isfinite)
isnan = _math("isnan", np.isnan)
isinf = _math("isinf", np.isinf)

# GT4Py's native functions by name: the frontend resolves a bare name among them (``sqrt(x)``
# without an import) when the definition binds no such name itself.
_NATIVE: dict[str, Callable[..., Any]] = {
    _name: globals()[_name]
    for _name in (
        "abs", "min", "max", "mod", "sqrt", "exp", "log", "log10", "sin", "cos", "tan", "asin",
        "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "gamma", "cbrt", "erf",
        "erfc", "floor", "ceil", "trunc", "round", "round_away_from_zero", "isfinite", "isnan",
        "isinf",
    )
}  # fmt: skip

# The math functions by identity, for the frontend (also math.* and numpy's).
_MATH: dict[int, str] = {}
for _name, _f in _NATIVE.items():
    _MATH[id(_f)] = _name
    for _mod in (_m, np):
        if hasattr(_mod, _name):
            _MATH[id(getattr(_mod, _name))] = _name
for _f, _name in (
    (np.minimum, "min"), (np.maximum, "max"), (np.absolute, "abs"), (np.fabs, "abs"),
    (_m.fabs, "abs"), (np.arcsin, "asin"), (np.arccos, "acos"), (np.arctan, "atan"),
    (np.arcsinh, "asinh"), (np.arccosh, "acosh"), (np.arctanh, "atanh"), (np.rint, "round"),
    (np.around, "round"), (_b.round, "round"), (np.remainder, "mod"), (np.power, "pow"),
    (_m.pow, "pow"),
):  # fmt: skip
    _MATH[id(_f)] = _name


def function(func: Callable[..., Any]) -> Callable[..., Any]:
    """Mark ``func`` as a gtscript function: calls in a stencil are inlined."""
    func.__gtscript_function__ = True  # type: ignore[attr-defined]
    return func


class GTStencil:
    """A gtscript stencil run by gridbuf: call it like a GT4Py stencil object.

    ``st(*args, origin=None, domain=None, validate_args=True, exec_info=None, **kwargs)`` with
    fields and scalar parameters given positionally or by name.
    """

    def __init__(self, definition: Callable[..., Any], externals: dict[str, Any] | None, name: str | None, dtypes: dict[str, Any] | None = None) -> None:
        lowering = Lowering(definition, externals, name, dtypes)
        self.ir: str = lowering.lower()
        self.definition_func = definition
        self.__name__ = self.name = lowering.name
        self.__doc__ = definition.__doc__
        self._params = lowering.params
        self._program = _gridbuf.gtscript_compile(self.ir)
        fields = []
        for f in self._program.fields:
            f = dict(f)
            f["dtype"] = np.dtype(f["dtype"])
            fields.append(f)
        self.field_names: tuple[str, ...] = tuple(f["name"] for f in fields)
        self.scalar_names: tuple[str, ...] = tuple(self._program.scalars)
        self.fields = fields
        self._stencil = _gridbuf.python_stencil(self.name, self._program, fields, list(self.scalar_names))

    def __call__(self, *args: Any, origin: Any = None, domain: Any = None, validate_args: bool = True, exec_info: Any = None, **kwargs: Any) -> None:
        if len(args) > len(self._params):
            raise GridbufTypeError(f"stencil {self.name!r} takes {len(self._params)} arguments ({', '.join(self._params)}), got {len(args)}")
        values = dict(zip(self._params, args))
        for k, v in kwargs.items():
            if k not in self._params:
                raise GridbufTypeError(f"stencil {self.name!r} has no parameter {k!r} (parameters: {', '.join(self._params)})")
            if k in values:
                raise GridbufTypeError(f"stencil {self.name!r} got parameter {k!r} twice")
            values[k] = v
        missing = [p for p in self._params if p not in values]
        if missing:
            raise GridbufTypeError(f"stencil {self.name!r} misses the arguments {', '.join(map(repr, missing))}")
        scalars = {}
        for s in self.scalar_names:
            v = values[s]
            if not isinstance(v, (int, float, np.number, np.bool_)) or isinstance(v, np.ndarray):
                raise GridbufTypeError(f"invalid type for scalar parameter {s!r} of stencil {self.name!r} ({type(v).__name__}): expected a real number")
            scalars[s] = v
        fields = [values[f] for f in self.field_names]
        for f, v in zip(self.field_names, fields):
            if isinstance(v, (int, float, np.number)):
                raise GridbufTypeError(f"invalid type for field {f!r} of stencil {self.name!r} ({type(v).__name__}): expected an array")
        self._stencil(*fields, origin=origin, domain=domain, validate_args=validate_args, **scalars)

    def __repr__(self) -> str:
        return f"GTStencil({self.name!r}, fields={self.field_names}, scalars={self.scalar_names})"


def stencil(
    backend: Any = None,
    definition: Callable[..., Any] | None = None,
    *,
    externals: dict[str, Any] | None = None,
    name: str | None = None,
    dtypes: dict[str, Any] | None = None,
    **kwargs: Any,
) -> Any:
    """Build a stencil from a gtscript definition, as ``gt4py.cartesian.gtscript.stencil``.

    Parameters
    ----------
    backend : str, optional
        Accepted for compatibility and ignored: gridbuf runs every stencil the same way.
    definition : callable, optional
        The definition; without it, returns a decorator.
    externals : dict, optional
        Compile-time constants and gtscript functions for ``from __externals__ import ...``.
    name : str, optional
        Name used in messages.
    dtypes : dict, optional
        Dtypes of symbols used in annotations (``Field["DT"]``, ``s: "DT"``), as in GT4Py.
    **kwargs
        Other GT4Py options (``rebuild``, ``build_info``, ...), accepted and ignored.

    Returns
    -------
    GTStencil or callable
        The stencil, or a decorator that builds it.
    """
    if definition is None and callable(backend) and not isinstance(backend, str):
        definition, backend = backend, None
    if definition is None:
        return lambda d: GTStencil(d, externals, name, dtypes)
    if not inspect.isfunction(definition):
        raise GridbufTypeError(f"invalid type for definition ({definition!r}): expected a Python function")
    return GTStencil(definition, externals, name, dtypes)
