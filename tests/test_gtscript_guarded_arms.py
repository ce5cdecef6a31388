"""Selects whose arms the engine computes only where some point takes them (guarded runs,
``plan/tape.rs``'s ``guard``): an ``if``/``else`` whose branches call math functions, nested and
not, on float64, float32 and mixed-type stencils, with conditions that differ from point to point
(vector lanes of both kinds), per row, per level, everywhere the same, and a scalar condition;
compiled and interpreted, on every layout. The reference is a plain Python loop over the points
with ``math``'s functions (the C library's, which gridbuf calls too), so every value must agree
bit for bit; NaN inputs check that a skipped arm's garbage never reaches an output."""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from _scratch import scratch_dir

import gridbuf as gb
from gridbuf import gtscript
from gridbuf.gtscript import FORWARD, PARALLEL, Field, computation, exp, interval, log, sqrt

LAYOUTS = ["C", "F", "gt:cpu_ifirst", "gt:cpu_kfirst"]
SHAPE = (37, 6, 5)  # rows longer than a vector step and than a few, odd: remainders too


def arms_float(c: Field["DT"], a: Field["DT"], out: Field["DT"], o2: Field["DT"], *, flag: bool):
    with computation(PARALLEL), interval(...):
        if c > 0.0:
            out = exp(a) * 2.0 + log(a * a + 1.0)
        else:
            out = log(a * a + 2.0) - exp(-a)
        o2 = a
        if flag:
            o2 = exp(a) + 1.0
        if c > 0.5:
            if a > 0.0:
                o2 = o2 + log(a + 1.0) * exp(c)
            else:
                o2 = o2 - sqrt(exp(c) + a * a)


def arms_mixed(c: Field[np.float64], a: Field[np.float64], n: Field[np.int32], out: Field[np.float64], o2: Field[np.float64], *, flag: bool):
    with computation(FORWARD), interval(...):
        if c > 0.0 and n > 1:
            out = exp(a) * n + log(a * a + 1.0)
        else:
            out = log(a * a + 2.0) - exp(-a) * (n - 2)
        o2 = a
        if flag:
            o2 = exp(a) + n
        if c > 0.5:
            if n > 2:
                o2 = o2 + log(a + 1.5) * exp(c)
            else:
                o2 = o2 - sqrt(exp(c) + a * a)


def reference(kind: str, c, a, n, flag: bool):
    """The float64 definitions point by point in Python floats and `math`'s functions (the C
    library's, as gridbuf's). (`arms_float` on float32 has none: GT4Py computes its float64
    literals' operations in float64; it is checked against the interpreter below.)"""
    f = float
    exp_, sqrt_ = math.exp, math.sqrt

    def log_(x: float) -> float:  # C's log: NaN below 0, -inf at 0
        return math.log(x) if x > 0 else (-math.inf if x == 0 else math.nan)
    out = np.empty_like(a)
    o2 = np.empty_like(a)
    for idx in np.ndindex(a.shape):
        ci, ai = f(c[idx]), f(a[idx])
        ni = int(n[idx]) if n is not None else 0
        take = ci > 0.0 and (ni > 1 if kind == "mixed" else True)
        if kind == "mixed":
            if take:
                v = exp_(ai) * ni + log_(ai * ai + 1.0)
            else:
                v = log_(ai * ai + 2.0) - exp_(-ai) * (ni - 2)
        elif take:
            v = exp_(ai) * f(2.0) + log_(ai * ai + f(1.0))
        else:
            v = log_(ai * ai + f(2.0)) - exp_(-ai)
        w = ai
        if flag:
            w = exp_(ai) + (ni if kind == "mixed" else f(1.0))
        if ci > 0.5:
            inner = ni > 2 if kind == "mixed" else ai > 0.0
            if inner:
                w = w + log_(ai + (1.5 if kind == "mixed" else f(1.0))) * exp_(ci)
            else:
                w = w - sqrt_(exp_(ci) + ai * ai)
        out[idx], o2[idx] = v, w
    return out, o2


def conditions(pattern: str, rng: np.random.Generator) -> np.ndarray:
    """The condition field `c`: > 0.5 takes both `if`s, in (0, 0.5] the first only."""
    i, j, k = np.meshgrid(*(np.arange(s) for s in SHAPE), indexing="ij")
    if pattern == "points":
        return rng.uniform(-1.0, 1.0, SHAPE)
    if pattern == "alternate":  # neighbouring points (one vector's lanes) differ
        return np.where((i + j + k) % 2 == 0, 0.75, -0.25)
    if pattern == "rows":
        return np.where(j % 2 == 0, 0.75, 0.25)
    if pattern == "levels":
        return np.where(k % 2 == 0, -0.5, 0.9)
    if pattern == "all":
        return np.full(SHAPE, 0.9)
    if pattern == "none":
        return np.full(SHAPE, -0.9)
    raise ValueError(pattern)


# kind: (definition, dtypes)
DEFS = {"f64": (arms_float, {"DT": np.float64}), "f32": (arms_float, {"DT": np.float32}), "mixed": (arms_mixed, None)}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("kind", ["f64", "mixed"])
@pytest.mark.parametrize("pattern", ["points", "alternate", "rows", "levels", "all", "none"])
def test_guarded_arms_match_a_point_by_point_reference(kind, pattern, layout):
    rng = np.random.default_rng(abs(hash((kind, pattern))) % 2**32)
    dtype = np.float64
    c = conditions(pattern, rng).astype(dtype)
    a = rng.uniform(-3.0, 3.0, SHAPE).astype(dtype)
    # A NaN input where a point takes the other arm: its arm's value must not leak.
    a[0, 0, 0] = np.nan
    n = rng.integers(0, 5, SHAPE).astype(np.int32) if kind == "mixed" else None
    definition, dtypes = DEFS[kind]
    st = gtscript.stencil(backend="gt:cpu_ifirst", definition=definition, dtypes=dtypes)
    for flag in (True, False):
        arrays = {"c": c, "a": a, "out": np.zeros(SHAPE, dtype), "o2": np.zeros(SHAPE, dtype)}
        if n is not None:
            arrays["n"] = n
        args = {k: _in_layout(v, layout) for k, v in arrays.items()}
        st(**args, flag=flag)
        want_out, want_o2 = reference(kind, c, a, n, flag)
        for name, want in (("out", want_out), ("o2", want_o2)):
            got = np.asarray(args[name])
            same = (got == want) | (np.isnan(got) & np.isnan(want))
            assert same.all(), f"{kind}/{pattern}/{layout}, flag={flag}: {name} differs at {np.argwhere(~same)[:3].tolist()}"


def _in_layout(x: np.ndarray, layout: str):
    if layout == "C":
        return np.ascontiguousarray(x)
    if layout == "F":
        return np.asfortranarray(x)
    return gb.from_array(x, backend=layout)


def test_guarded_arms_interpreted_agree_with_compiled():
    """The tape interpreter (`GRIDBUF_GTSCRIPT_JIT=0`, read when a stencil is defined) skips a
    guarded run per strip of points; it must give what the compiled code gives."""
    code = textwrap.dedent(
        """
        import numpy as np, sys
        sys.path.insert(0, %r)
        import test_gtscript_guarded_arms as t
        from gridbuf import gtscript
        rng = np.random.default_rng(5)
        outs = []
        for kind, (d, dtypes) in t.DEFS.items():
            dtype = np.float32 if kind == "f32" else np.float64
            for pattern in ["points", "alternate", "levels", "none"]:
                c = t.conditions(pattern, rng).astype(dtype)
                a = rng.uniform(-3.0, 3.0, t.SHAPE).astype(dtype)
                arrays = dict(c=c, a=a, out=np.zeros(t.SHAPE, dtype), o2=np.zeros(t.SHAPE, dtype))
                if kind == "mixed":
                    arrays["n"] = rng.integers(0, 5, t.SHAPE).astype(np.int32)
                gtscript.stencil(backend="gt:cpu_ifirst", definition=d, dtypes=dtypes)(**arrays, flag=True)
                outs += [arrays["out"], arrays["o2"]]
        np.save(sys.argv[1], np.concatenate([o.astype(np.float64).ravel() for o in outs]))
        """
        % str(__import__("pathlib").Path(__file__).parent)
    )
    results = []
    for jit in ("1", "0"):
        path = f"{scratch_dir('gridbuf_test_guarded_arms_')}/out.npy"
        env = {**__import__("os").environ, "GRIDBUF_GTSCRIPT_JIT": jit}
        subprocess.run([sys.executable, "-c", code, path], check=True, env=env)
        results.append(np.load(path))
    x, y = results
    assert ((x == y) | (np.isnan(x) & np.isnan(y))).all()


@gtscript.function
def _ice(t):
    return 611.21 * exp(-126.0 * log(t / 273.16) + (t - 273.16) / (t * 273.16) * 28.0)


@gtscript.function
def _table(i):
    t = 113.16 + 0.1 * i
    value = _ice(t)
    if i == 16:
        t = 253.16 + 0.1 * (i - 14)
        t = 113.16 + 0.1 * 15  # (a temporary from here on)
        # Read after `t` changes again: kept in a temporary of its own, computed only where
        # this branch runs.
        below = _ice(t)
        t = 113.16 + 0.1 * 17
        value = 0.5 * (below + _ice(t))
    return value


def table_at(i: Field[np.float64], out: Field[np.float64]):
    with computation(PARALLEL), interval(...):
        out = _table(i)


def test_a_function_local_kept_across_a_branch_is_computed_only_where_the_branch_runs():
    """A gtscript function's local assigned in an `if` and read after a local it depends on
    changes (pace's ``qs_table2_fn``: ``table2_m1``) goes to a temporary: computed under the
    branch's mask, so its `exp` is guarded (it was computed at every point), with the same
    values as a point-by-point reference."""
    st = gtscript.stencil(backend="gt:cpu_kfirst", definition=table_at)
    kept = [line for line in st.ir.splitlines() if line.startswith("stmt") and "exp" in line and line.split()[2] == "t"]
    assert kept and all(line.split()[4] == "sel" for line in kept), kept
    i = np.arange(40, dtype=np.float64).reshape(2, 4, 5) - 5.0

    def ice(t: float) -> float:
        return 611.21 * math.exp(-126.0 * math.log(t / 273.16) + (t - 273.16) / (t * 273.16) * 28.0)

    def table(x: float) -> float:
        t = 113.16 + 0.1 * x
        if x == 16:
            return 0.5 * (ice(113.16 + 0.1 * 15) + ice(113.16 + 0.1 * 17))
        return ice(t)

    want = np.vectorize(table)(i)
    for layout in LAYOUTS:
        out = _in_layout(np.zeros(i.shape), layout)
        st(_in_layout(i, layout), out)
        assert (np.asarray(out) == want).all(), layout


@gtscript.function
def _sat(t):
    return 611.21 * exp(17.5 * (t - 273.16) / (t - 35.86))


def two_ifs_share_a_value(t: Field[np.float64], q: Field[np.float64]):
    with computation(PARALLEL), interval(...):
        if q > 0.5:
            q = q - 1e-6 * _sat(t)
        if t > 280.0:
            t = t + 1e-3 * _sat(t)


def test_a_value_two_ifs_share_is_computed_only_where_one_of_them_runs():
    """`_sat(t)`, read in two `if`s, is computed once before the first (a shared temporary);
    the second `if`'s mask is computed after that, so the shared value's condition carries the
    mask's own expression back (it reads nothing written in between): the value is computed
    where either `if` runs, not at every point, and zero elsewhere, where nothing reads it."""
    st = gtscript.stencil(backend="gt:cpu_kfirst", definition=two_ifs_share_a_value)
    shared = [line for line in st.ir.splitlines() if line.startswith("stmt") and " exp " in line]
    assert len(shared) == 1 and shared[0].split()[4] == "sel" and shared[0].endswith("cast float64 lit int64 0"), shared
    rng = np.random.default_rng(3)
    t0 = rng.uniform(260.0, 300.0, SHAPE)
    q0 = rng.uniform(0.0, 1.0, SHAPE)

    def sat(t: float) -> float:
        return 611.21 * math.exp(17.5 * (t - 273.16) / (t - 35.86))

    want_q = np.where(q0 > 0.5, q0 - 1e-6 * np.vectorize(sat)(t0), q0)
    want_t = np.where(t0 > 280.0, t0 + 1e-3 * np.vectorize(sat)(t0), t0)
    for layout in LAYOUTS:
        t, q = _in_layout(t0.copy(), layout), _in_layout(q0.copy(), layout)
        st(t, q)
        assert (np.asarray(t) == want_t).all() and (np.asarray(q) == want_q).all(), layout


@gtscript.function
def _evaporation(t, q):
    if q > 0.5:
        qsat = 611.21 * exp(17.5 * log(t / 273.16) + (t - 273.16) / (t - 35.86))
        if qsat > q:
            q = q + 1e-6 * (qsat - q)
    return q


def nested_test_reads_a_local(t: Field[np.float64], q: Field[np.float64]):
    with computation(PARALLEL), interval(...):
        q = _evaporation(t, q)


def test_a_nested_ifs_test_is_computed_only_where_the_outer_test_holds():
    """A gtscript function tests, inside an `if`, a local holding `exp` and `log` in an `if` of
    its own (pace's ``revap_racc``: ``qsat``, under ``qr > QRMIN``): the nested test
    is computed only where the outer test holds, as GT4Py's compiled backends compute it, so
    the local's math is guarded too (it was computed at every point, for the nested test's
    mask); values as a point-by-point reference on every layout."""
    st = gtscript.stencil(backend="gt:cpu_kfirst", definition=nested_test_reads_a_local)
    with_math = [line for line in st.ir.splitlines() if line.startswith("stmt") and (" exp " in line or " log " in line)]
    assert with_math and all(line.split()[4] == "sel" for line in with_math), with_math
    rng = np.random.default_rng(5)
    t0 = rng.uniform(250.0, 300.0, SHAPE)
    q0 = rng.uniform(0.0, 2000.0, SHAPE) / 1000.0

    def point(t: float, q: float) -> float:
        if q > 0.5:
            qsat = 611.21 * math.exp(17.5 * math.log(t / 273.16) + (t - 273.16) / (t - 35.86))
            if qsat > q:
                q = q + 1e-6 * (qsat - q)
        return q

    want = np.vectorize(point)(t0, q0)
    for layout in LAYOUTS:
        q = _in_layout(q0.copy(), layout)
        st(_in_layout(t0, layout), q)
        assert (np.asarray(q) == want).all(), layout


@gtscript.function
def _swell(x):
    return 0.5 * x**0.75 + 0.25 * x + 0.125 * x * x


@gtscript.function
def _swell2(x):
    return _swell(_swell(x) + 0.1)


@gtscript.function
def _swell4(x):
    return _swell2(_swell2(x) + 0.1)


@gtscript.function
def _swell8(x):
    return _swell4(_swell4(x) + 0.1)


def spilled_under_an_if(c: Field[np.float64], a: Field[np.float64], out: Field[np.float64]):
    with computation(PARALLEL), interval(...):
        if c > 0.5:
            out = _swell8(a) - 1.0


def test_a_function_value_spilled_under_an_if_is_computed_only_where_the_if_runs():
    """A function's value too large to stay an expression goes to a temporary (`spill`); called
    inside an `if`, it is computed only where the `if` runs (pace's icloud computed graupel
    melt's `pow` at every point), zero elsewhere, where nothing reads it; values as a
    point-by-point reference on every layout."""
    st = gtscript.stencil(backend="gt:cpu_kfirst", definition=spilled_under_an_if)
    with_pow = [line for line in st.ir.splitlines() if line.startswith("stmt") and " pow " in line]
    assert with_pow and all(line.split()[4] == "sel" for line in with_pow), with_pow
    rng = np.random.default_rng(6)
    c0 = rng.uniform(0.0, 1.0, SHAPE)
    a0 = rng.uniform(0.0, 2.0, SHAPE)

    def swell(x: float) -> float:
        return 0.5 * x**0.75 + 0.25 * x + 0.125 * x * x

    def point(c: float, a: float, out: float) -> float:
        if c > 0.5:
            v = swell(a)
            for _ in range(7):  # _swell8: _swell applied 8 times, 0.1 added between
                v = swell(v + 0.1)
            return v - 1.0
        return out

    want = np.vectorize(point)(c0, a0, np.full(SHAPE, -7.0))
    for layout in LAYOUTS:
        out = _in_layout(np.full(SHAPE, -7.0), layout)
        st(_in_layout(c0, layout), _in_layout(a0, layout), out)
        assert (np.asarray(out) == want).all(), layout


@gtscript.function
def _melt(t, q):
    tc = t - 273.16
    if tc > 0.0:
        m = exp(0.5 * log(q + 1.0))
        q = q - 0.1 * m
        tc = tc - m
    if tc > 1.0:
        q = q + 0.01 * tc
    return q


def melt(t: Field[np.float64], q: Field[np.float64]):
    with computation(PARALLEL), interval(...):
        q = _melt(t, q)


def test_a_value_read_under_one_test_at_several_depths_is_computed_only_where_it_holds():
    """`m`, local to the first `if`, is read through `q` and `tc` in both arms of the second
    `if` (pace's icloud reads its snow melt so): each place sits in an arm of the first test,
    at different depths, so the value shared between the statements is computed only where
    that test holds (it was computed at every point); values as a point-by-point reference."""
    st = gtscript.stencil(backend="gt:cpu_kfirst", definition=melt)
    with_exp = [line for line in st.ir.splitlines() if line.startswith("stmt") and " exp " in line]
    assert with_exp and all(line.split()[4] == "sel" for line in with_exp), with_exp
    rng = np.random.default_rng(7)
    t0 = rng.uniform(270.0, 277.0, SHAPE)
    q0 = rng.uniform(0.0, 2.0, SHAPE)

    def point(t: float, q: float) -> float:
        tc = t - 273.16
        if tc > 0.0:
            m = math.exp(0.5 * math.log(q + 1.0))
            q = q - 0.1 * m
            tc = tc - m
        if tc > 1.0:
            q = q + 0.01 * tc
        return q

    want = np.vectorize(point)(t0, q0)
    for layout in LAYOUTS:
        q = _in_layout(q0.copy(), layout)
        st(_in_layout(t0, layout), q)
        assert (np.asarray(q) == want).all(), layout


@gtscript.function
def _qs(p):
    return 611.21 * exp(17.5 * (p - 273.16) / (p - 35.86))


def deposit(t: Field[np.float64], p: Field[np.float64], q: Field[np.float64], out: Field[np.float64]):
    with computation(PARALLEL), interval(...):
        if t < 273.16:
            q = q + 1e-3 * _qs(p)
            t = t - 0.5
            if t < 272.9:
                out = out + 1e-3 * _qs(p)


def test_a_value_shared_with_an_if_whose_test_changed_is_computed_under_the_outer_test():
    """`_qs(p)` is shared by two statements; the second sits in a nested `if` whose test reads
    `t` after the branch wrote it, so that test cannot be computed where the shared value is
    (before the first statement). The outer test, and-ed into the nested mask, can: the value
    is computed only where it holds (it was computed at every point; pace's icloud tests its
    temperature so after the melting changed it); values as a point-by-point reference."""
    st = gtscript.stencil(backend="gt:cpu_kfirst", definition=deposit)
    with_exp = [line for line in st.ir.splitlines() if line.startswith("stmt") and " exp " in line]
    assert len(with_exp) == 1 and with_exp[0].split()[4:8] == ["sel", "t", "0", "0"], with_exp
    rng = np.random.default_rng(9)
    t0 = rng.uniform(272.0, 274.5, SHAPE)
    p0 = rng.uniform(250.0, 300.0, SHAPE)
    q0 = rng.uniform(0.0, 1.0, SHAPE)
    out0 = rng.uniform(0.0, 1.0, SHAPE)

    def qs(p: float) -> float:
        return 611.21 * math.exp(17.5 * (p - 273.16) / (p - 35.86))

    def point(t: float, p: float, q: float, out: float) -> tuple[float, float, float]:
        if t < 273.16:
            q = q + 1e-3 * qs(p)
            t = t - 0.5
            if t < 272.9:
                out = out + 1e-3 * qs(p)
        return t, q, out

    want = np.vectorize(point)(t0, p0, q0, out0)
    for layout in LAYOUTS:
        got = [_in_layout(x.copy(), layout) for x in (t0, p0, q0, out0)]
        st(*got)
        for g, w in zip((got[0], got[2], got[3]), want):
            assert (np.asarray(g) == w).all(), layout


@gtscript.function
def _accrete(q, r, s):
    if q > 0.5:
        if r > 0.2:
            f = exp(0.8 * log(r))
        else:
            f = 0.0
        q = q + 0.1 * f
        s = s + 0.2 * f
    return q, s


def accrete(q: Field[np.float64], r: Field[np.float64], s: Field[np.float64]):
    with computation(PARALLEL), interval(...):
        q, s = _accrete(q, r, s)


def test_a_local_set_in_both_branches_keeps_the_first_branchs_math_under_its_mask():
    """`f` is set in the `then` branch (math) and the `else` branch (0.0): its first value is
    read only where the `then` branch's mask holds (the `else` arm of the second select also
    covers the points outside the outer `if`, where it was computed; pace's icloud so took
    `psacw`'s exp and log where `qlz > QRMIN` failed); values as a point-by-point reference."""
    st = gtscript.stencil(backend="gt:cpu_kfirst", definition=accrete)
    lines = [line.split() for line in st.ir.splitlines() if line.startswith("stmt")]
    # the `then` branch's mask: `and` of the outer mask and the test, no `not`
    (then_mask,) = [w[3] for w in lines if w[4] == "and" and len(w) == 15 and "not" not in w]
    (with_exp,) = [w for w in lines if "exp" in w]
    at = with_exp.index("exp")
    assert with_exp[at - 6 : at] == ["sel", "t", then_mask, "0", "0", "0"], " ".join(with_exp)
    rng = np.random.default_rng(10)
    q0, r0, s0 = (rng.uniform(0.0, 1.0, SHAPE) for _ in range(3))

    def point(q: float, r: float, s: float) -> tuple[float, float]:
        if q > 0.5:
            f = math.exp(0.8 * math.log(r)) if r > 0.2 else 0.0
            q = q + 0.1 * f
            s = s + 0.2 * f
        return q, s

    want_q, want_s = np.vectorize(point)(q0, r0, s0)
    for layout in LAYOUTS:
        q, s = _in_layout(q0.copy(), layout), _in_layout(s0.copy(), layout)
        st(q, _in_layout(r0, layout), s)
        assert (np.asarray(q) == want_q).all() and (np.asarray(s) == want_s).all(), layout


def nested_test_reads_at_a_run_time_level(pe: Field[np.float64], lev: Field[np.int64], out: Field[np.float64]):
    with computation(PARALLEL), interval(...):
        if lev < 3:
            if pe[0, 0, lev] > 0.5:
                out = 1.0


def test_a_nested_ifs_run_time_level_read_is_checked_only_where_the_outer_test_holds():
    """The nested test reads ``pe`` ``lev`` levels up, which leaves the array where the outer
    test fails (``lev`` 100): GT4Py's compiled backends never read there, and neither does
    gridbuf (it raised "level 105" when it computed the nested test everywhere)."""
    st = gtscript.stencil(backend="gt:cpu_ifirst", definition=nested_test_reads_at_a_run_time_level)
    shape = (4, 3, 6)
    pe0 = np.random.default_rng(0).random(shape)
    lev0 = np.zeros(shape, np.int64)
    lev0[:, :, 3:] = 100
    want = np.zeros(shape)
    for i, j, k in np.ndindex(*shape):
        if lev0[i, j, k] < 3 and pe0[i, j, k + lev0[i, j, k]] > 0.5:
            want[i, j, k] = 1.0
    assert want.any()
    for layout in LAYOUTS:
        out = _in_layout(np.zeros(shape), layout)
        st(_in_layout(pe0, layout), _in_layout(lev0, layout), out)
        assert (np.asarray(out) == want).all(), layout
