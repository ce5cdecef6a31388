"""FORWARD and BACKWARD computations of mixed-type stencils without `while` loops (pace's
`fillz.fix_tracer`: float fields, an integer 2-D counter, masked borrowing from the level above):
each column walked through its levels by one point function where every field is of a type it
reads in place (float64, int64), and in blocks where one is not (a boolean field), on every
layout. The reference is a plain Python loop over each column in the computation's order, so
every value must agree bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from _gtscript_oracle import in_layout

from gridbuf import gtscript
from gridbuf.gtscript import BACKWARD, FORWARD, PARALLEL, IJ, Field, computation, interval

LAYOUTS = ["C", "F", "gt:cpu_ifirst", "gt:cpu_kfirst"]
SHAPE = (7, 5, 9)


def borrow(q: Field[np.float64], dp: Field[np.float64], ok: Field[bool], nfix: Field[IJ, np.int64], total: Field[IJ, np.float64], up: Field[np.float64]):
    from __externals__ import FLAGGED

    with computation(FORWARD), interval(0, 1):
        nfix = 0
        total = 0.0
    with computation(FORWARD), interval(1, None):
        take = q[0, 0, -1] < 0.0
        if __INLINED(FLAGGED):
            take = take and ok  # (else `ok` is never read: the program has no boolean field)
        if take:
            q = q + q[0, 0, -1] * dp[0, 0, -1] / dp
            nfix += 1
    with computation(PARALLEL), interval(...):
        up = q * dp
    with computation(BACKWARD), interval(0, -1):
        if up[0, 0, 1] < 0.0 and nfix > 0:
            up = up + up[0, 0, 1]
        total += up


def reference(q, dp, ok):
    """The definitions column by column, level by level, in Python floats."""
    q = q.copy()
    ni, nj, nk = q.shape
    nfix = np.zeros((ni, nj), np.int64)
    total = np.zeros((ni, nj))
    up = np.zeros_like(q)
    for i in range(ni):
        for j in range(nj):
            for k in range(1, nk):
                if q[i, j, k - 1] < 0.0 and (ok is None or ok[i, j, k]):
                    q[i, j, k] = q[i, j, k] + q[i, j, k - 1] * dp[i, j, k - 1] / dp[i, j, k]
                    nfix[i, j] += 1
            up[i, j] = q[i, j] * dp[i, j]
            for k in range(nk - 2, -1, -1):
                if up[i, j, k + 1] < 0.0 and nfix[i, j] > 0:
                    up[i, j, k] = up[i, j, k] + up[i, j, k + 1]
                total[i, j] = total[i, j] + up[i, j, k]
    return q, nfix, total, up


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("flagged", [False, True])
def test_mixed_type_columns_match_a_column_by_column_reference(layout, flagged):
    rng = np.random.default_rng(7 + flagged)
    q = rng.uniform(-1.0, 1.0, SHAPE)
    dp = rng.uniform(0.5, 2.0, SHAPE)
    ok = rng.random(SHAPE) < 0.7 if flagged else None
    st = gtscript.stencil(backend=layout if layout.startswith("gt:") else "gt:cpu_ifirst", definition=borrow, externals={"FLAGGED": flagged})
    # Unflagged, `ok` is a field the externals prune: passed as None.
    arrays = {"q": q, "dp": dp, "ok": ok, "nfix": np.full(SHAPE[:2], -5, np.int64), "total": np.full(SHAPE[:2], np.nan), "up": np.full(SHAPE, np.nan)}
    want = dict(zip(("q", "nfix", "total", "up"), reference(q, dp, ok)))
    args = {k: in_layout(v, layout, "IJ" if v is not None and v.ndim == 2 else "IJK") for k, v in arrays.items()}
    st(**args)
    for name, w in want.items():
        got = np.asarray(args[name])
        assert (got == w).all(), f"{layout}, flagged={flagged}: {name} differs at {np.argwhere(got != w)[:3].tolist()}"
