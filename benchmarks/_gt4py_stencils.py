"""The four native kernels written in GT4Py's gtscript, as the peer for the stencil benchmark.

Each definition computes what the gridbuf kernel of the same name computes (see
``gridbuf.kernels``); ``build(name, backend)`` compiles it for one GT4Py backend, caching the
result in GT4Py's own build cache (``.gt_cache`` in the working directory) so later runs only
load it. Importing this module imports gt4py: call it only when gt4py is installed.
"""

from __future__ import annotations

import numpy as np
from gt4py.cartesian import gtscript
from gt4py.cartesian.gtscript import BACKWARD, FORWARD, PARALLEL, Field, computation, interval

F64 = Field[np.float64]


def copy_defs(inp: F64, out: F64):  # type: ignore[valid-type]
    with computation(PARALLEL), interval(...):
        out = inp  # noqa: F841 (gtscript assigns fields by name)


def laplacian_defs(inp: F64, out: F64):  # type: ignore[valid-type]
    with computation(PARALLEL), interval(...):
        out = -4.0 * inp[0, 0, 0] + inp[-1, 0, 0] + inp[1, 0, 0] + inp[0, -1, 0] + inp[0, 1, 0]  # noqa: F841


def hdiff_defs(inp: F64, coeff: F64, out: F64):  # type: ignore[valid-type]
    with computation(PARALLEL), interval(...):
        lap = 4.0 * inp[0, 0, 0] - (inp[-1, 0, 0] + inp[1, 0, 0] + inp[0, -1, 0] + inp[0, 1, 0])
        flx_raw = lap[1, 0, 0] - lap[0, 0, 0]
        flx = 0.0 if flx_raw * (inp[1, 0, 0] - inp[0, 0, 0]) > 0.0 else flx_raw
        fly_raw = lap[0, 1, 0] - lap[0, 0, 0]
        fly = 0.0 if fly_raw * (inp[0, 1, 0] - inp[0, 0, 0]) > 0.0 else fly_raw
        out = inp[0, 0, 0] - coeff[0, 0, 0] * (flx[0, 0, 0] - flx[-1, 0, 0] + fly[0, 0, 0] - fly[0, -1, 0])  # noqa: F841


def tridiag_defs(a: F64, b: F64, c: F64, d: F64, x: F64):  # type: ignore[valid-type]
    with computation(FORWARD):
        with interval(0, 1):
            cp = c / b
            dp = d / b
        with interval(1, None):
            m = b - a * cp[0, 0, -1]
            cp = c / m
            dp = (d - a * dp[0, 0, -1]) / m
    with computation(BACKWARD):
        with interval(-1, None):
            x = dp  # noqa: F841
        with interval(0, -1):
            x = dp - cp * x[0, 0, 1]  # noqa: F841


DEFINITIONS = {
    "copy": copy_defs,
    "laplacian": laplacian_defs,
    "hdiff": hdiff_defs,
    "tridiag": tridiag_defs,
}


def build(name: str, backend: str):
    """The GT4Py stencil object for kernel ``name`` compiled for ``backend``."""
    return gtscript.stencil(backend=backend, definition=DEFINITIONS[name], name=f"gridbuf_bench_{name}")
