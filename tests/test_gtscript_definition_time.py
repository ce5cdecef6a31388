"""Definitions that cannot blow up (issue 36): the time to define a stencil grows about linearly
with its number of statements, whatever their shape (chains of temporaries read once, twice, or
by two later statements; many temporaries summed by one statement), the results are those of
the same operations in NumPy, bit for bit, and long chains of distinct ``gtscript.function``
helpers are inlined (only real recursion is refused).

The growth is measured as a ratio of definition times in one run (the fastest of a few
repeats at each size), never as a wall-clock bound."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from gridbuf import gtscript
from _gtscript_oracle import load_source
from gridbuf.errors import GridbufValueError

HEAD = "from gridbuf import gtscript\nfrom gridbuf.gtscript import PARALLEL, Field, computation, interval\n\n"


def _sum_tree(names: list[str]) -> str:
    if len(names) == 1:
        return names[0]
    mid = len(names) // 2
    return f"({_sum_tree(names[:mid])} + {_sum_tree(names[mid:])})"


def source(shape: str, n: int) -> str:
    """A definition `defn(inp, out, a, b)` of about `n` statements (see
    ``benchmarks/bench_definition_time.py``, which times the same shapes), with values that
    stay bounded."""
    if shape == "chain":  # each temporary read once, by the next statement
        body = ["t0 = inp", *(f"t{k} = t{k - 1} * a + inp" for k in range(1, n - 1)), f"out = t{n - 2}"]
    elif shape == "square":  # each read twice, by the next statement
        body = ["t0 = inp", *(f"t{k} = t{k - 1} * t{k - 1} * a + b" for k in range(1, n - 1)), f"out = t{n - 2}"]
    elif shape == "fib":  # each read by the next two statements
        body = ["t0 = inp", "t1 = inp * b", *(f"t{k} = a * t{k - 1} + b * t{k - 2}" for k in range(2, n - 1)), f"out = t{n - 2}"]
    elif shape == "fan":  # all read once by the last statement
        body = [*(f"t{k} = inp[1, 0, 0] * {float(k)!r}" for k in range(n - 1)), f"out = {_sum_tree([f't{k}' for k in range(n - 1)])}"]
    else:
        raise ValueError(shape)
    return HEAD + "def defn(inp: Field[float], out: Field[float], a: float, b: float):\n    with computation(PARALLEL), interval(...):\n" + "".join(f"        {s}\n" for s in body)


def expected(shape: str, n: int, inp: np.ndarray, a: float, b: float) -> np.ndarray:
    """NumPy's result of `source(shape, n)`, the same operations in the same order."""
    a, b = np.float64(a), np.float64(b)
    if shape == "chain":
        t = inp
        for _ in range(1, n - 1):
            t = t * a + inp
        return t
    if shape == "square":
        t = inp
        for _ in range(1, n - 1):
            t = t * t * a + b
        return t
    if shape == "fib":
        prev, t = inp, inp * b
        for _ in range(2, n - 1):
            prev, t = t, a * t + b * prev
        return t
    raise ValueError(shape)


_counter = iter(range(10**6))


def define(tmp_path, src: str, **kw):
    mod = load_source(str(tmp_path), f"defn_time_{next(_counter)}", src)
    return gtscript.stencil(backend="numpy", definition=mod.defn, **kw)


def definition_time(tmp_path, shape: str, n: int, repeats: int) -> float:
    mod = load_source(str(tmp_path), f"defn_time_{shape}_{n}_{next(_counter)}", source(shape, n))
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        gtscript.stencil(backend="numpy", definition=mod.defn)
        best = min(best, time.perf_counter() - t0)
    return best


@pytest.mark.parametrize("shape", ["chain", "square", "fib", "fan"])
def test_definition_time_grows_about_linearly(tmp_path, shape):
    # 8 times the statements: a near-linear definition takes about 8 times as long (n log n:
    # 8 * 1.35); a quadratic one 64 times. Allowed: 8 * log factor * 3 (a shared machine).
    small, large = 300, 2400
    definition_time(tmp_path, shape, 50, 1)  # warm-up: imports, first JIT module
    t_small = definition_time(tmp_path, shape, small, 3)
    t_large = definition_time(tmp_path, shape, large, 2)
    bound = (large / small) * (math.log(large) / math.log(small)) * 3
    assert t_large / t_small < bound, f"{shape}: {t_small:.3f} s at {small} statements, {t_large:.3f} s at {large}: ratio {t_large / t_small:.1f} >= {bound:.1f}"


@pytest.mark.parametrize(("shape", "n"), [("square", 30), ("square", 300), ("chain", 2000), ("fib", 60), ("fib", 600)])
def test_long_chains_compute_what_numpy_computes(tmp_path, shape, n):
    st = define(tmp_path, source(shape, n))
    rng = np.random.default_rng(n)
    # Every map converges (t * t * 0.5 + 0.45 to 1 - sqrt(0.1) from [0.9, 1.1]): values stay finite.
    inp = rng.uniform(0.9, 1.1, (5, 4, 3))
    a, b = (0.5, 0.45) if shape == "square" else (0.5, 0.25)
    out = np.zeros_like(inp)
    st(inp, out, a, b)
    want = expected(shape, n, inp, a, b)
    assert np.isfinite(want).all() and not (want == 0).all()
    np.testing.assert_array_equal(out, want)


def test_fan_computes_what_numpy_computes(tmp_path):
    n = 600
    st = define(tmp_path, source("fan", n))
    inp = np.random.default_rng(0).uniform(-1, 1, (6, 4, 3))
    out = np.zeros_like(inp)
    st(inp, out, 0.5, 0.25, origin=(0, 0, 0), domain=(5, 4, 3))
    terms = [inp[1:6] * np.float64(k) for k in range(n - 1)]

    def tree(ts):
        return ts[0] if len(ts) == 1 else tree(ts[: len(ts) // 2]) + tree(ts[len(ts) // 2 :])

    np.testing.assert_array_equal(out[:5], tree(terms))


def helpers_source(n: int, form: str) -> str:
    """`n` distinct helpers, f{k} calling f{k-1}: each wrapping the value in two operations
    ("wrap"), or through a local ("local")."""
    lines = [HEAD, "@gtscript.function\ndef f0(x):\n    return x * 0.5 + 0.25\n"]
    for k in range(1, n):
        body = f"    return f{k - 1}(x) * 0.5 + 0.25\n" if form == "wrap" else f"    y = f{k - 1}(x)\n    return y * 0.5 + 0.25\n"
        lines.append(f"@gtscript.function\ndef f{k}(x):\n{body}")
    lines.append(f"def defn(inp: Field[float], out: Field[float]):\n    with computation(PARALLEL), interval(...):\n        out = f{n - 1}(inp)\n")
    return "\n".join(lines)


@pytest.mark.parametrize(("n", "form"), [(26, "wrap"), (60, "wrap"), (60, "local"), (400, "wrap")])
def test_long_chains_of_distinct_helpers_are_inlined(tmp_path, n, form):
    # 26 helpers used to be refused as "f0 calls itself too deeply" (a depth counter shared by
    # expressions and calls); 400 nest 800 operations, which go to temporaries every 48 levels.
    st = define(tmp_path, helpers_source(n, form))
    inp = np.random.default_rng(n).uniform(-2, 2, (4, 3, 2))
    out = np.zeros_like(inp)
    st(inp, out)
    want = inp
    for _ in range(n):
        want = want * 0.5 + 0.25
    np.testing.assert_array_equal(out, want)


def test_a_local_reassigned_under_many_ifs_stays_linear(tmp_path):
    # Each `if` selects between the new and the old value of `x`: as expressions, 2**n nodes
    # (18 ifs took 8 s and 24 MB of IR); past 1024 nodes the local becomes a temporary.
    n = 60
    body = "".join(f"    if x > {k}.0:\n        x = x * 0.5 + 0.25\n" for k in range(n))
    src = HEAD + f"@gtscript.function\ndef f(x):\n{body}    return x\n\n" + (
        "def defn(inp: Field[float], out: Field[float]):\n    with computation(PARALLEL), interval(...):\n        out = f(inp)\n"
    )
    t0 = time.perf_counter()
    st = define(tmp_path, src)
    assert len(st.ir) < 500_000 and time.perf_counter() - t0 < 30
    inp = np.random.default_rng(1).uniform(0, n + 2, (5, 4, 3))
    out = np.zeros_like(inp)
    st(inp, out)
    want = inp
    for k in range(n):
        want = np.where(want > k, want * 0.5 + 0.25, want)
    np.testing.assert_array_equal(out, want)


def shared_locals_source(n: int) -> str:
    """`n` helpers, g{k} reading its local four times: `e = sqrt(y * y + 1.0)` with `y =
    g{k-1}(x)`, `return e * 0.5 + e * e * 0.125 - e * 0.25`. Written out, the value of g{n-1} has 4**n
    copies of g0's (the frontend keeps a local as an expression, shared by its readers; a value
    past 1024 nodes goes to a temporary)."""
    head = HEAD.replace("computation, interval", "computation, interval, sqrt")
    body = "    e = sqrt(y * y + 1.0)\n    return e * 0.5 + e * e * 0.125 - e * 0.25\n"
    lines = [head, f"@gtscript.function\ndef g0(x):\n    y = x\n{body}"]
    for k in range(1, n):
        lines.append(f"@gtscript.function\ndef g{k}(x):\n    y = g{k - 1}(x)\n{body}")
    lines.append(f"def defn(inp: Field[float], out: Field[float]):\n    with computation(PARALLEL), interval(...):\n        out = g{n - 1}(inp)\n")
    return "\n".join(lines)


@pytest.mark.parametrize("n", [4, 12])
def test_shared_parts_are_written_and_computed_once(tmp_path, n):
    # pace's microphysics.icloud wrote 1.18 MB of IR for 410 statements (148,000 nodes, 22,500
    # distinct ones) and computed exp and log about 1,400 times per point each: a local read in
    # several places is written once in a statement (`let`/`ref`) and computed once (the
    # planner's tape).
    st = define(tmp_path, shared_locals_source(n))
    assert st.ir.count("sqrt") == n, st.ir
    inp = np.random.default_rng(n).uniform(-2, 2, (4, 3, 2))
    out = np.zeros_like(inp)
    st(inp, out)
    want = inp
    for _ in range(n):
        e = np.sqrt(want * want + 1.0)
        want = e * 0.5 + e * e * 0.125 - e * 0.25
    np.testing.assert_array_equal(out, want)


def test_a_value_statements_share_is_computed_once_where_it_is_the_same(tmp_path):
    # Equal values in several statements go to one temporary, computed before the first,
    # unless something they read is written in between (pace's saturation adjustment computed
    # exp and log about 250 times per point each). `x ** 2.0` is a call of pow, exact here.
    src = HEAD + (
        "def defn(a: Field[float], b: Field[float], c: Field[float], d: Field[float]):\n"
        "    with computation(PARALLEL), interval(...):\n"
        "        b = a ** 2.0 + 1.0\n"
        "        c = a ** 2.0 * 3.0\n"
        "        a = a + 1.0\n"
        "        d = a ** 2.0 - 1.0\n"
    )
    st = define(tmp_path, src)
    assert st.ir.count(" pow ") == 2 and st.ir.count("temp __shared") == 1, st.ir
    a = np.random.default_rng(3).uniform(-2, 2, (4, 3, 2))
    b, c, d = (np.zeros_like(a) for _ in range(3))
    a0 = a.copy()
    st(a, b, c, d)
    np.testing.assert_array_equal(b, a0 * a0 + 1.0)
    np.testing.assert_array_equal(c, a0 * a0 * 3.0)
    np.testing.assert_array_equal(d, (a0 + 1.0) * (a0 + 1.0) - 1.0)


def test_a_shared_value_needed_under_a_condition_is_computed_only_there(tmp_path):
    # A value two statements share only inside `if c > 0` goes to a temporary that takes it
    # where the condition holds (a select, whose arm the core computes only where a point takes
    # it); where a statement between writes what the condition reads, or a reader needs it
    # everywhere, the temporary takes it everywhere. The values are the same either way.
    src = HEAD.replace("computation, interval", "computation, interval, exp, log") + (
        "def defn(a: Field[float], c: Field[float], b: Field[float], d: Field[float], e: Field[float]):\n"
        "    with computation(PARALLEL), interval(...):\n"
        "        if c > 0.0:\n"
        "            b = exp(a) * 2.0 + log(a * a + 1.0)\n"
        "            d = exp(a) * 3.0 - log(a * a + 1.0)\n"
        "        e = log(a * a + 1.0) + 1.0\n"
    )
    st = define(tmp_path, src)
    shared = [ln for ln in st.ir.splitlines() if ln.startswith("stmt") and ln.split()[2] == "t"]
    temps = [ln.split()[1] for ln in st.ir.splitlines() if ln.startswith("temp ")]
    hoisted = {int(ln.split()[3]): ln.split()[4] for ln in shared if temps[int(ln.split()[3])].startswith("__shared")}
    # exp(a): only under the condition; log(a * a + 1.0): also read by `e`, everywhere.
    assert sorted(hoisted.values()) == ["log", "sel"], st.ir
    rng = np.random.default_rng(4)
    a = rng.uniform(-2, 2, (9, 4, 3))
    c = np.where(rng.uniform(-1, 1, a.shape) > 0, 1.0, -1.0)
    b, d, e = (np.full_like(a, 7.0) for _ in range(3))
    st(a, c, b, d, e)
    ex = np.vectorize(math.exp)(a)
    lg = np.vectorize(math.log)(a * a + 1.0)
    np.testing.assert_array_equal(b, np.where(c > 0, ex * 2.0 + lg, 7.0))
    np.testing.assert_array_equal(d, np.where(c > 0, ex * 3.0 - lg, 7.0))
    np.testing.assert_array_equal(e, lg + 1.0)


def test_recursion_is_refused_naming_the_function(tmp_path):
    src = HEAD + (
        "@gtscript.function\ndef f(x):\n    return f(x) + 1.0\n\n"
        "@gtscript.function\ndef g(x):\n    return h(x) * 2.0\n\n"
        "@gtscript.function\ndef h(x):\n    return g(x) - 1.0\n\n"
        "def defn(inp: Field[float], out: Field[float]):\n    with computation(PARALLEL), interval(...):\n        out = f(inp)\n\n"
        "def defn2(inp: Field[float], out: Field[float]):\n    with computation(PARALLEL), interval(...):\n        out = g(inp)\n"
    )
    mod = load_source(str(tmp_path), "defn_recursive", src)
    with pytest.raises(GridbufValueError, match=r"f calls itself \(f -> f\)"):
        gtscript.stencil(backend="numpy", definition=mod.defn)
    with pytest.raises(GridbufValueError, match=r"g calls itself \(g -> h -> g\)"):
        gtscript.stencil(backend="numpy", definition=mod.defn2)


def test_deep_expressions_are_refused_not_crashed(tmp_path):
    # A flat sum of 1000 terms is a left-nested tree 1000 deep (Python 3.11 cannot even parse
    # one of 3000): refused with a message, not a crash.
    terms = " + ".join(f"inp[0, 0, 0] * {k}.0" for k in range(1000))
    src = HEAD + f"def defn(inp: Field[float], out: Field[float]):\n    with computation(PARALLEL), interval(...):\n        out = {terms}\n"
    with pytest.raises(GridbufValueError, match="nested too deeply"):
        define(tmp_path, src)
