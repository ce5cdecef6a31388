"""Tier two's vector math: the math functions glibc's vector math library (libmvec) has, called
on whole vectors in the loops the C compiler vectorises (``GRIDBUF_VECTOR_MATH``, on by default
where libmvec loads; ``0`` keeps tier one's scalar functions, bit for bit).

What is checked here, per function and float type, on inputs spread over the function's domain:
tier two is within the accuracy the README states, in ulps against NumPy; the special inputs
(NaN, infinities, signed zeros, the domain's ends) give tier one's bits; the module really calls
the vector functions; and with ``GRIDBUF_VECTOR_MATH=0`` tier two gives tier one's bits.
"""

from __future__ import annotations

import importlib.util
import os
import platform
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).parent
_spec = importlib.util.spec_from_file_location("_math_functions", HERE.parent / "benchmarks" / "_math_functions.py")
assert _spec and _spec.loader
mf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mf)

_CC = os.environ.get("CC", "cc").split()[0]
#: Where vector math is expected: x86-64 Linux with glibc's libmvec and GCC (clang ignores the
#: vector declarations and calls the functions lane by lane, which the accuracy tests accept).
VECTOR_PLATFORM = sys.platform == "linux" and platform.machine() == "x86_64" and platform.libc_ver()[0] == "glibc"
NEEDS_CC = pytest.mark.skipif(shutil.which(_CC) is None, reason="no C compiler")

#: The accuracy the README states for tier two's vector math, per float type: at most this
#: many ulps from NumPy's value in the same type, for every function (measured: 3 and 5 at
#: most over 2^20 inputs per function, `bench_tier_two.py --math`; tier one's scalar functions
#: are themselves up to 4 and 3 ulps from NumPy's).
STATED_ULPS = {np.float64: 4, np.float32: 6}
SHAPE = (16, 16, 32)


def run(name: str, dtype, args: tuple[np.ndarray, ...], monkeypatch, *, tier2: str, vector: str | None = None) -> np.ndarray:
    """``name`` of `args` (flat, SHAPE's size) on a stencil defined with GRIDBUF_TIER2=`tier2`
    and GRIDBUF_VECTOR_MATH=`vector` (unset: the default)."""
    monkeypatch.setenv("GRIDBUF_TIER2", tier2)
    if vector is None:
        monkeypatch.delenv("GRIDBUF_VECTOR_MATH", raising=False)
    else:
        monkeypatch.setenv("GRIDBUF_VECTOR_MATH", vector)
    st = mf.stencil(name, dtype)
    if tier2 == "define":
        assert st.tier_two.startswith("ready"), st.tier_two
    a = args[0].reshape(SHAPE)
    b = (args[1] if len(args) > 1 else np.ones_like(args[0])).reshape(SHAPE)
    out = np.full(SHAPE, np.nan, dtype)
    st(a, b, out)
    return out.ravel()


def sample(name: str, dtype) -> tuple[np.ndarray, ...]:
    """The function's inputs (SHAPE's size), the special ones first."""
    _, sampler, arity = mf.FUNCTIONS[name]
    n = int(np.prod(SHAPE))
    rng = np.random.default_rng(NAMES_SEED[name])
    drawn = sampler(rng, n, dtype)
    args = drawn if isinstance(drawn, tuple) else (drawn,)
    special = np.array(mf.SPECIAL, dtype)
    out = []
    for k, x in enumerate(args):
        x = x.copy()
        if k == 0:
            x[: special.size] = special
        else:  # pow: every special base with exponent 2, then 0.5
            x[: special.size] = 2.0
            x[special.size : 2 * special.size] = special
        out.append(x)
    return tuple(out)


NAMES_SEED = {n: i for i, n in enumerate(mf.NAMES)}


@NEEDS_CC
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("name", mf.NAMES)
def test_vector_math_within_stated_ulps(name, dtype, monkeypatch):
    args = sample(name, dtype)
    got = run(name, dtype, args, monkeypatch, tier2="define")
    tier_one = run(name, dtype, args, monkeypatch, tier2="0")
    want = mf.reference(name, args)
    err = mf.ulps(got, want)
    stated = STATED_ULPS[dtype]
    worst = int(np.argmax(err))
    assert err.max() <= stated, f"{name} {np.dtype(dtype)}: {err.max()} ulps at {[a[worst] for a in args]} (got {got[worst]!r}, NumPy {want[worst]!r}), stated {stated}"
    # The special inputs (NaN, infinities, signed zeros; for pow, every special base squared)
    # give tier one's bits (NaN for NaN).
    k = len(mf.SPECIAL)
    special = np.array(mf.SPECIAL)
    exact = np.zeros(got.size, bool)
    exact[:k] = ~np.isfinite(special) | (special == 0.0)
    if len(args) > 1:
        exact[:k] = True
        exact[k : 2 * k] = ~np.isfinite(special) | (special == 0.0)
    same = (got == tier_one) & (np.signbit(got) == np.signbit(tier_one)) | (np.isnan(got) & np.isnan(tier_one))
    bad = exact & ~same
    assert not bad.any(), f"{name} {np.dtype(dtype)}: special inputs {[a[bad] for a in args]} give {got[bad]}, tier one {tier_one[bad]}"



@NEEDS_CC
@pytest.mark.parametrize("name", ["exp", "log", "pow", "sin"])
def test_scalar_math_switch_gives_tier_ones_bits(name, monkeypatch):
    args = sample(name, np.float64)
    got = run(name, np.float64, args, monkeypatch, tier2="define", vector="0")
    want = run(name, np.float64, args, monkeypatch, tier2="0")
    assert got.tobytes() == want.tobytes()


@NEEDS_CC
@pytest.mark.skipif(not VECTOR_PLATFORM, reason="libmvec is glibc's, on x86-64")
def test_module_calls_the_vector_functions(monkeypatch, tmp_path):
    """With GCC the compiled module calls libmvec's functions (their vector-ABI names, `_ZGV`);
    with GRIDBUF_VECTOR_MATH=0 it does not."""
    version = os.popen(f"{_CC} --version").read()
    if "clang" in version.lower():
        pytest.skip("clang ignores the vector declarations")
    for vector, expect in (("1", True), ("0", False)):
        cache = tmp_path / f"cache{vector}"
        monkeypatch.setenv("GRIDBUF_TIER2_CACHE", str(cache))
        run("exp", np.float64, sample("exp", np.float64), monkeypatch, tier2="define", vector=vector)
        (so,) = cache.glob("*.so")
        assert (b"_ZGV" in so.read_bytes()) == expect, (vector, so)
