"""Chains of ``if`` blocks (a physics "fix negative values" pattern: several assignments per
block, a block that writes its own condition's variable, nested blocks, an ``else``) on tier
two, whose straight runs are written for the vectoriser (every block computed at every point,
selects as bit blends): bit for bit tier one's, and NumPy's, whether no point, some points or
every point takes the blocks, on rows of any length."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

from gridbuf import gtscript
from gridbuf.gtscript import PARALLEL, Field, computation, interval

NEEDS_CC = pytest.mark.skipif(shutil.which(os.environ.get("CC", "cc").split()[0]) is None, reason="no C compiler")

F64 = Field[np.float64]


def fix_negative(qv: F64, ql: F64, qi: F64, pt: F64, out: F64):  # type: ignore[valid-type]
    """A sketch of a physics "fix negative values" chain: `if` blocks of several assignments,
    one that writes its own condition's variable, one nested, one with an `else`."""
    with computation(PARALLEL), interval(...):
        neg = qi < 0.0
        if neg:
            ql = ql + qi
            pt = pt - qi * 2.5
            qi = 0.0
        if ql < 0.0:
            qv = qv + ql
            pt = pt - ql * 1.5
            ql = 0.0
            if qv < 0.0:
                pt = pt + qv
                qv = 0.0
        low = qv < 0.1
        if low:
            low = pt > 300.0
            qv = qv * 2.0
        if pt > 310.0:
            out = pt - 310.0
        else:
            out = pt * 0.0 + qv
        if low:
            out = out + 1.0


def fix_negative_numpy(qv, ql, qi, pt):
    """The same rules, point by point in NumPy (np.where), in the same order of operations."""
    qv, ql, qi, pt = (x.copy() for x in (qv, ql, qi, pt))
    neg = qi < 0.0
    ql = np.where(neg, ql + qi, ql)
    pt = np.where(neg, pt - qi * 2.5, pt)
    qi = np.where(neg, 0.0, qi)
    c = ql < 0.0
    qv = np.where(c, qv + ql, qv)
    pt = np.where(c, pt - ql * 1.5, pt)
    ql = np.where(c, 0.0, ql)
    c2 = c & (qv < 0.0)
    pt = np.where(c2, pt + qv, pt)
    qv = np.where(c2, 0.0, qv)
    low = qv < 0.1
    low2 = np.where(low, pt > 300.0, low)
    qv = np.where(low, qv * 2.0, qv)
    out = np.where(pt > 310.0, pt - 310.0, pt * 0.0 + qv)
    out = np.where(low2, out + 1.0, out)
    return qv, ql, qi, pt, out


def inputs(shape, kind, seed):
    rng = np.random.default_rng(seed)
    qv = rng.uniform(0.05, 1.0, shape)
    ql = rng.uniform(1e-6, 1e-3, shape)
    qi = rng.uniform(1e-6, 1e-3, shape)
    pt = rng.uniform(250.0, 320.0, shape)
    if kind == "sparse":  # about one point in 40 negative: most chunks skip the groups
        qi[rng.random(shape) < 0.025] *= -300.0
        ql[rng.random(shape) < 0.025] *= -2000.0
    elif kind == "dense":  # every point takes every group
        qi = -qi
        ql = -ql - 2.0
    return [qv, ql, qi, pt, np.zeros(shape)]


def run(mode: str, monkeypatch, tmp_path, data):
    monkeypatch.setenv("GRIDBUF_TIER2", mode)
    monkeypatch.setenv("GRIDBUF_TIER2_CACHE", str(tmp_path / "cache"))
    st = gtscript.stencil(backend="gt:cpu_ifirst", definition=fix_negative)
    args = [a.copy() for a in data]
    st(*args, origin=(0, 0, 0), domain=data[0].shape)
    return st, args


@NEEDS_CC
@pytest.mark.parametrize("kind", ["none", "sparse", "dense"])
@pytest.mark.parametrize("shape", [(37, 5, 3), (16, 4, 2), (3, 3, 1)])
def test_if_blocks_give_tier_one_bits(monkeypatch, tmp_path, kind, shape):
    data = inputs(shape, kind, seed=sum(shape))
    st, two = run("define", monkeypatch, tmp_path, data)
    assert st.tier_two.startswith("ready"), st.tier_two
    _, one = run("0", monkeypatch, tmp_path, data)
    for name, a, b in zip(("qv", "ql", "qi", "pt", "out"), two, one):
        assert np.array_equal(a, b, equal_nan=True), f"{name}: tier two differs from tier one at {np.count_nonzero(a != b)} points"
    for name, a, b in zip(("qv", "ql", "qi", "pt", "out"), two, fix_negative_numpy(*data[:4])):
        assert np.array_equal(a, b), f"{name}: differs from NumPy at {np.count_nonzero(a != b)} points"
