"""Tier two: C from the same tapes, compiled by the system's C compiler and swapped in while
calls run (``GRIDBUF_TIER2``, ``GRIDBUF_TIER2_CACHE``, ``CC``).

What is checked here: the swap under load (four threads calling one stencil while tier two
lands: every result right), what the user sees before and after, and every way tier two can
fail (no compiler, a compiler that fails, a corrupt or stale cache entry, a cache that cannot be
written): each leaves the stencil computing the right values on tier one, with one warning.
MPI ranks sharing one cache are checked under ``mpiexec``. That tier two computes exactly what
tier one does on every conformance definition and layout is ``test_conformance_tier_two``; on
random programs, the Rust property tests (``jit_tests``, ``typed_tests``).
"""

from __future__ import annotations

import gc
import importlib.util
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import gridbuf as gb
from gridbuf import gtscript
from gridbuf.gtscript import FORWARD, IJ, PARALLEL, Field, I, K, computation, exp, horizontal, interval, log, region
from _gtscript_oracle import load_source

HERE = Path(__file__).parent
NEEDS_CC = pytest.mark.skipif(shutil.which(os.environ.get("CC", "cc").split()[0]) is None, reason="no C compiler")


def lap_def(a: Field[np.float64], b: Field[np.float64], out: Field[np.float64]):  # type: ignore[valid-type]
    with computation(PARALLEL), interval(...):
        out = 4.0 * a[0, 0, 0] - a[1, 0, 0] - a[-1, 0, 0] - a[0, 1, 0] - a[0, -1, 0] + b * 0.5  # noqa: F841


def lap_numpy(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The same operations in the same order, on the interior of (n+2, m+2, k) arrays."""
    c = a[1:-1, 1:-1]
    return 4.0 * c - a[2:, 1:-1] - a[:-2, 1:-1] - a[1:-1, 2:] - a[1:-1, :-2] + b[1:-1, 1:-1] * 0.5


def inputs(shape=(34, 22, 9), seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    b = rng.standard_normal(shape)
    return a, b


def define(monkeypatch, mode: str | None):
    if mode is None:
        monkeypatch.delenv("GRIDBUF_TIER2", raising=False)
    else:
        monkeypatch.setenv("GRIDBUF_TIER2", mode)
    return gtscript.stencil(backend="numpy", definition=lap_def)


def on_tier(monkeypatch, tier: str, backend: str, definition):
    """`definition` defined with ``GRIDBUF_TIER2=tier`` on `backend`; with ``define``, tier two
    must be in place when the definition returns."""
    monkeypatch.setenv("GRIDBUF_TIER2", tier)
    st = gtscript.stencil(backend=backend, definition=definition)
    if tier == "define":
        assert st.tier_two.startswith("ready"), st.tier_two
    return st


@NEEDS_CC
def test_background_tier_two_starts_at_first_call_and_swaps_under_load(monkeypatch, tmp_path):
    """By default tier two starts at the first call, in the background: four threads keep
    calling while it lands, and every call's result is right, before, during and after."""
    monkeypatch.setenv("GRIDBUF_TIER2_CACHE", str(tmp_path / "cache"))
    st = define(monkeypatch, None)
    assert st.tier_two == "idle"
    a, b = inputs()
    want = lap_numpy(a, b)
    errors: list[str] = []
    calls = [0] * 4
    done = threading.Event()

    def worker(t: int) -> None:
        out = np.zeros_like(a)
        while not done.is_set() or calls[t] < 20:
            out[...] = np.nan
            st(a, b, out, origin=(1, 1, 0), domain=(32, 20, 9))
            calls[t] += 1
            if not np.array_equal(out[1:-1, 1:-1], want):
                errors.append(f"thread {t}, call {calls[t]}: {np.count_nonzero(out[1:-1, 1:-1] != want)} points differ")
                return

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    # Tier two is idle until the first call starts it; waiting before that returns at once.
    deadline = time.monotonic() + 120.0
    while sum(calls) == 0 and not errors and time.monotonic() < deadline:
        time.sleep(0.001)
    state = st.wait_tier_two(120.0)
    # Calls after tier two is in place too (each thread makes at least 20 in all).
    done.set()
    for th in threads:
        th.join(120)
    assert not errors, errors
    assert state == "ready: 1", state
    assert st.tier_two == "ready: 1"
    assert list((tmp_path / "cache").glob("*.so")), "the shared object is in the cache"


def first_with_tier_two(monkeypatch, tmp_path, seed):
    """A stencil defined with the cache in `tmp_path`, called once and waited for until its tier
    two is in place; its inputs and output."""
    monkeypatch.setenv("GRIDBUF_TIER2_CACHE", str(tmp_path / "cache"))
    a, b = inputs(seed=seed)
    out = np.zeros_like(a)
    first = define(monkeypatch, None)
    first(a, b, out, origin=(1, 1, 0), domain=(32, 20, 9))
    assert first.wait_tier_two(120.0) == "ready: 1"
    return first, (a, b, out)


@NEEDS_CC
def test_a_warm_cache_gives_tier_two_from_the_first_call(monkeypatch, tmp_path):
    """Where the cache already holds a stencil's module (a second run of a model), the first
    call loads it before it returns: no call of that stencil runs tier one after the first."""
    first, (a, b, out) = first_with_tier_two(monkeypatch, tmp_path, seed=4)
    # Gone, as in a new process: a stencil defined from the same text while `first` lived
    # would share its compiled program (the next test).
    del first
    gc.collect()
    again = define(monkeypatch, None)
    assert again.tier_two == "idle"
    out[...] = np.nan
    again(a, b, out, origin=(1, 1, 0), domain=(32, 20, 9))
    assert again.tier_two == "ready: 1"
    assert np.array_equal(out[1:-1, 1:-1], lap_numpy(a, b))


@NEEDS_CC
def test_a_stencil_defined_again_shares_the_compiled_program(monkeypatch, tmp_path):
    """A definition whose IR text another live stencil was compiled from gets that stencil's
    program, its tier two included (a model builds one definition many times); under other
    settings (here tier two off) it gets a program of its own."""
    first, (a, b, out) = first_with_tier_two(monkeypatch, tmp_path, seed=5)
    again = define(monkeypatch, None)
    assert again.tier_two == "ready: 1"
    out[...] = np.nan
    again(a, b, out, origin=(1, 1, 0), domain=(32, 20, 9))
    assert np.array_equal(out[1:-1, 1:-1], lap_numpy(a, b))
    assert define(monkeypatch, "0").tier_two == "idle"


@NEEDS_CC
def test_define_mode_compiles_before_the_definition_returns(monkeypatch, tmp_path):
    monkeypatch.setenv("GRIDBUF_TIER2_CACHE", str(tmp_path / "cache"))
    st = define(monkeypatch, "define")
    assert st.tier_two == "ready: 1"
    a, b = inputs(seed=1)
    out = np.zeros_like(a)
    st(a, b, out, origin=(1, 1, 0), domain=(32, 20, 9))
    assert np.array_equal(out[1:-1, 1:-1], lap_numpy(a, b))


def test_tier_two_off(monkeypatch):
    st = define(monkeypatch, "0")
    a, b = inputs(seed=2)
    out = np.zeros_like(a)
    st(a, b, out, origin=(1, 1, 0), domain=(32, 20, 9))
    assert st.tier_two == "idle"
    assert st.wait_tier_two(0.0) == "idle"
    with pytest.raises(ValueError, match="timeout"):
        st.wait_tier_two(-1.0)


@NEEDS_CC
def test_a_stencil_keeps_the_mode_of_its_definition(monkeypatch, tmp_path):
    """The switch is read when the stencil is defined: one defined with tier two off stays on
    tier one when the environment changes before its first call, and one defined with the
    default starts tier two at its first call even when the switch is off by then."""
    monkeypatch.setenv("GRIDBUF_TIER2_CACHE", str(tmp_path / "cache"))
    off = define(monkeypatch, "0")
    background = define(monkeypatch, None)  # the switch is unset from here on
    a, b = inputs(seed=3)
    out = np.zeros_like(a)
    off(a, b, out, origin=(1, 1, 0), domain=(32, 20, 9))
    monkeypatch.setenv("GRIDBUF_TIER2", "0")
    background(a, b, out, origin=(1, 1, 0), domain=(32, 20, 9))
    assert background.wait_tier_two(120.0) == "ready: 1"
    assert off.tier_two == "idle"
    assert np.array_equal(out[1:-1, 1:-1], lap_numpy(a, b))


def masked_def(q: Field[np.float64], t: Field[np.float64], out: Field[np.float64]):  # type: ignore[valid-type]
    with computation(PARALLEL), interval(...):
        s = q + t
        if s > 0.5:
            x = exp(s) / (t + 2.0)
        else:
            x = t
        if x > 1.0 and q < 0.5:
            q = q - 0.25 * x
        out = x * q  # noqa: F841


def masked_numpy(q: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`masked_def`'s new `q` and `out`, point by point in the same order (`math.exp`: the C
    library's, which tier one calls)."""
    q, out = q.copy(), np.empty_like(q)
    for x in np.ndindex(q.shape):
        s = q[x] + t[x]
        v = math.exp(s) / (t[x] + 2.0) if s > 0.5 else t[x]
        if v > 1.0 and q[x] < 0.5:
            q[x] = q[x] - 0.25 * v
        out[x] = v * q[x]
    return q, out


@NEEDS_CC
@pytest.mark.parametrize("backend", ["gt:cpu_ifirst", "gt:cpu_kfirst"])
def test_fused_runs_compute_tier_one_bits_inside_the_domain(monkeypatch, tmp_path, backend):
    """Masked point-wise float code is one fused run on tier two (C that gcc vectorises, no
    guarded branches): with tier one's math functions it gives tier one's bits and the point by
    point values, and writes nothing outside the domain (canaries in the halo and around)."""
    monkeypatch.setenv("GRIDBUF_TIER2_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("GRIDBUF_VECTOR_MATH", "0")
    rng = np.random.default_rng(5)
    shape, origin, domain = (23, 19, 7), (2, 3, 1), (19, 14, 5)
    inner = tuple(slice(o, o + d) for o, d in zip(origin, domain))
    q0 = rng.uniform(-1.0, 2.0, shape)
    t0 = rng.uniform(-1.0, 2.0, shape)
    results = {}
    for tier in ("0", "define"):
        monkeypatch.setenv("GRIDBUF_TIER2", tier)
        st = gtscript.stencil(backend=backend, definition=masked_def)
        q, out = q0.copy(), np.full(shape, -7.5)
        st(q, t0, out, origin=origin, domain=domain)
        if tier == "define":
            assert st.tier_two.startswith("ready"), st.tier_two
        outside = np.ones(shape, dtype=bool)
        outside[inner] = False
        assert np.all(out[outside] == -7.5) and np.array_equal(q[outside], q0[outside])
        results[tier] = (q, out)
    want_q, want_out = masked_numpy(q0[inner], t0[inner])
    for q, out in results.values():
        assert np.array_equal(q[inner], want_q) and np.array_equal(out[inner], want_out)
    assert all(np.array_equal(a, b) for a, b in zip(results["0"], results["define"]))


def final_check_def(q: Field[np.float64], dm: Field[np.float64], dp: Field[np.float64], zfix: Field[IJ, np.int64], sum0: Field[IJ, np.float64], sum1: Field[IJ, np.float64]):  # type: ignore[valid-type]
    with computation(FORWARD), interval(...):
        fac = sum0 / sum1 if sum0 > 0.0 else 0.0
        if zfix > 0 and fac > 0.0:
            q = fac * dm / dp if fac * dm / dp > 0.0 else 0.0  # noqa: F841


@NEEDS_CC
@pytest.mark.parametrize("backend", ["gt:cpu_ifirst", "gt:cpu_kfirst"])
def test_a_masked_assignment_with_a_computed_condition_skips_its_value_on_tier_two(monkeypatch, tmp_path, backend):
    """pace's `fix_tracer` final check: a masked assignment whose condition the statement
    computes (the core folds the mask into it), the new value (a division) computed on tier two
    only where the condition holds, in a C `if`. Both tiers give NumPy's values inside the
    domain, the same bits, and nothing outside it changes, whether no column, some or all take
    the assignment."""
    monkeypatch.setenv("GRIDBUF_TIER2_CACHE", str(tmp_path / "cache"))
    rng = np.random.default_rng(21)
    shape, origin, domain = (12, 10, 9), (2, 1, 1), (8, 7, 6)
    inner = tuple(slice(o, o + d) for o, d in zip(origin, domain))
    q0, dm0 = rng.uniform(-1.0, 1.0, shape), rng.uniform(-1.0, 1.0, shape)
    dp0 = rng.uniform(0.5, 2.0, shape)
    sum0, sum1 = rng.uniform(-1.0, 1.0, shape[:2]), rng.uniform(0.5, 2.0, shape[:2])
    for share in (0.0, 0.3, 1.0):
        zfix = (rng.uniform(0.0, 1.0, shape[:2]) < share).astype(np.int64)
        fac = np.where(sum0 > 0.0, sum0 / sum1, 0.0)[:, :, None]
        value = fac * dm0 / dp0
        want = np.where(((zfix[:, :, None] > 0) & (fac > 0.0)), np.where(value > 0.0, value, 0.0), q0)
        results = {}
        for tier in ("0", "define"):
            st = on_tier(monkeypatch, tier, backend, final_check_def)
            q = gb.from_array(q0, backend=backend)
            st(q, dm0, dp0, zfix, sum0, sum1, origin=origin, domain=domain)
            q = np.asarray(q)
            outside = np.ones(shape, dtype=bool)
            outside[inner] = False
            assert np.array_equal(q[outside], q0[outside]), (tier, share)
            assert np.array_equal(q[inner], want[inner]), (tier, share)
            results[tier] = q
        assert np.array_equal(results["0"], results["define"])
    src = "\n".join(p.read_text() for p in (tmp_path / "cache").glob("*.c"))
    # The division only under the condition: a guarded run's `if` holds it.
    assert re.search(r"if \(\(?v\w+ != 0\)?\) \{\n(?:.*\n){0,3}.*/ val", src), src[-3000:]


def squares_def(a: Field["DT"], b: Field["DT"], out: Field["DT"]):  # type: ignore[valid-type]
    with computation(PARALLEL), interval(...):
        out = a**2 + b**2.0 * 0.5  # noqa: F841


@NEEDS_CC
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("vector_math", ["0", "1"])
def test_tier_two_squares_without_calling_pow(monkeypatch, tmp_path, dtype, vector_math):
    """`x ** 2` is `x * x` wherever gridbuf computes it (NumPy's square); tier two's C
    multiplies instead of calling `pow` and dropping its result (pace's icloud made 161,000
    such calls per call): the literal 2 is gone from the module's C, and the values are tier
    one's bit for bit (and NumPy's, in float64; in float32 GT4Py's float64 literals make some
    operations float64)."""
    monkeypatch.setenv("GRIDBUF_TIER2_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("GRIDBUF_VECTOR_MATH", vector_math)
    monkeypatch.setenv("GRIDBUF_TIER2", "define")
    st = gtscript.stencil(backend="gt:cpu_ifirst", definition=squares_def, dtypes={"DT": dtype})
    assert st.tier_two.startswith("ready"), st.tier_two
    (src,) = (tmp_path / "cache").glob("*.c")
    assert "0x4000000000000000ULL" not in src.read_text()
    rng = np.random.default_rng(8)
    a, b = (rng.uniform(-3.0, 3.0, (19, 6, 4)).astype(dtype) for _ in range(2))
    out = np.zeros_like(a)
    st(a, b, out)
    monkeypatch.setenv("GRIDBUF_TIER2", "0")
    want = np.zeros_like(a)
    gtscript.stencil(backend="gt:cpu_ifirst", definition=squares_def, dtypes={"DT": dtype})(a, b, want)
    assert np.array_equal(out, want)
    if dtype == np.float64:
        assert np.array_equal(out, a**2 + b**2 * 0.5)


def sponge_def(u: Field[np.float64], w: Field[np.float64], pfull: Field[K, np.float64], *, cutoff: float):  # type: ignore[valid-type]
    with computation(FORWARD), interval(...):
        if pfull < cutoff:
            u = u * 0.5 + w
            w = w * 0.25


@NEEDS_CC
@pytest.mark.parametrize("backend", ["gt:cpu_ifirst", "gt:cpu_kfirst"])
def test_rows_where_no_point_takes_a_branch_are_skipped_on_tier_two(monkeypatch, tmp_path, backend):
    """A branch on a K field (pace's Rayleigh damping: `if pfull < rf_cutoff`, the sponge's top
    levels only): where tier two walks levels (I-unit memory), a row of a level whose test
    fails is skipped, loads and stores included. Both tiers give NumPy's values inside the
    domain, and outside it nothing changes (canaries), whether no level, some or every level
    takes the branch."""
    monkeypatch.setenv("GRIDBUF_TIER2_CACHE", str(tmp_path / "cache"))
    rng = np.random.default_rng(12)
    shape, origin, domain = (13, 9, 8), (2, 1, 1), (9, 6, 6)
    inner = tuple(slice(o, o + d) for o, d in zip(origin, domain))
    u0, w0 = (rng.uniform(-1.0, 1.0, shape) for _ in range(2))
    pfull = np.linspace(100.0, 1000.0, shape[2])
    for cutoff in (50.0, 400.0, 2000.0):
        want_u, want_w = u0.copy(), w0.copy()
        take = (pfull < cutoff)[None, None, origin[2] : origin[2] + domain[2]]
        uu, ww = u0[inner], w0[inner]
        want_u[inner] = np.where(take, uu * 0.5 + ww, uu)
        want_w[inner] = np.where(take, ww * 0.25, ww)
        for tier in ("0", "define"):
            monkeypatch.setenv("GRIDBUF_TIER2", tier)
            st = gtscript.stencil(backend=backend, definition=sponge_def)
            if tier == "define":
                assert st.tier_two.startswith("ready"), st.tier_two
            u, w = gb.from_array(u0, backend=backend), gb.from_array(w0, backend=backend)
            st(u, w, pfull, cutoff=cutoff, origin=origin, domain=domain)
            assert np.array_equal(np.asarray(u), want_u) and np.array_equal(np.asarray(w), want_w), (tier, cutoff)
    (src,) = (tmp_path / "cache").glob("*.c")
    if backend == "gt:cpu_ifirst":
        assert "goto after0;" in src.read_text() and "if (!(" in src.read_text()


def fall_speed_def(kind: Field[np.int64], q: Field[np.float64], den: Field[np.float64], vt: Field[np.float64], n: Field[np.int64], *, lg: float):  # type: ignore[valid-type]
    with computation(PARALLEL), interval(...):
        if q < 1.0e-8:
            vt = 1.0e-5
        else:
            vt = min(2.0, max(1.0e-5, 0.8 * exp(lg * log(q * den))))
        n = kind + 1  # noqa: F841


def fall_speed_forward_def(kind: Field[np.int64], q: Field[np.float64], den: Field[np.float64], vt: Field[np.float64], n: Field[np.int64], *, lg: float):  # type: ignore[valid-type]
    with computation(FORWARD), interval(...):
        if q < 1.0e-8:
            vt = 1.0e-5
        else:
            vt = min(2.0, max(1.0e-5, 0.8 * exp(lg * log(q * den))))
        n = kind + 1  # noqa: F841


@NEEDS_CC
@pytest.mark.parametrize("definition", [fall_speed_def, fall_speed_forward_def])
@pytest.mark.parametrize("backend", ["gt:cpu_ifirst", "gt:cpu_kfirst"])
def test_guarded_math_of_mixed_type_runs_goes_in_vector_chunks(monkeypatch, tmp_path, backend, definition):
    """A mixed-type run (an int64 field beside float64 ones) whose `if` arm calls `exp` and
    `log` (pace's sedimentation, whose fall speeds take it at almost every point), as a fused run
    (PARALLEL) and as a walk of levels (FORWARD): tier two writes it for the vectoriser in chunks
    of points, each chunk computing the arm with libmvec where one of its points takes it. Rows
    where no point, some points and every point take the arm: both tiers give NumPy's values
    (the arm within vector math's few ulps, the rest bit for bit), nothing outside the domain
    changes, and with `GRIDBUF_VECTOR_MATH=0` the run stays scalar C with branches, tier one's
    bits."""
    monkeypatch.setenv("GRIDBUF_TIER2_CACHE", str(tmp_path / "cache"))
    rng = np.random.default_rng(21)
    shape, origin, domain = (23, 7, 5), (2, 1, 1), (19, 5, 3)
    inner = tuple(slice(o, o + d) for o, d in zip(origin, domain))
    kind0 = rng.integers(-3, 3, shape).astype(np.int64)
    q0 = 10.0 ** rng.uniform(-4.0, -2.0, shape)
    q0[:, 1] = 1.0e-9  # no point of these rows takes the arm
    q0[::3, 2] = 1.0e-9  # some points of these rows take it
    den0 = rng.uniform(0.5, 1.5, shape)
    lg = 0.2
    qi, di = q0[inner], den0[inner]
    arm = np.minimum(2.0, np.maximum(1.0e-5, 0.8 * np.exp(lg * np.log(qi * di))))
    taken = ~(qi < 1.0e-8)
    canary = -7.0
    for vector_math in ("1", "0"):
        monkeypatch.setenv("GRIDBUF_VECTOR_MATH", vector_math)
        outs = {}
        for tier in ("0", "define"):
            st = on_tier(monkeypatch, tier, backend, definition)
            kind, q, den = (gb.from_array(x, backend=backend) for x in (kind0, q0, den0))
            vt = gb.from_array(np.full(shape, canary), backend=backend)
            n = gb.from_array(np.full(shape, 99, dtype=np.int64), backend=backend)
            st(kind, q, den, vt, n, lg=lg, origin=origin, domain=domain)
            vt, n = np.asarray(vt), np.asarray(n)
            outside = np.ones(shape, dtype=bool)
            outside[inner] = False
            assert np.all(vt[outside] == canary) and np.all(n[outside] == 99), (tier, vector_math)
            assert np.array_equal(n[inner], kind0[inner] + 1)
            assert np.all(vt[inner][~taken] == 1.0e-5)
            np.testing.assert_allclose(vt[inner][taken], arm[taken], rtol=1e-14, atol=0)
            outs[tier] = vt
        src = "\n".join(p.read_text() for p in (tmp_path / "cache").glob("*.c"))
        chunked = re.search(r"GB_NOTHREAD void gb_[fvw]\d+(_\d+)?\(", src) is not None
        if vector_math == "1":
            assert chunked and "gb_any" in src
        else:
            assert not chunked and np.array_equal(outs["0"], outs["define"])
        shutil.rmtree(tmp_path / "cache")
    assert taken.any() and (~taken).any()


def spread_math_source(arms: int) -> str:
    """A float64 stencil whose one fused run has `arms` `if`s, each guarding an `exp` or a `log`
    and a second assignment (so that the condition is a truth kept in a variable)."""
    lines = [
        "def spread(a: Field[np.float64], out: Field[np.float64]):",
        "    with computation(PARALLEL), interval(...):",
        "        x = a * 0.5",
        "        y = a",
    ]
    for n in range(arms):
        fn = "exp" if n % 2 == 0 else "log"
        lines += [f"        if a > {0.2 * n}:", f"            x = x + {fn}(a * {n + 1}.0 + 0.5)", "            y = y * 0.5"]
    lines.append("        out = x + y")
    return "\n".join(lines) + "\n"


@NEEDS_CC
@pytest.mark.parametrize("arms", [3, 4, 70])
def test_guarded_math_spread_over_many_arms_keeps_its_branches(monkeypatch, tmp_path, arms):
    """One-float-type code for the vectoriser computes guarded math in chunks of points (each
    chunk runs every guarded arm where one of its points takes one); spread over more than 3
    arms, some point of almost every chunk takes one, so the run is scalar C with branches
    (pace's icloud, 28 arms: 70 ms per call in chunks, 19 ms with branches), which tests its
    conditions as C `int`s (not floats 1.0 and 0.0 compared again), in one fused run however
    long (70 arms: over 128 statements). Either way both tiers give NumPy's values (vector math
    within its few ulps)."""
    monkeypatch.setenv("GRIDBUF_TIER2_CACHE", str(tmp_path / "cache"))
    mod = load_source(str(tmp_path), f"spread_math_{arms}", "import numpy as np\nfrom gridbuf.gtscript import *\n" + spread_math_source(arms))
    rng = np.random.default_rng(30 + arms)
    a = rng.uniform(0.0, 1.0, (21, 5, 3))
    want, y = a * 0.5, a.copy()
    for n in range(arms):
        fn = np.exp if n % 2 == 0 else np.log
        want = np.where(a > 0.2 * n, want + fn(a * (n + 1.0) + 0.5), want)
        y = np.where(a > 0.2 * n, y * 0.5, y)
    want = want + y
    for tier in ("0", "define"):
        monkeypatch.setenv("GRIDBUF_TIER2", tier)
        st = gtscript.stencil(backend="gt:cpu_ifirst", definition=mod.spread)
        if tier == "define":
            assert st.tier_two.startswith("ready"), st.tier_two
        out = np.zeros_like(a)
        st(a, out)
        np.testing.assert_allclose(out, want, rtol=1e-14, atol=0)
    (src,) = (tmp_path / "cache").glob("*.c")
    text = src.read_text()
    assert ("gb_any" in text) == (arms <= 3)
    if arms > 3:
        one, zero = "gb_d(0x3ff0000000000000ULL)", "gb_d(0x0000000000000000ULL)"
        assert f"? {one} : {zero}" not in text and re.search(r"int v\w* = \(int\)\(", text), text
        assert re.findall(r"void (gb_f\w+)\(", text) == ["gb_f0_0"], text


def regional_walk_def(a: Field[np.float64], b: Field[np.float64], out: Field[np.float64]):  # type: ignore[valid-type]
    with computation(PARALLEL), interval(...):
        with horizontal(region[I[0] + 1 : I[0] + 3, :]):
            b = a * 2.0 + 1.0
            out = b * a - 0.5  # noqa: F841


def regional_offsets_def(a: Field[np.float64], b: Field[np.float64], out: Field[np.float64]):  # type: ignore[valid-type]
    with computation(PARALLEL), interval(1, -1):
        with horizontal(region[I[0] + 1, :]):
            b = a * 2.0 + 1.0
            out = b * a[0, 0, 1] - a[0, 0, -1]  # noqa: F841


@NEEDS_CC
@pytest.mark.parametrize("order", ["C", "F"])
def test_parallel_sections_under_a_region_compute_numpys_values_on_tier_two(monkeypatch, tmp_path, order):
    """A PARALLEL section under one region, which tier two walks level by level on I-fastest
    memory (F order), with and without reads at other levels of what it does not write: both
    tiers compute NumPy's values in the region, and outside it (and the domain) nothing
    changes. (A read at another level of what the section writes is a race GT4Py refuses; so
    does gridbuf, and a walk of levels is not planned for one.)"""
    monkeypatch.setenv("GRIDBUF_TIER2_CACHE", str(tmp_path / "cache"))
    rng = np.random.default_rng(11)
    shape, origin, domain = (10, 8, 6), (2, 1, 0), (6, 5, 6)
    a = np.asarray(rng.standard_normal(shape), order=order)
    js = slice(origin[1], origin[1] + domain[1])
    for definition, cols, ks in ((regional_walk_def, [3, 4], slice(0, 6)), (regional_offsets_def, [3], slice(1, 5))):
        b0 = np.asarray(rng.standard_normal(shape), order=order)
        want_b, want_out = b0.copy(), np.full(shape, -9.0)
        for i in cols:
            want_b[i, js, ks] = a[i, js, ks] * 2.0 + 1.0
            if definition is regional_walk_def:
                want_out[i, js, ks] = want_b[i, js, ks] * a[i, js, ks] - 0.5
            else:
                up, down = slice(ks.start + 1, ks.stop + 1), slice(ks.start - 1, ks.stop - 1)
                want_out[i, js, ks] = want_b[i, js, ks] * a[i, js, up] - a[i, js, down]
        for tier in ("0", "define"):
            monkeypatch.setenv("GRIDBUF_TIER2", tier)
            st = gtscript.stencil(backend="numpy", definition=definition)
            b, out = b0.copy(order="A"), np.full(shape, -9.0, order=order)
            st(a, b, out, origin=origin, domain=domain)
            if tier == "define":
                assert st.tier_two.startswith("ready"), st.tier_two
            assert np.array_equal(b, want_b), (definition.__name__, tier)
            assert np.array_equal(out, want_out), (definition.__name__, tier)


# ---------------------------------------------------------------- failures, each in a process
CHILD = textwrap.dedent(
    """
    import sys, numpy as np
    sys.path.insert(0, {here!r})
    from test_gtscript_tier_two import lap_def, lap_numpy, inputs
    from gridbuf import gtscript
    st = gtscript.stencil(backend="numpy", definition=lap_def)
    a, b = inputs(seed=3)
    out = np.zeros_like(a)
    st(a, b, out, origin=(1, 1, 0), domain=(32, 20, 9))
    ok = np.array_equal(out[1:-1, 1:-1], lap_numpy(a, b))
    print("STATE", st.tier_two)
    print("RIGHT", ok)
    """
)


def run_child(env: dict[str, str]) -> tuple[str, bool, str]:
    """Runs CHILD (tier two at definition) with `env`; its tier-two state, whether its result
    was right, and its standard error."""
    full = dict(os.environ, GRIDBUF_TIER2="define", **env)
    p = subprocess.run([sys.executable, "-c", CHILD.format(here=str(HERE))], capture_output=True, text=True, env=full, timeout=300)
    assert p.returncode == 0, p.stderr[-4000:]
    lines = dict(line.split(" ", 1) for line in p.stdout.splitlines() if line.startswith(("STATE", "RIGHT")))
    return lines["STATE"], lines["RIGHT"] == "True", p.stderr


SLOW_FIRST_CALL = textwrap.dedent(
    """
    import time, numpy as np
    from gridbuf import gtscript
    from gridbuf.gtscript import PARALLEL, Field, computation, interval

    def count_down(a: Field[np.float64], out: Field[np.float64]):
        with computation(PARALLEL), interval(...):
            y = a
            while y > 0.0:
                y = y - 1.0
            out = y

    st = gtscript.stencil(backend="numpy", definition=count_down)
    a = np.full((2, 2, 2), 1.0e8)
    a[0, 0, 0] = 1.0e8 + 0.5
    a[1, 1, 1] = -2.0
    want = np.where(a > 0.0, a - np.ceil(a), a)
    for _ in range(2):
        out = np.full_like(a, np.nan)
        t0 = time.time()
        st(a, out)
        t1 = time.time()
        print("CALL", t0, t1, np.array_equal(out, want))
        print("STATE", st.wait_tier_two(120.0))
    """
)


@NEEDS_CC
def test_tier_two_compiles_after_the_first_call_returns(tmp_path):
    """The first call writes tier two's C, but its compiler starts only when that call returns:
    on a machine with few cores it would take one from the call it is meant to speed up. A
    compiler that logs when it starts shows it; the results are right on both tiers."""
    real = shutil.which(os.environ.get("CC", "cc").split()[0])
    log = tmp_path / "started"
    cc = tmp_path / "loggingcc"
    cc.write_text(f'#!/bin/sh\nif [ "$1" != --version ]; then date +%s.%N >> {log}; fi\nexec {real} "$@"\n')
    cc.chmod(0o755)
    env = dict(os.environ, CC=str(cc), GRIDBUF_TIER2_CACHE=str(tmp_path / "c"))
    env.pop("GRIDBUF_TIER2", None)
    script = tmp_path / "slow_first_call.py"  # a file: the frontend reads the definition's source
    script.write_text(SLOW_FIRST_CALL)
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr[-4000:]
    calls = [line.split() for line in p.stdout.splitlines() if line.startswith("CALL")]
    states = [line.split(" ", 1)[1] for line in p.stdout.splitlines() if line.startswith("STATE")]
    assert [c[3] for c in calls] == ["True", "True"], p.stdout
    assert all(s.startswith("ready: ") for s in states) and len(states) == 2, p.stdout
    (started,) = (float(t) for t in log.read_text().split())
    t0, t1 = float(calls[0][1]), float(calls[0][2])
    assert t1 - t0 > 0.1, f"the first call took {t1 - t0:.3f} s: too short to tell"
    # Started when the call had ended (a few ms before Python read the clock, at most), not
    # at its start, where the C was written.
    assert started > t0 + 0.9 * (t1 - t0), (t0, started, t1)


def test_missing_compiler_stays_on_tier_one_with_one_warning(tmp_path):
    state, right, err = run_child({"CC": str(tmp_path / "no-such-cc"), "GRIDBUF_TIER2_CACHE": str(tmp_path / "c")})
    assert state.startswith("failed: the C compiler CC="), state
    assert right
    assert err.count("gridbuf: tier two") == 1, err


def test_failing_compiler_stays_on_tier_one(tmp_path):
    cc = tmp_path / "badcc"
    cc.write_text("#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'badcc 1.0'; exit 0; fi\necho 'badcc: internal error' >&2\nexit 1\n")
    cc.chmod(0o755)
    state, right, err = run_child({"CC": str(cc), "GRIDBUF_TIER2_CACHE": str(tmp_path / "c")})
    assert state.startswith("failed: ") and "badcc: internal error" in state, state
    assert right
    assert err.count("gridbuf: tier two") == 1, err
    assert not list((tmp_path / "c").glob("*.so"))


@NEEDS_CC
def test_corrupt_and_stale_cache_entries_are_compiled_again(tmp_path):
    cache = tmp_path / "c"
    state, right, _ = run_child({"GRIDBUF_TIER2_CACHE": str(cache)})
    assert state == "ready: 1" and right
    (so,) = cache.glob("*.so")
    (src,) = cache.glob("*.c")
    # A cache hit: nothing compiled again (the entry's files unchanged).
    before = so.stat().st_mtime_ns
    state, right, _ = run_child({"GRIDBUF_TIER2_CACHE": str(cache)})
    assert state == "ready: 1" and right and so.stat().st_mtime_ns == before
    # Corrupt: the shared object is garbage.
    so.write_bytes(b"not an ELF file")
    state, right, _ = run_child({"GRIDBUF_TIER2_CACHE": str(cache)})
    assert state == "ready: 1" and right
    assert so.read_bytes()[:4] == b"\x7fELF"
    # Stale: the entry's source is not this module's (a hash collision, or an edited file); the
    # shared object beside it must not be used.
    src.write_text(src.read_text() + "\n/* another module */\n")
    so.write_bytes(b"not an ELF file either")
    state, right, _ = run_child({"GRIDBUF_TIER2_CACHE": str(cache)})
    assert state == "ready: 1" and right
    assert so.read_bytes()[:4] == b"\x7fELF"


@NEEDS_CC
def test_a_full_cache_loses_its_entries_used_longest_ago(tmp_path):
    """A compilation into a cache over ``GRIDBUF_TIER2_CACHE_MB`` removes the entries used
    longest ago (down to three quarters of the limit) and keeps the ones used since."""
    cache = tmp_path / "c"
    cache.mkdir()
    old = time.time() - 30 * 86400
    for key, when in (("0" * 32, old), ("1" * 32, old + 3600), ("2" * 32, time.time())):
        for ext, size in (("so", 400 << 10), ("c", 1 << 10)):
            path = cache / f"{key}.{ext}"
            path.write_bytes(b"\0" * size)
            os.utime(path, (when, when))
    state, right, err = run_child({"GRIDBUF_TIER2_CACHE": str(cache), "GRIDBUF_TIER2_CACHE_MB": "1"})
    assert state == "ready: 1" and right, err
    names = sorted(p.name for p in cache.iterdir())
    # 3 x 401 KiB + the new entry: over 1 MiB; down to 768 KiB: the two oldest go.
    assert not any(n.startswith(("0" * 32, "1" * 32)) for n in names), names
    assert f"{'2' * 32}.so" in names and f"{'2' * 32}.c" in names, names
    assert len([n for n in names if n.endswith(".so")]) == 2, names
    # A value it does not take is reported, and the default (no pruning at this size) used.
    state, right, err = run_child({"GRIDBUF_TIER2_CACHE": str(tmp_path / "d"), "GRIDBUF_TIER2_CACHE_MB": "lots"})
    assert state == "ready: 1" and right
    assert 'GRIDBUF_TIER2_CACHE_MB="lots"' in err, err


@NEEDS_CC
def test_unwritable_cache_compiles_privately(tmp_path):
    # A cache directory that cannot be made: its parent is a file.
    blocker = tmp_path / "file"
    blocker.write_text("")
    state, right, _ = run_child({"GRIDBUF_TIER2_CACHE": str(blocker / "cache")})
    assert state == "ready: 1" and right
    if os.geteuid() != 0:  # root writes through permissions
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        try:
            state, right, _ = run_child({"GRIDBUF_TIER2_CACHE": str(ro)})
            assert state == "ready: 1" and right
            assert not list(ro.iterdir())
        finally:
            ro.chmod(0o700)


# ---------------------------------------------------------------- MPI: ranks share one cache
MPI_CHILD = textwrap.dedent(
    """
    import sys, numpy as np
    sys.path.insert(0, {here!r})
    from mpi4py import MPI
    from test_gtscript_tier_two import lap_def, lap_numpy, inputs
    from gridbuf import gtscript
    comm = MPI.COMM_WORLD
    comm.Barrier()
    st = gtscript.stencil(backend="numpy", definition=lap_def)
    a, b = inputs(seed=4 + comm.rank)
    out = np.zeros_like(a)
    st(a, b, out, origin=(1, 1, 0), domain=(32, 20, 9))
    ok = bool(np.array_equal(out[1:-1, 1:-1], lap_numpy(a, b)))
    states = comm.gather((st.tier_two, ok), root=0)
    if comm.rank == 0:
        print("RESULTS", states)
    """
)


@NEEDS_CC
def test_four_ranks_share_one_cache(tmp_path):
    if importlib.util.find_spec("mpi4py") is None:
        pytest.skip("mpi4py is not installed (pip install -r requirements-dev.txt)")
    venv = Path(sys.executable).parent / "mpiexec"
    mpiexec = str(venv) if venv.exists() else shutil.which("mpiexec")
    if mpiexec is None:
        pytest.skip("no mpiexec found")
    cache = tmp_path / "shared"
    script = tmp_path / "child.py"
    script.write_text(MPI_CHILD.format(here=str(HERE)))
    env = dict(os.environ, GRIDBUF_TIER2="define", GRIDBUF_TIER2_CACHE=str(cache), GRIDBUF_NUM_THREADS="1")
    for attempt in range(2):  # the second run finds every rank's entry in the cache
        proc = subprocess.Popen([mpiexec, "-n", "4", sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True)
        try:
            out, _ = proc.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
            pytest.fail(f"mpiexec did not finish:\n{out[-4000:]}")
        assert proc.returncode == 0, out[-6000:]
        line = next(line for line in out.splitlines() if line.startswith("RESULTS"))
        results = eval(line.split(" ", 1)[1])  # noqa: S307 - our own child's repr of a list
        assert results == [("ready: 1", True)] * 4, (attempt, results)
        # One entry (one .so and its .c), and no temporary file left behind.
        names = sorted(p.name for p in cache.iterdir())
        assert len(names) == 2 and names[0].endswith(".c") and names[1].endswith(".so"), names


def damped_sum_def(a: Field[np.float64], out: Field[np.float64]):  # type: ignore[valid-type]
    with computation(FORWARD):
        with interval(0, 1):
            out = a * 1.0
        with interval(1, None):
            out = out[0, 0, -1] * 0.5 + a  # noqa: F841


@NEEDS_CC
@pytest.mark.parametrize("order", ["C", "F"])
def test_a_vertical_solver_gets_tier_two_rows_where_its_layout_runs_them(monkeypatch, tmp_path, order):
    """A FORWARD solver's row functions are compiled when a call first needs them: memory with
    unit stride along K (C order here) runs its column function and never compiles them, so
    tier two has nothing to add; I-fastest memory (F order) runs them, so tier two writes C for
    them at the first call. Both compute the same sum, before and after tier two."""
    monkeypatch.setenv("GRIDBUF_TIER2_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("GRIDBUF_TIER2", raising=False)
    st = gtscript.stencil(backend="numpy", definition=damped_sum_def)
    rng = np.random.default_rng(7)
    a = np.asarray(rng.standard_normal((12, 9, 11)), order=order)
    want = np.empty_like(a)
    want[:, :, 0] = a[:, :, 0]
    for k in range(1, a.shape[2]):
        want[:, :, k] = want[:, :, k - 1] * 0.5 + a[:, :, k]
    out = np.full_like(a, np.nan, order=order)
    st(a, out)
    assert np.array_equal(out, want)
    state = st.wait_tier_two(120.0)
    if order == "C":
        assert state == "failed: no function to compile", state
    else:
        assert state.startswith("ready: "), state
    out[...] = np.nan
    st(a, out)
    assert np.array_equal(out, want)
