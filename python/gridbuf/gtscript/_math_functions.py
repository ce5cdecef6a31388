"""The math functions of gtscript stencil definitions, under GT4Py's names (``exp``, ``sqrt``,
``min``, ...; outside a definition each applies NumPy's), and the tables by which the frontend
knows them: by name (`NATIVE`, for a bare ``sqrt(x)``) and by identity (`MATH`, also Python's
``math`` and NumPy's functions). Its own module, so that the lowering imports it at its top
instead of from the package, which imports the lowering."""

from __future__ import annotations

import builtins as _b
import math as _m
from collections.abc import Callable
from typing import Any

import numpy as np


def _math(name: str, f: Callable[..., Any]) -> Callable[..., Any]:
    def fn(*args: Any) -> Any:
        return f(*args)

    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = "gridbuf.gtscript"  # where users find it (and pickle looks it up)
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
NATIVE: dict[str, Callable[..., Any]] = {
    _name: globals()[_name]
    for _name in (
        "abs", "min", "max", "mod", "sqrt", "exp", "log", "log10", "sin", "cos", "tan", "asin",
        "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "gamma", "cbrt", "erf",
        "erfc", "floor", "ceil", "trunc", "round", "round_away_from_zero", "isfinite", "isnan",
        "isinf",
    )
}  # fmt: skip

# The math functions by identity, for the frontend (also math.* and numpy's).
MATH: dict[int, str] = {}
for _name, _f in NATIVE.items():
    MATH[id(_f)] = _name
    for _mod in (_m, np):
        if hasattr(_mod, _name):
            MATH[id(getattr(_mod, _name))] = _name
for _f, _name in (
    (np.minimum, "min"), (np.maximum, "max"), (np.absolute, "abs"), (np.fabs, "abs"),
    (_m.fabs, "abs"), (np.arcsin, "asin"), (np.arccos, "acos"), (np.arctan, "atan"),
    (np.arcsinh, "asinh"), (np.arccosh, "acosh"), (np.arctanh, "atanh"), (np.rint, "round"),
    (np.around, "round"), (_b.round, "round"), (np.remainder, "mod"), (np.power, "pow"),
    (_m.pow, "pow"),
):  # fmt: skip
    MATH[id(_f)] = _name
