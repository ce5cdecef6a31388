"""The math functions tier two computes on vectors (glibc's libmvec), each as a one-line stencil,
with the inputs its accuracy is measured on and NumPy's function for reference.

Shared by ``tests/test_gtscript_vector_math.py`` (the stated accuracy, checked) and
``bench_tier_two.py --math`` (the accuracy table and the time per call).
``FUNCTIONS`` maps a name to (NumPy's function, input sampler, arity); a sampler takes a
generator, a count and a dtype and gives the arguments, spread over the function's domain
(uniform where the function is periodic or bounded, log-uniform over many binades elsewhere).
``SPECIAL`` are the inputs every function must map exactly as NumPy does (NaN, infinities,
signed zeros and the domain's ends).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from gridbuf.gtscript import (
    PARALLEL,
    Field,
    acos,
    acosh,
    asin,
    asinh,
    atan,
    atanh,
    cbrt,
    computation,
    cos,
    cosh,
    erf,
    erfc,
    exp,
    interval,
    log,
    log10,
    sin,
    sinh,
    tan,
    tanh,
)

NAMES = (
    "exp", "log", "sin", "cos", "pow", "log10", "tan", "asin", "acos", "atan",
    "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "cbrt", "erf", "erfc",
)  # fmt: skip


def one(a: Field["DT"], b: Field["DT"], out: Field["DT"]):  # type: ignore[name-defined]  # noqa: F821
    from __externals__ import FN

    with computation(PARALLEL), interval(...):
        if __INLINED(FN == 0):  # noqa: F821
            out = exp(a)  # noqa: F841
        elif __INLINED(FN == 1):  # noqa: F821
            out = log(a)  # noqa: F841
        elif __INLINED(FN == 2):  # noqa: F821
            out = sin(a)  # noqa: F841
        elif __INLINED(FN == 3):  # noqa: F821
            out = cos(a)  # noqa: F841
        elif __INLINED(FN == 4):  # noqa: F821
            out = a**b  # noqa: F841
        elif __INLINED(FN == 5):  # noqa: F821
            out = log10(a)  # noqa: F841
        elif __INLINED(FN == 6):  # noqa: F821
            out = tan(a)  # noqa: F841
        elif __INLINED(FN == 7):  # noqa: F821
            out = asin(a)  # noqa: F841
        elif __INLINED(FN == 8):  # noqa: F821
            out = acos(a)  # noqa: F841
        elif __INLINED(FN == 9):  # noqa: F821
            out = atan(a)  # noqa: F841
        elif __INLINED(FN == 10):  # noqa: F821
            out = sinh(a)  # noqa: F841
        elif __INLINED(FN == 11):  # noqa: F821
            out = cosh(a)  # noqa: F841
        elif __INLINED(FN == 12):  # noqa: F821
            out = tanh(a)  # noqa: F841
        elif __INLINED(FN == 13):  # noqa: F821
            out = asinh(a)  # noqa: F841
        elif __INLINED(FN == 14):  # noqa: F821
            out = acosh(a)  # noqa: F841
        elif __INLINED(FN == 15):  # noqa: F821
            out = atanh(a)  # noqa: F841
        elif __INLINED(FN == 16):  # noqa: F821
            out = cbrt(a)  # noqa: F841
        elif __INLINED(FN == 17):  # noqa: F821
            out = erf(a)  # noqa: F841
        else:
            out = erfc(a)  # noqa: F841


def stencil(name: str, dtype: Any) -> Any:
    """The stencil ``out = name(a)`` (``out = a ** b`` for ``pow``) on fields of ``dtype``."""
    from gridbuf import gtscript

    return gtscript.stencil(backend="numpy", definition=one, externals={"FN": NAMES.index(name)}, dtypes={"DT": dtype})


def _uniform(lo: float, hi: float) -> Callable[..., np.ndarray]:
    return lambda rng, n, dtype: rng.uniform(lo, hi, n).astype(dtype)


def _binades(lo: float, hi: float, signed: bool = False) -> Callable[..., np.ndarray]:
    """Log-uniform magnitudes in [lo, hi] (within 1e-37 and 1e37 for float32: its normal
    numbers), of either sign where ``signed``."""

    def sample(rng: np.random.Generator, n: int, dtype: Any) -> np.ndarray:
        a, b = (max(lo, 1e-37), min(hi, 1e37)) if np.dtype(dtype) == np.float32 else (lo, hi)
        x = np.exp(rng.uniform(np.log(a), np.log(b), n))
        if signed:
            x *= rng.choice([-1.0, 1.0], n)
        return x.astype(dtype)

    return sample


def _limit(dtype: Any, f64: float, f32: float) -> float:
    return f64 if np.dtype(dtype) == np.float64 else f32


def _exp_args(rng: np.random.Generator, n: int, dtype: Any) -> np.ndarray:
    m = _limit(dtype, 709.0, 88.0)
    return rng.uniform(-m, m, n).astype(dtype)


def _hyperbolic_args(rng: np.random.Generator, n: int, dtype: Any) -> np.ndarray:
    m = _limit(dtype, 710.0, 89.0)
    return rng.uniform(-m, m, n).astype(dtype)


def _pow_args(rng: np.random.Generator, n: int, dtype: Any) -> tuple[np.ndarray, np.ndarray]:
    """Bases in [1e-3, 1e3], exponents that keep the powers finite (within 1e±90, 1e±36)."""
    x = _binades(1e-3, 1e3)(rng, n, dtype)
    m = _limit(dtype, 30.0, 12.0)
    y = rng.uniform(-m, m, n).astype(dtype)
    return x, y


def _erfc_args(rng: np.random.Generator, n: int, dtype: Any) -> np.ndarray:
    """Up to where erfc leaves the normal numbers (26.5 for float64, 9.1 for float32)."""
    return rng.uniform(-6.0, _limit(dtype, 26.5, 9.1), n).astype(dtype)


#: name -> (NumPy's function, sampler of (a,) or (a, b), arity)
FUNCTIONS: dict[str, tuple[Callable[..., Any], Callable[..., Any], int]] = {
    "exp": (np.exp, _exp_args, 1),
    "log": (np.log, _binades(1e-300, 1e300), 1),
    "sin": (np.sin, _uniform(-1e4, 1e4), 1),
    "cos": (np.cos, _uniform(-1e4, 1e4), 1),
    "pow": (np.power, _pow_args, 2),
    "log10": (np.log10, _binades(1e-300, 1e300), 1),
    "tan": (np.tan, _uniform(-1e4, 1e4), 1),
    "asin": (np.arcsin, _uniform(-1.0, 1.0), 1),
    "acos": (np.arccos, _uniform(-1.0, 1.0), 1),
    "atan": (np.arctan, _binades(1e-6, 1e6, signed=True), 1),
    "sinh": (np.sinh, _hyperbolic_args, 1),
    "cosh": (np.cosh, _hyperbolic_args, 1),
    "tanh": (np.tanh, _uniform(-20.0, 20.0), 1),
    "asinh": (np.arcsinh, _binades(1e-6, 1e6, signed=True), 1),
    "acosh": (np.arccosh, _binades(1.0, 1e6), 1),
    "atanh": (np.arctanh, _uniform(-1.0, 1.0), 1),
    "cbrt": (np.cbrt, _binades(1e-30, 1e30, signed=True), 1),
    # NumPy has no error functions: Python's (the C library's, in double precision).
    "erf": (np.vectorize(math.erf, otypes=[np.float64]), _uniform(-6.0, 6.0), 1),
    "erfc": (np.vectorize(math.erfc, otypes=[np.float64]), _erfc_args, 1),
}

#: Inputs every function must map as NumPy does, bit for bit (NaN for NaN).
SPECIAL = (np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.0, 0.5)


def reference(name: str, args: tuple[np.ndarray, ...]) -> np.ndarray:
    """NumPy's value of ``name`` in the arguments' dtype (``erf`` and ``erfc``: Python's, computed
    in double precision and rounded)."""
    with np.errstate(all="ignore"):
        return np.asarray(FUNCTIONS[name][0](*args)).astype(args[0].dtype)


def ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """|got - want| in units of the last place of ``want`` (its dtype's spacing there); 0 where
    both are the same NaN, infinity or number, ``inf`` where only one is NaN or infinite."""
    got, want = np.asarray(got), np.asarray(want)
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    with np.errstate(all="ignore"):
        d = np.abs(got.astype(np.float64) - want.astype(np.float64)) / np.spacing(np.abs(want)).astype(np.float64)
    d = np.where(same, 0.0, d)
    return np.where(~same & ~(np.isfinite(got) & np.isfinite(want)), np.inf, d)
