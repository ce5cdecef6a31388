"""Stencils of mixed types, math functions and 2-D temporaries, written in GT4Py's gtscript, for
the typed rows of ``bench_gtscript.py``: each definition runs unchanged through GT4Py and, with
its import line replaced, through ``gridbuf.gtscript``.

- ``landmask``: a bool land mask and an int32 surface type select between two float expressions.
- ``saturation``: saturation specific humidity and dew point (Magnus formula), heavy in exp/log.
- ``column``: a column integral accumulated in a 2-D temporary, written to an IJ field (GT4Py's
  compiled backends have no 2-D temporaries: there it accumulates in the IJ output itself).

``reference(name, inputs)`` computes each with NumPy, independently of both engines.
"""

from __future__ import annotations

import numpy as np
from gt4py.cartesian import gtscript
from gt4py.cartesian.gtscript import FORWARD, IJ, PARALLEL, Field, computation, exp, interval, log

F64 = Field[np.float64]
MASK = Field[np.bool_]
KIND = Field[np.int32]
F64_IJ = Field[IJ, np.float64]


def landmask(mask: MASK, kind: KIND, t: F64, q: F64, out: F64):  # type: ignore[valid-type]
    with computation(PARALLEL), interval(...):
        if mask and kind > 1:
            out = t + 0.5 * q * kind  # noqa: F841 (gtscript assigns fields by name)
        else:
            out = t - 2.0 * q  # noqa: F841


def saturation(t: F64, p: F64, qv: F64, qs: F64, td: F64):  # type: ignore[valid-type]
    with computation(PARALLEL), interval(...):
        es = 611.2 * exp(17.67 * (t - 273.15) / (t - 29.65))
        qs = 0.622 * es / (p - 0.378 * es)  # noqa: F841
        lnr = log(qv * p / (0.622 + 0.378 * qv) / 611.2)
        td = 273.15 + 243.5 * lnr / (17.67 - lnr)  # noqa: F841


def column(q: F64, dp: F64, out: F64_IJ):  # type: ignore[valid-type]
    with computation(FORWARD), interval(0, 1):
        acc: Field[IJ, np.float64] = 0.0  # noqa: F841
    with computation(FORWARD), interval(...):
        acc = acc + q * dp / 9.80665
        out = acc  # noqa: F841


def column_out(q: F64, dp: F64, out: F64_IJ):  # type: ignore[valid-type]
    # GT4Py's compiled backends have no 2-D temporaries (NotImplementedError in 1.1.12): they
    # accumulate in the IJ output itself, the same sum in the same order.
    with computation(FORWARD), interval(0, 1):
        out = 0.0  # noqa: F841
    with computation(FORWARD), interval(...):
        out = out + q * dp / 9.80665  # noqa: F841


DEFINITIONS = {"landmask": landmask, "saturation": saturation, "column": column}

# Per stencil: the input names and dtypes, then the outputs (name, dtype, dims).
SIGNATURES = {
    "landmask": ([("mask", np.bool_), ("kind", np.int32), ("t", np.float64), ("q", np.float64)], [("out", np.float64, "IJK")]),
    "saturation": ([("t", np.float64), ("p", np.float64), ("qv", np.float64)], [("qs", np.float64, "IJK"), ("td", np.float64, "IJK")]),
    "column": ([("q", np.float64), ("dp", np.float64)], [("out", np.float64, "IJ")]),
}


def inputs(name: str, shape: tuple[int, int, int], rng: np.random.Generator) -> list[np.ndarray]:
    """Physically plausible random inputs of ``shape`` for stencil ``name``."""
    out = []
    for arg, dtype in SIGNATURES[name][0]:
        if dtype is np.bool_:
            out.append(rng.random(shape) < 0.3)
        elif dtype is np.int32:
            out.append(rng.integers(0, 4, shape).astype(np.int32))
        elif arg == "t":
            out.append(rng.uniform(230.0, 310.0, shape))
        elif arg == "p":
            out.append(rng.uniform(2.0e4, 1.05e5, shape))
        elif arg == "qv":
            out.append(rng.uniform(1e-4, 2e-2, shape))
        else:
            out.append(rng.uniform(-1.0, 1.0, shape))
    return out


def reference(name: str, args: list[np.ndarray]) -> list[np.ndarray]:
    """The outputs of stencil ``name`` on the whole arrays, computed with NumPy."""
    if name == "landmask":
        mask, kind, t, q = args
        return [np.where(mask & (kind > 1), t + 0.5 * q * kind, t - 2.0 * q)]
    if name == "saturation":
        t, p, qv = args
        es = 611.2 * np.exp(17.67 * (t - 273.15) / (t - 29.65))
        lnr = np.log(qv * p / (0.622 + 0.378 * qv) / 611.2)
        return [0.622 * es / (p - 0.378 * es), 273.15 + 243.5 * lnr / (17.67 - lnr)]
    q, dp = args
    return [np.cumsum(q * dp / 9.80665, axis=2)[:, :, -1]]


def build(name: str, backend: str):
    """The GT4Py stencil object for ``name`` compiled for ``backend`` (``column`` without its 2-D
    temporary on the compiled backends, which have none)."""
    definition = column_out if (name == "column" and backend != "numpy") else DEFINITIONS[name]
    return gtscript.stencil(backend=backend, definition=definition, name=f"gridbuf_bench_{name}")
