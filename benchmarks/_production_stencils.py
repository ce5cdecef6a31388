"""Stencils with horizontal regions and loops, written in GT4Py's gtscript, for the region rows of
``bench_gtscript.py``: each definition runs unchanged through GT4Py and, with its import lines
replaced, through ``gridbuf.gtscript``.

- ``corners``: cubed-sphere corner filling: the three-point halo corners of a tile are filled
  from the interior by a rotation about the corner, one region per halo point (36 regions);
  called over the whole array (halo included), the tile's edges given as externals, as the
  FV3 ports do.
- ``ppm``: a PPM-style flux along I: fourth-order interface values, second-order ones at the
  tile's two edges (two regions), and an upwind flux from the parabola's edge values.
- ``remap``: a conservative vertical remap of layer means from one set of pressure edges to
  another (piecewise constant): per target layer, a ``while`` loop finds the source layer of its
  top, carried down from the layer above, and a second one sums the overlapping source layers,
  both reading at variable K offsets. The K domain is the edges (one more than the layers).

``reference(name, inputs)`` computes each with NumPy, independently of both engines.
"""

from __future__ import annotations

import numpy as np
from gt4py.cartesian import gtscript
from gt4py.cartesian.gtscript import FORWARD, PARALLEL, Field, I, J, computation, horizontal, interval, region

F64 = Field[np.float64]
HALO = 3
P1 = 7.0 / 12.0
P2 = -1.0 / 12.0


def corners(q: F64, out: F64):  # type: ignore[valid-type]
    from __externals__ import i_end, i_start, j_end, j_start

    with computation(PARALLEL), interval(...):
        out = q  # noqa: F841
        # south-west corner
        with horizontal(region[i_start - 1, j_start - 1]):
            out = q[0, 1, 0]  # noqa: F841
        with horizontal(region[i_start - 1, j_start - 2]):
            out = q[-1, 2, 0]  # noqa: F841
        with horizontal(region[i_start - 1, j_start - 3]):
            out = q[-2, 3, 0]  # noqa: F841
        with horizontal(region[i_start - 2, j_start - 1]):
            out = q[1, 2, 0]  # noqa: F841
        with horizontal(region[i_start - 2, j_start - 2]):
            out = q[0, 3, 0]  # noqa: F841
        with horizontal(region[i_start - 2, j_start - 3]):
            out = q[-1, 4, 0]  # noqa: F841
        with horizontal(region[i_start - 3, j_start - 1]):
            out = q[2, 3, 0]  # noqa: F841
        with horizontal(region[i_start - 3, j_start - 2]):
            out = q[1, 4, 0]  # noqa: F841
        with horizontal(region[i_start - 3, j_start - 3]):
            out = q[0, 5, 0]  # noqa: F841
        # south-east corner
        with horizontal(region[i_end + 1, j_start - 1]):
            out = q[0, 1, 0]  # noqa: F841
        with horizontal(region[i_end + 1, j_start - 2]):
            out = q[1, 2, 0]  # noqa: F841
        with horizontal(region[i_end + 1, j_start - 3]):
            out = q[2, 3, 0]  # noqa: F841
        with horizontal(region[i_end + 2, j_start - 1]):
            out = q[-1, 2, 0]  # noqa: F841
        with horizontal(region[i_end + 2, j_start - 2]):
            out = q[0, 3, 0]  # noqa: F841
        with horizontal(region[i_end + 2, j_start - 3]):
            out = q[1, 4, 0]  # noqa: F841
        with horizontal(region[i_end + 3, j_start - 1]):
            out = q[-2, 3, 0]  # noqa: F841
        with horizontal(region[i_end + 3, j_start - 2]):
            out = q[-1, 4, 0]  # noqa: F841
        with horizontal(region[i_end + 3, j_start - 3]):
            out = q[0, 5, 0]  # noqa: F841
        # north-west corner
        with horizontal(region[i_start - 1, j_end + 1]):
            out = q[0, -1, 0]  # noqa: F841
        with horizontal(region[i_start - 1, j_end + 2]):
            out = q[-1, -2, 0]  # noqa: F841
        with horizontal(region[i_start - 1, j_end + 3]):
            out = q[-2, -3, 0]  # noqa: F841
        with horizontal(region[i_start - 2, j_end + 1]):
            out = q[1, -2, 0]  # noqa: F841
        with horizontal(region[i_start - 2, j_end + 2]):
            out = q[0, -3, 0]  # noqa: F841
        with horizontal(region[i_start - 2, j_end + 3]):
            out = q[-1, -4, 0]  # noqa: F841
        with horizontal(region[i_start - 3, j_end + 1]):
            out = q[2, -3, 0]  # noqa: F841
        with horizontal(region[i_start - 3, j_end + 2]):
            out = q[1, -4, 0]  # noqa: F841
        with horizontal(region[i_start - 3, j_end + 3]):
            out = q[0, -5, 0]  # noqa: F841
        # north-east corner
        with horizontal(region[i_end + 1, j_end + 1]):
            out = q[0, -1, 0]  # noqa: F841
        with horizontal(region[i_end + 1, j_end + 2]):
            out = q[1, -2, 0]  # noqa: F841
        with horizontal(region[i_end + 1, j_end + 3]):
            out = q[2, -3, 0]  # noqa: F841
        with horizontal(region[i_end + 2, j_end + 1]):
            out = q[-1, -2, 0]  # noqa: F841
        with horizontal(region[i_end + 2, j_end + 2]):
            out = q[0, -3, 0]  # noqa: F841
        with horizontal(region[i_end + 2, j_end + 3]):
            out = q[1, -4, 0]  # noqa: F841
        with horizontal(region[i_end + 3, j_end + 1]):
            out = q[-2, -3, 0]  # noqa: F841
        with horizontal(region[i_end + 3, j_end + 2]):
            out = q[-1, -4, 0]  # noqa: F841
        with horizontal(region[i_end + 3, j_end + 3]):
            out = q[0, -5, 0]  # noqa: F841


def ppm(q: F64, c: F64, flux: F64):  # type: ignore[valid-type]
    from __externals__ import i_end, i_start

    with computation(PARALLEL), interval(...):
        al = P1 * (q[-1, 0, 0] + q) + P2 * (q[-2, 0, 0] + q[1, 0, 0])
        with horizontal(region[i_start, :], region[i_end + 1, :]):
            al = 0.5 * (q[-1, 0, 0] + q)
        bl = al - q
        br = al[1, 0, 0] - q
        b0 = bl + br
        if c > 0.0:
            flux = q[-1, 0, 0] + (1.0 - c) * (br[-1, 0, 0] - c * b0[-1, 0, 0])  # noqa: F841
        else:
            flux = q + (1.0 + c) * (bl + c * b0)  # noqa: F841


@gtscript.function
def remap_layer(pe1, pe2, q1, start):
    top = pe2
    bot = pe2[0, 0, 1]
    off = start
    while pe1[0, 0, off + 1] <= top:
        off = off + 1
    o = off
    p = top
    acc = 0.0
    while p < bot:
        nxt = min(bot, pe1[0, 0, o + 1])
        acc = acc + q1[0, 0, o] * (nxt - p)
        o = o + 1
        p = nxt
    return acc / (bot - top), off


def remap(pe1: F64, pe2: F64, q1: F64, q2: F64):  # type: ignore[valid-type]
    with computation(FORWARD):
        with interval(0, 1):
            q2, off = remap_layer(pe1, pe2, q1, 0)  # noqa: F841
        with interval(1, -1):
            q2, off = remap_layer(pe1, pe2, q1, off[0, 0, -1] - 1)  # noqa: F841


DEFINITIONS = {"corners": corners, "ppm": ppm, "remap": remap}

# Per stencil: the input names, the output names, whether the call's domain is the whole array
# (the halo included) or the interior, and the externals (GT4Py's axis positions; the bench
# makes gridbuf's from the same text).
SIGNATURES = {
    "corners": (["q"], ["out"], "whole", {"i_start": "I[0] + 3", "i_end": "I[-1] - 3", "j_start": "J[0] + 3", "j_end": "J[-1] - 3"}),
    "ppm": (["q", "c"], ["flux"], "interior", {"i_start": "I[0]", "i_end": "I[-1]"}),
    "remap": (["pe1", "pe2", "q1"], ["q2"], "interior", {}),
}

# How close to NumPy's result each must be, relative to its largest value (the remap's NumPy
# reference differences cumulative integrals, another order of the same sums).
TOLERANCE = {"corners": 1e-12, "ppm": 1e-12, "remap": 1e-9}


def externals(name: str, lib) -> dict:
    """The externals of `name` as axis positions of `lib` (a gtscript module)."""
    return {k: eval(v, {"I": lib.I, "J": lib.J}) for k, v in SIGNATURES[name][3].items()}  # noqa: S307 - our own text


def inputs(name: str, shape, rng) -> list[np.ndarray]:
    if name == "remap":
        # Edges from 0 to 1 in every column, strictly increasing, the same first and last edge in
        # both sets; the last level of q1 (below the last edge) is never read.
        def edges():
            dp = rng.uniform(0.2, 1.0, size=shape)
            e = np.concatenate([np.zeros(shape[:2] + (1,)), np.cumsum(dp[:, :, :-1], axis=2)], axis=2)
            return e / e[:, :, -1:]

        return [edges(), edges(), rng.uniform(-1.0, 1.0, size=shape)]
    q = rng.uniform(0.5, 2.0, size=shape)
    if name == "ppm":
        return [q, rng.uniform(-0.9, 0.9, size=shape)]
    return [q]


def reference(name: str, data: list[np.ndarray]) -> list[np.ndarray]:
    """NumPy: the whole arrays after the call (the interior's domain for ``ppm``)."""
    if name == "corners":
        (q,) = data
        out = q.copy()
        ni, nj = q.shape[:2]
        ib = {-1: HALO, 1: ni - 1 - HALO}
        jb = {-1: HALO, 1: nj - 1 - HALO}
        for si in (-1, 1):
            for sj in (-1, 1):
                for a in (1, 2, 3):
                    for b in (1, 2, 3):
                        # the halo cell a along I, b along J beyond the corner takes the interior
                        # value b along I beyond it and a - 1 inside along J
                        out[ib[si] + si * a, jb[sj] + sj * b] = q[ib[si] + si * b, jb[sj] - sj * (a - 1)]
        return [out]
    if name == "remap":
        pe1, pe2, q1 = data
        h = HALO
        # The integral of q1 from the top to each source edge; at any pressure, interpolated
        # linearly within its source layer.
        cum = np.concatenate([np.zeros(pe1.shape[:2] + (1,)), np.cumsum(q1[:, :, :-1] * np.diff(pe1, axis=2), axis=2)], axis=2)
        nk = pe1.shape[2]

        def integral(p):
            lay = np.clip((pe1[:, :, 1:] <= p[:, :, None]).sum(axis=2), 0, nk - 2)
            base = np.take_along_axis(pe1, lay[:, :, None], axis=2)[:, :, 0]
            return np.take_along_axis(cum, lay[:, :, None], axis=2)[:, :, 0] + np.take_along_axis(q1, lay[:, :, None], axis=2)[:, :, 0] * (p - base)

        q2 = np.zeros_like(q1)
        for k in range(nk - 1):
            q2[:, :, k] = (integral(pe2[:, :, k + 1]) - integral(pe2[:, :, k])) / (pe2[:, :, k + 1] - pe2[:, :, k])
        out = np.zeros_like(q1)
        out[h:-h, h:-h, :] = q2[h:-h, h:-h, :]
        return [out]
    q, c = data
    h = HALO
    n = q.shape[0] - 2 * h
    # interface values al[i] between cells i - 1 and i, for i in -1 .. n (index i + 1 here)
    i = np.arange(-1, n + 1) + h
    al = P1 * (q[i - 1] + q[i]) + P2 * (q[i - 2] + q[i + 1])
    for edge in (0, n):
        al[edge + 1] = 0.5 * (q[edge - 1 + h] + q[edge + h])
    cells = np.arange(-1, n) + h
    bl = al[:-1] - q[cells]
    br = al[1:] - q[cells]
    b0 = bl + br
    flux = np.zeros_like(q)
    up = q[cells[:-1]] + (1.0 - c[h : h + n]) * (br[:-1] - c[h : h + n] * b0[:-1])
    down = q[h : h + n] + (1.0 + c[h : h + n]) * (bl[1:] + c[h : h + n] * b0[1:])
    flux[h : h + n, h:-h] = np.where(c[h : h + n] > 0.0, up, down)[:, h:-h]
    return [flux]


def build(name: str, backend: str):
    """The GT4Py stencil of ``name`` for ``backend``."""
    return gtscript.stencil(backend=backend, definition=DEFINITIONS[name], externals=externals(name, gtscript))
