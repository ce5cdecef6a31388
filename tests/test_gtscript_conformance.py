"""gridbuf.gtscript's type system against GT4Py 1.1.12's numpy backend.

In the style of GT4Py's own stencil test suites: one small definition per feature (every dtype
as field and scalar, GT4Py's upcasting, literals, casts, typed and 2-D temporaries, writes to IJ
fields, ``dtypes=`` symbols, conditions evaluated once, NaN-propagating min/max, ``%`` and
``**``), each run through ``gridbuf.gtscript`` and through GT4Py's ``numpy`` backend on the same
random inputs (negative values, zeros, extremes of the integer types, NaN and infinities), with
every array argument compared afterwards, bit for bit. Then regression tests for the silent bugs
of issue 21, random expression trees over mixed dtypes (hypothesis) and bad input.

The GT4Py semantics relied on are written down in the project's notes on GT4Py 1.1.12
(``gt4py_semantics.md``); section numbers below refer to it.
"""

from __future__ import annotations

import importlib.util
import inspect
import itertools
import os
import re
import subprocess
import sys
import textwrap
import zlib
from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gridbuf as gb
from gridbuf import gtscript
from _gtscript_oracle import assert_same, gt4py_reference, in_layout, load_source, run_in_layout
from gridbuf.errors import GridbufError, GridbufTypeError, GridbufValueError
from _scratch import scratch_dir

# GT4Py builds its numpy-backend modules in a cache it locates when first imported. The
# subprocess of test_two_threads_large_domain runs gridbuf only and skips the import.
os.environ.setdefault("GT_CACHE_ROOT", scratch_dir("gridbuf_test_conformance_"))
HAVE_GT4PY = False
if not os.environ.get("_GRIDBUF_CONFORMANCE_NO_GT4PY"):
    try:
        import gt4py.cartesian.gtscript  # noqa: F401

        HAVE_GT4PY = True
    except ImportError:  # pragma: no cover - gt4py is a dev requirement
        pass

needs_gt4py = pytest.mark.skipif(not HAVE_GT4PY, reason="gt4py is not installed")
pytestmark = pytest.mark.filterwarnings("ignore:2D temporaries is an experimental feature")

LAYOUTS = ["C", "F", "gt:cpu_ifirst", "gt:cpu_kfirst"]
DOMAIN = (13, 9, 7)
BIG_DOMAIN = (67, 65, 5)  # several tiles: runs on every thread

HEADERS = {
    "gb": "import numpy as np\nfrom gridbuf import gtscript\nfrom gridbuf.gtscript import *\n",
    "gt": "import numpy as np\nfrom gt4py.cartesian import gtscript\nfrom gt4py.cartesian.gtscript import *\n",
}


# ============================================================================ the registry
@dataclass
class Case:
    """One definition: its source, halo (I, J, K) read around the domain, scalar arguments,
    input generators by argument (see `values`) and `dtypes=`."""

    src: str
    halo: tuple[int, int, int] = (0, 0, 0)
    scalars: dict = field(default_factory=dict)
    gens: dict = field(default_factory=dict)
    dtypes: dict | None = None
    externals: dict | None = None


CASES: dict[str, Case] = {}


def case(src: str, **kw) -> None:
    src = textwrap.dedent(src).strip("\n") + "\n"
    name = re.match(r"def (\w+)\(", src).group(1)
    CASES[name] = Case(src, **kw)


# -- each dtype as field and as scalar ---------------------------------------------------------
case(
    """
    def bool_field(m: Field[bool], n: Field[bool], a: Field[np.float64], out: Field[np.float64], mo: Field[bool], *, flag: bool, g: bool):
        with computation(PARALLEL), interval(...):
            out = a if m else -a
            mo = (m and not n) or g
            if flag:
                out = out * 2.0
    """,
    scalars={"flag": True, "g": False},
)
for _bits in (8, 16, 32, 64):
    case(
        f"""
        def int{_bits}_field(a: Field[np.int{_bits}], b: Field[np.int{_bits}], out: Field[np.int{_bits}], o64: Field[np.int64], *, s: np.int{_bits}):
            with computation(PARALLEL), interval(...):
                out = a[1, 0, 0] + b * s - a[0, -1, 0]
                o64 = a - b
        """,
        halo=(1, 1, 0),
        scalars={"s": np.dtype(f"int{_bits}").type(-7)},
        gens={"a": "wide", "b": "wide"},
    )
for _bits in (32, 64):
    case(
        f"""
        def float{_bits}_field(a: Field[np.float{_bits}], b: Field[np.float{_bits}], out: Field[np.float{_bits}], *, s: np.float{_bits}):
            with computation(PARALLEL), interval(...):
                out = a[0, 0, 1] * s - b / s + a[-1, 0, 0] * b
        """,
        halo=(1, 0, 1),
        scalars={"s": np.dtype(f"float{_bits}").type(0.3)},
    )
case(
    """
    def scalar_mix(f: Field[np.float32], iv: Field[np.int16], o1: Field[np.float32], o2: Field[np.float32], o3: Field[np.int16], o4: Field[np.float64], *, n: int, d: float, s8: np.int8, h: np.float32):
        with computation(PARALLEL), interval(...):
            o1 = f * n
            o2 = f * d
            o3 = iv * s8 + iv
            o4 = iv * h + f
    """,
    scalars={"n": 3, "d": 1.1, "s8": np.int8(-5), "h": np.float32(0.7)},
)
case(
    """
    def lowdim_mixed(a: Field[np.float32], ij: Field[IJ, np.int16], kv: Field[K, np.int8], out: Field[np.float32], o2: Field[np.int32]):
        with computation(PARALLEL), interval(...):
            out = a + ij + kv[1]
            o2 = ij[1, 0] * kv
    """,
    halo=(1, 0, 1),
)

# -- GT4Py's upcasting (notes §2): the max in GT4Py's type order, literals int64/float64 ------
case(
    """
    def mix_int_float(i32: Field[np.int32], i64: Field[np.int64], f32: Field[np.float32], of32: Field[np.float32], of64: Field[np.float64], og64: Field[np.float64], oi8: Field[np.float32]):
        with computation(PARALLEL), interval(...):
            of32 = i32 + f32
            of64 = i32 + f32
            og64 = i64 + f32
            oi8 = i32 - f32 * f32
    """,
    gens={"i32": "wide", "i64": "wide"},
)
case(
    """
    def mix_f32_literal(f32: Field[np.float32], o32: Field[np.float32], o64: Field[np.float64], p32: Field[np.float32], q32: Field[np.float32]):
        with computation(PARALLEL), interval(...):
            o32 = f32 * 1.1
            o64 = f32 * 1.1
            p32 = f32 * 3 + f32 / 7
            q32 = (f32 + 0.1) * f32
    """
)
case(
    """
    def mix_int_literal(i32: Field[np.int32], o32: Field[np.int32], o64: Field[np.int64], w64: Field[np.int64], f: Field[np.float64], g: Field[np.int32]):
        with computation(PARALLEL), interval(...):
            o32 = i32 * 2
            o64 = i32 * 2
            w64 = i32 + i32
            f = i32 * 2.0
            g = i32 + 1
    """,
    gens={"i32": "wide"},
)
case(
    """
    def int8_overflow(a: Field[np.int8], b: Field[np.int8], c: Field[np.int16], o8: Field[np.int8], o16: Field[np.int16], p16: Field[np.int16], o64: Field[np.int64], n8: Field[np.int8]):
        with computation(PARALLEL), interval(...):
            o8 = a + b
            o16 = a * b
            p16 = a + c
            o64 = a * 2 - b
            n8 = -a
    """,
    gens={"c": "wide"},
)
case(
    """
    def true_div(a: Field[np.int32], b: Field[np.int32], c: Field[np.int64], d: Field[np.int64], o64: Field[np.float64], o32: Field[np.float32], p64: Field[np.float64], q32: Field[np.float32]):
        with computation(PARALLEL), interval(...):
            o64 = a / b
            o32 = c / d
            p64 = a / 4.0
            q32 = a / 3
    """,
    gens={"a": "dividend", "b": "divisor", "c": "wide", "d": "divisor"},
)
case(
    """
    def mod_int(a: Field[np.int32], b: Field[np.int32], c: Field[np.int8], e: Field[np.int8], o: Field[np.int32], p: Field[np.int32], q: Field[np.int64], r: Field[np.int8]):
        with computation(PARALLEL), interval(...):
            o = a % b
            p = mod(a, -3)
            q = a % 7
            r = c % e
    """,
    gens={"a": "dividend", "b": "divisor", "c": "dividend", "e": "divisor"},
)
case(
    """
    def mod_float(a: Field[np.float64], b: Field[np.float64], f: Field[np.float32], g: Field[np.float32], o: Field[np.float64], p: Field[np.float64], q: Field[np.float32], r: Field[np.float32], s: Field[np.float32]):
        with computation(PARALLEL), interval(...):
            o = a % b
            p = a % -2.5
            q = f % g
            r = f % 2
            s = mod(f, 0.75)
    """,
    gens={"b": "divisor", "g": "divisor"},
)
case(
    """
    def pow_int(iv: Field[np.int32], s: Field[np.int8], jv: Field[np.int64], oi: Field[np.int32], oi64: Field[np.int64], o8: Field[np.int8], oj: Field[np.int64], one: Field[np.int16]):
        with computation(PARALLEL), interval(...):
            oi = iv ** 2
            oi64 = iv ** 3
            o8 = s ** 3
            oj = jv ** 5
            one = iv ** 0 + s ** 1
    """,
    gens={"iv": "wide", "jv": "wide"},
)
case(
    """
    def pow_float(f: Field[np.float32], d: Field[np.float64], of: Field[np.float32], od: Field[np.float64], oe: Field[np.float64], og: Field[np.float32]):
        with computation(PARALLEL), interval(...):
            of = f ** 2
            od = d ** 2 + d ** 0
            oe = d ** 1
            og = f ** 3
    """,
)

# -- comparisons, logic, ternaries (notes §4) --------------------------------------------------
case(
    """
    def compare(iv: Field[np.int32], f: Field[np.float32], d: Field[np.float64], m1: Field[bool], m2: Field[bool], m3: Field[bool], m4: Field[bool], m5: Field[bool], m6: Field[bool], m7: Field[bool]):
        with computation(PARALLEL), interval(...):
            m1 = iv < f
            m2 = d == d
            m3 = iv != 0
            m4 = f >= 1.5
            m5 = d <= f
            m6 = m1 > m3
            m7 = iv == f
    """,
    gens={"iv": "small", "f": "intlike", "d": "intlike"},
)
case(
    """
    def logic(a: Field[bool], b: Field[bool], x: Field[np.float64], o1: Field[bool], o2: Field[bool], o3: Field[bool], o4: Field[np.int32], o5: Field[np.float32]):
        with computation(PARALLEL), interval(...):
            o1 = a and b
            o2 = a or not b
            o3 = not (x > 0.0 and a) or x < -5.0
            o4 = a + 1
            o5 = b
    """
)
case(
    """
    def ternary(m: Field[bool], i8: Field[np.int8], i16: Field[np.int16], i32: Field[np.int32], f32: Field[np.float32], o1: Field[np.float32], o2: Field[np.int16], o3: Field[np.float64], o4: Field[np.int8]):
        with computation(PARALLEL), interval(...):
            o1 = i32 if m else f32
            o2 = i8 if i8 > 0 else i16
            o3 = f32 * 1.1 if m else i32
            o4 = i16 if not m else 300
    """,
    gens={"i16": "wide", "i32": "wide"},
)

# -- casts (notes §5) --------------------------------------------------------------------------
case(
    """
    def casts(d: Field[np.float64], f: Field[np.float32], iv: Field[np.int32], a: Field[np.int32], b: Field[np.int64], c: Field[np.float32], e: Field[np.float64], g: Field[np.int64], h: Field[np.float64], kv: Field[np.float64]):
        with computation(PARALLEL), interval(...):
            a = int32(d * 3.0)
            b = int64(f) + int32(iv * 1.5)
            c = float32(d) + float32(iv)
            e = float64(f) * 0.1
            g = int(d) - int(f)
            h = float(iv) / 3
            kv = float32(d) * 1.1
    """,
    gens={"d": "finite", "f": "finite", "iv": "wide"},
)
case(
    """
    def cast_specials(d: Field[np.float64], f: Field[np.float32], a: Field[np.int32], b: Field[np.int64], c: Field[np.int8], e: Field[np.int16], g: Field[np.float32], h: Field[bool]):
        with computation(PARALLEL), interval(...):
            a = int32(d)
            b = int64(f)
            c = d
            e = f
            g = d
            h = f
    """,
    gens={"d": "huge", "f": "huge"},
)
case(
    """
    def trunc_assign(d: Field[np.float64], f: Field[np.float32], o32: Field[np.int32], o8: Field[np.int8], o16: Field[np.int16], o64: Field[np.int64], ob: Field[bool]):
        with computation(PARALLEL), interval(...):
            o32 = d
            o8 = d * 40.0
            o16 = f + 0.5
            o64 = f * 1000.0
            ob = d
    """,
    gens={"d": "intlike", "f": "finite"},
)

# -- temporaries (notes §6, §7) ------------------------------------------------------------------
case(
    """
    def typed_temp(a: Field[np.float64], iv: Field[np.int32], o1: Field[np.float64], o2: Field[np.int64], o3: Field[np.float64], o4: Field[np.float32]):
        with computation(PARALLEL), interval(...):
            t32: np.float32 = a * 1.1
            o1 = t32
            ti: int = a * 2.5
            o2 = ti
            tf: float32 = iv
            o3 = tf / 3
            tg: float = iv
            o4 = tg * 0.1
    """,
    gens={"iv": "wide"},
)
case(
    """
    def untyped_temp(a: Field[np.float64], iv: Field[np.int32], f: Field[np.float32], o1: Field[np.float64], o2: Field[np.float64], o3: Field[np.float64]):
        with computation(PARALLEL), interval(...):
            u = iv
            u = a * 2.5
            o1 = u
            v = f * 2.0
            o2 = v
            w = f * 2
            o3 = w * 1.0
    """,
    gens={"a": "finite"},
)
case(
    """
    def temp2d_colsum(x: Field[np.float64], out: Field[np.float64], n: Field[np.int32]):
        with computation(FORWARD), interval(0, 1):
            tmp: Field[IJ, np.float64] = 0
            cnt: Field[IJ, np.int32] = 0
        with computation(FORWARD), interval(...):
            tmp = tmp + x
            cnt = cnt + 1
            out = tmp
            n = cnt
    """,
)
case(
    """
    def temp2d_backward(x: Field[np.float32], out: Field[np.float32], lev: Field[np.int16]):
        with computation(BACKWARD), interval(-1, None):
            acc: Field[IJ, np.float32] = 0.0
            best: Field[IJ, np.int16] = 0
        with computation(BACKWARD), interval(...):
            acc = acc * 0.5 + x
            best = best + 1 if x > 0.0 else best
            out = acc
            lev = best
    """,
)
case(
    """
    def ij_forward(x: Field[np.float64], iv: Field[np.int16], s: Field[IJ, np.float64], m: Field[IJ, np.int16], top: Field[IJ, np.float64]):
        with computation(FORWARD), interval(0, 1):
            s = 0
            m = iv
        with computation(FORWARD), interval(...):
            s = s + x
            m = max(m, iv)
        with computation(FORWARD), interval(-1, None):
            top = x * 2.0
    """,
    gens={"iv": "wide"},
)
case(
    """
    def ij_backward(x: Field[np.float64], b: Field[IJ, np.float64], c: Field[IJ, np.int32], d: Field[IJ, bool]):
        with computation(BACKWARD), interval(...):
            b = x
            c = c + 1
            d = x > 0.0 or d
    """,
)

# -- dtypes= symbols (notes §9) ------------------------------------------------------------------
case(
    """
    def dtypes_symbols(a: Field["DT"], iv: Field["IT"], out: Field["DT"], oi: Field[IJ, "IT"], *, s: "DT"):
        with computation(PARALLEL), interval(...):
            out = a * s + iv
        with computation(FORWARD), interval(-1, None):
            oi = iv * 3
    """,
    dtypes={"DT": np.float32, "IT": np.int16},
    scalars={"s": np.float32(0.3)},
)

# -- conditions evaluated once (notes §11) -------------------------------------------------------
case(
    """
    def if_backward(a: Field[np.float64], out: Field[np.float64]):
        with computation(BACKWARD), interval(...):
            if a > 0.0:
                a = -1.0
                out = 1.0
            else:
                a = 5.0
                out = 2.0
    """,
)
case(
    """
    def if_issue21(a: Field[np.float64], b: Field[np.int32]):
        with computation(BACKWARD), interval(...):
            if a > 0.0:
                b = -1
                a = -a
            else:
                b = 1
                a = a
    """,
)
case(
    """
    def if_once_parallel(a: Field[np.float64], b: Field[np.float64], c: Field[np.int32]):
        with computation(PARALLEL), interval(...):
            if a > 0.0:
                a = -1.0 - a
                b = 1.0
            else:
                a = a + 100.0
                c = 7
    """,
    gens={"a": "finite"},
)
case(
    """
    def if_elif(a: Field[np.float32], iv: Field[np.int8], b: Field[np.float32], c: Field[np.int8]):
        with computation(FORWARD), interval(...):
            if a > 0.0:
                a = a - 100.0
                c = 1
            elif iv < 0:
                iv = iv + 100
                c = 2
            else:
                b = a
                a = a + 1000.0
                c = 3
            if a < -50.0:
                c = c + 10
    """,
)
case(
    """
    def if_koffset(a: Field[np.float64], out: Field[np.float64]):
        with computation(BACKWARD):
            with interval(-1, None):
                out = a
            with interval(0, -1):
                if out[0, 0, 1] > 1.0:
                    out = out[0, 0, 1] - 1.0
                else:
                    out = a
    """,
    gens={"a": "positive"},
)

case(
    """
    def unary_plus_offsets(a: Field[np.float64], iv: Field[np.int32], out: Field[np.float64], o2: Field[np.float64]):
        with computation(PARALLEL), interval(...):
            out = a[+1, 0, +1] - a[0, -1, 0] + a[0, 0, -(+1)]
        with computation(FORWARD):
            with interval(0, 1):
                o2 = a
            with interval(1, None):
                if iv[0, 0, +1] > 0:
                    o2 = o2[0, 0, -1] + a[0, +1, 0] * iv
                else:
                    o2 = a[0, 0, +0]
    """,
    halo=(1, 1, 1),
    gens={"iv": "small"},
)

# -- math on the new types (notes §8) --------------------------------------------------------------
case(
    """
    def minmax_nan(a: Field[np.float64], b: Field[np.float64], f: Field[np.float32], iv: Field[np.int32], o1: Field[np.float64], o2: Field[np.float64], o3: Field[np.float32], o4: Field[np.int32], o5: Field[np.float64], o6: Field[np.float32]):
        with computation(PARALLEL), interval(...):
            o1 = min(a, b)
            o2 = max(a, b)
            o3 = max(f, iv)
            o4 = min(iv, 2)
            o5 = max(iv, 2.5)
            o6 = min(f, 1e30)
    """,
    gens={"b": "intlike", "f": "intlike", "iv": "small"},
)
case(
    """
    def int_funcs(i8: Field[np.int8], i16: Field[np.int16], i32: Field[np.int32], i64: Field[np.int64], o8: Field[np.int8], o16: Field[np.int16], o32: Field[np.int32], o64: Field[np.int64], f: Field[np.float64]):
        with computation(PARALLEL), interval(...):
            o8 = abs(i8)
            o16 = floor(i16) + ceil(i16)
            o32 = trunc(i32) - abs(i32)
            o64 = abs(i64)
            f = floor(i32) * 0.5
    """,
    gens={"i16": "wide", "i32": "wide", "i64": "wide"},
)
case(
    """
    def float_funcs_exact(d: Field[np.float64], f: Field[np.float32], o1: Field[np.float64], o2: Field[np.float32], o3: Field[np.float32], o4: Field[bool], o5: Field[bool]):
        with computation(PARALLEL), interval(...):
            o1 = floor(d) + ceil(d) * trunc(d)
            o2 = abs(f) - floor(f)
            o3 = sqrt(abs(f))
            o4 = isnan(d) or isinf(f)
            o5 = not isnan(f * 0.0)
    """,
)

case(
    """
    def const_ternary(a: Field[np.int8], b: Field[np.int8], o1: Field[np.float64], o2: Field[np.float64], o3: Field[np.int16]):
        from __externals__ import FLAG
        with computation(PARALLEL), interval(...):
            o1 = (a if 1 > 0 else 0.5) * b
            o2 = (a if FLAG else 0.5) * b
            o3 = (a if FLAG else b + 1000) * b
    """,
    externals={"FLAG": True},
)

_I = {np.dtype(t): np.iinfo(t) for t in (np.int8, np.int16, np.int32, np.int64)}


# ============================================================================ inputs
def values(dtype: np.dtype, shape, rng: np.random.Generator, gen: str = "default") -> np.ndarray:
    """Random values of `dtype` for an argument: integers around zero with the type's extremes
    mixed in ("wide"), divisors with zeros and -1, floats with zeros of both signs, NaN and
    infinities (not for "finite"), ..."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape))
    if dtype == np.bool_:
        return (rng.random(n) < 0.5).reshape(shape)
    if dtype.kind == "i":
        info = _I[dtype]
        lo, hi = int(info.min), int(info.max)
        if gen == "divisor":
            v = rng.choice(np.array([-3, -2, -1, 0, 1, 2, 3, 5, -7, lo, hi], dtype=dtype), size=n)
            v[:4] = [0, -1, 0, -1]
        elif gen == "small":
            v = rng.integers(-5, 6, size=n).astype(dtype)
        elif gen in ("wide", "dividend"):
            v = rng.integers(max(lo, -1000), min(hi, 1000) + 1, size=n).astype(dtype)
            far = rng.random(n) < 0.3
            v[far] = rng.integers(lo, hi, size=int(far.sum()), endpoint=True, dtype=dtype)
            v[:4] = [lo, lo, hi, -1]
        else:
            v = rng.integers(max(lo, -120), min(hi, 120) + 1, size=n).astype(dtype)
        return v.reshape(shape)
    # floats
    if gen == "positive":
        v = rng.uniform(0.0, 3.0, size=n)
    elif gen == "huge":
        v = rng.choice(np.array([np.nan, np.inf, -np.inf, 1e20, -1e20, 3e9 + 1, -3e9, 2.0**31, -(2.0**31), 70000.5, -70000.5, 300.7, -300.7, 127.9, -128.9, -0.0, 0.5, -0.5]), size=n)
        v = np.where(rng.random(n) < 0.3, rng.uniform(-1e12, 1e12, size=n), v)
    elif gen == "divisor":
        v = rng.choice(np.array([-2.5, -1.0, -0.0, 0.0, 0.5, 2.0, 3.25, np.inf, -np.inf, np.nan]), size=n)
        v = np.where(rng.random(n) < 0.5, rng.uniform(-5, 5, size=n), v)
    else:
        v = rng.uniform(-10.0, 10.0, size=n)
        if gen == "intlike":  # many exact integers and halves: equality and .5 rounding
            v = np.where(rng.random(n) < 0.6, np.round(v * 2.0) / 2.0, v)
        special = rng.random(n) < 0.12
        picks = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5] if gen == "finite" else [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e30, -1e30, 2.5]
        v[special] = rng.choice(np.array(picks), size=int(special.sum()))
    with np.errstate(all="ignore"):
        return v.astype(dtype).reshape(shape)


@dataclass
class Arg:
    name: str
    kind: str  # "IJK", "IJ", "K" or "scalar"
    dtype: np.dtype | None


def arg_specs(fn, dtypes: dict | None) -> list[Arg]:
    """The arguments of a GT4Py definition, from its annotations."""
    from gt4py.cartesian import gtscript as gts

    out = []
    for name, p in inspect.signature(fn).parameters.items():
        ann = p.annotation
        if isinstance(ann, gts._FieldDescriptor):
            dt = ann.dtype
            dt = np.dtype(dtypes[dt] if isinstance(dt, str) else dt)
            out.append(Arg(name, "".join(a.name for a in ann.axes), dt))
        else:
            out.append(Arg(name, "scalar", None))
    return out


def make_inputs(name: str, domain, seed_extra: int = 0) -> tuple[list[Arg], dict]:
    """Specs and C-ordered input arrays of case `name` over `domain` (deterministic)."""
    c = CASES[name]
    specs = arg_specs(getattr(defs_module("gt"), name), c.dtypes)
    rng = np.random.default_rng(zlib.crc32(f"{name} {domain} {seed_extra}".encode()))
    (ni, nj, nk), (hi, hj, hk) = domain, c.halo
    arrays = {}
    for a in specs:
        if a.kind == "scalar":
            continue
        shape = {"IJK": (ni + 2 * hi, nj + 2 * hj, nk + 2 * hk), "IJ": (ni + 2 * hi, nj + 2 * hj), "K": (nk + 2 * hk,)}[a.kind]
        arrays[a.name] = values(a.dtype, shape, rng, c.gens.get(a.name, "default"))
    return specs, arrays


# ============================================================================ the two engines
_DIR = scratch_dir("gridbuf_conformance_defs_")
_MODULES: dict = {}
_COUNTER = itertools.count()


def defs_module(lib: str):
    """All CASES in one module for `lib` ("gb" or "gt"): the same source, only the import differs."""
    if lib not in _MODULES:
        body = "\n\n".join(c.src for c in CASES.values())
        _MODULES[lib] = load_source(_DIR, f"_gb_conformance_defs_{lib}_{os.getpid()}", HEADERS[lib] + "\n\n" + body)
    return _MODULES[lib]


_GT_STENCILS: dict = {}
_GT_RESULTS: dict = {}
_GB_STENCILS: dict = {}


def gt_stencil(name: str):
    if name not in _GT_STENCILS:
        from gt4py.cartesian import gtscript as gts

        _GT_STENCILS[name] = gts.stencil(backend="numpy", definition=getattr(defs_module("gt"), name), dtypes=CASES[name].dtypes or {}, externals=CASES[name].externals or {})
    return _GT_STENCILS[name]


def gt_results(name: str, domain) -> tuple[dict, dict]:
    """Inputs and GT4Py's numpy-backend results of case `name` over `domain` (cached: every
    layout and mode compares with the same run)."""
    key = (name, tuple(domain))
    if key not in _GT_RESULTS:
        specs, arrays = make_inputs(name, domain)
        ref = gt4py_reference(gt_stencil(name), arrays, origin=CASES[name].halo, domain=domain, scalars=CASES[name].scalars)
        _GT_RESULTS[key] = (arrays, ref)
    return _GT_RESULTS[key]


def gb_stencil(name: str, mode: str = "jit"):
    """gridbuf's stencil for case `name`; GRIDBUF_GTSCRIPT_JIT, GRIDBUF_TIER2 and
    GRIDBUF_VECTOR_MATH are read when it is defined: mode "interpreter" (no machine code), "jit"
    (Cranelift's only), "tier2" (tier two compiled at definition, with tier one's math
    functions) or "tier2-vector" (with vector math)."""
    key = (name, mode)
    if key not in _GB_STENCILS:
        env = {
            "interpreter": {"GRIDBUF_GTSCRIPT_JIT": "0"},
            "jit": {"GRIDBUF_TIER2": "0"},
            "tier2": {"GRIDBUF_TIER2": "define", "GRIDBUF_VECTOR_MATH": "0"},
            "tier2-vector": {"GRIDBUF_TIER2": "define", "GRIDBUF_VECTOR_MATH": "1"},
        }[mode]
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            _GB_STENCILS[key] = gtscript.stencil(backend="numpy", definition=getattr(defs_module("gb"), name), dtypes=CASES[name].dtypes, externals=CASES[name].externals)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    return _GB_STENCILS[key]


def gb_run(name: str, inputs: dict, layout: str, domain, mode: str = "jit") -> dict:
    """Runs gridbuf's stencil on copies of `inputs` in `layout`; returns every array after."""
    kinds = {a.name: a.kind for a in arg_specs(getattr(defs_module("gt"), name), CASES[name].dtypes)} if HAVE_GT4PY else {}
    axes = {k: kinds.get(k, "K" if v.ndim == 1 else "IJK") for k, v in inputs.items()}
    return run_in_layout(gb_stencil(name, mode), inputs, layout, axes, origin=CASES[name].halo, domain=domain, scalars=CASES[name].scalars)


# ============================================================================ 1. conformance
@needs_gt4py
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", list(CASES))
def test_conformance(name, layout):
    """Each definition on the same inputs as GT4Py's numpy backend, on an odd domain with a
    halo where offsets are read, in every layout."""
    inputs, want = gt_results(name, DOMAIN)
    got = gb_run(name, inputs, layout, DOMAIN)
    assert_same(got, want, f"{name} on {layout}", inputs)


@needs_gt4py
@pytest.mark.parametrize("name", list(CASES))
def test_conformance_interpreter(name, monkeypatch):
    """The same with GRIDBUF_GTSCRIPT_JIT=0 (the tape interpreter), read when defined."""
    monkeypatch.setenv("GRIDBUF_GTSCRIPT_JIT", "0")
    _GB_STENCILS.pop((name, "interpreter"), None)
    inputs, want = gt_results(name, DOMAIN)
    got = gb_run(name, inputs, "gt:cpu_ifirst", DOMAIN, mode="interpreter")
    assert_same(got, want, f"{name}, interpreter", inputs)


@needs_gt4py
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", list(CASES))
def test_conformance_tier_two(name, layout):
    """Tier two (C from the same tapes, compiled at definition, with tier one's math functions)
    gives what tier one gives, bit for bit, on every layout; and it is in place (or the stencil
    has no row function to replace)."""
    inputs, _ = gt_results(name, DOMAIN)
    want = gb_run(name, inputs, layout, DOMAIN, mode="jit")
    got = gb_run(name, inputs, layout, DOMAIN, mode="tier2")
    state = gb_stencil(name, "tier2").tier_two
    assert state.startswith("ready: ") or state == "failed: no function to compile", state
    assert gb_stencil(name, "jit").tier_two == "idle"
    assert_same(got, want, f"{name} on {layout}, tier two against tier one", inputs)


@needs_gt4py
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", list(CASES))
def test_conformance_tier_two_vector_math(name, layout):
    """Tier two with vector math gives tier one's bits where the definition calls none of the
    vectorised functions, and elsewhere values within a few ulps of tier one's (of the
    field's largest value, as the differences of a function's last bits carry through the
    arithmetic that follows): the same NaNs, infinities and signs of zero."""
    inputs, _ = gt_results(name, DOMAIN)
    want = gb_run(name, inputs, layout, DOMAIN, mode="jit")
    got = gb_run(name, inputs, layout, DOMAIN, mode="tier2-vector")
    source = inspect.getsource(getattr(defs_module("gb"), name))
    vectorised = re.search(r"\b(exp|log|log10|sin|cos|tan|asin|acos|atan|sinh|cosh|tanh|asinh|acosh|atanh|cbrt|erfc?)\(|\*\*", source)
    if not vectorised:
        assert_same(got, want, f"{name} on {layout}, tier two with vector math against tier one", inputs)
        return
    for k, y in want.items():
        x = got[k]
        if y is None or y.dtype.kind != "f":
            assert_same({k: x}, {k: y}, f"{name} on {layout}: {k}", inputs)
            continue
        finite = np.isfinite(y)
        assert np.array_equal(np.isfinite(x), finite) and np.array_equal(np.isnan(x), np.isnan(y)), f"{name}: {k}'s non-finite values differ"
        scale = float(np.max(np.abs(y[finite]))) if finite.any() else 0.0
        tol = 16 * np.finfo(y.dtype).eps * scale
        err = np.abs(x[finite].astype(np.float64) - y[finite].astype(np.float64))
        assert (err <= tol).all(), f"{name} on {layout}: {k} differs from tier one by {err.max():g} (tolerance {tol:g})"


@needs_gt4py
@pytest.mark.parametrize("name", list(CASES))
def test_conformance_large_domain(name):
    """A domain large enough to be split in tiles over the threads (all cores by default)."""
    inputs, want = gt_results(name, BIG_DOMAIN)
    got = gb_run(name, inputs, "gt:cpu_kfirst", BIG_DOMAIN)
    assert_same(got, want, f"{name} on the large domain", inputs)


def _subprocess_main(out_path: str) -> None:  # pragma: no cover - runs in the child
    """In the child of test_two_threads_large_domain: gridbuf's results of every case."""
    res = {}
    for name in CASES:
        inputs = np.load(os.path.join(out_path, f"in_{name}.npz"))
        got = gb_run(name, dict(inputs), "gt:cpu_ifirst", BIG_DOMAIN)
        for k, v in got.items():
            res[f"{name}/{k}"] = v
    np.savez(os.path.join(out_path, "out.npz"), **res)


@needs_gt4py
def test_two_threads_large_domain(tmp_path):
    """Every case with GRIDBUF_NUM_THREADS=2 (read at import, hence a subprocess), on a domain
    large enough for several tiles."""
    for name in CASES:
        inputs, _ = gt_results(name, BIG_DOMAIN)
        np.savez(tmp_path / f"in_{name}.npz", **inputs)
    code = (
        "import importlib.util, sys\n"
        f"sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})\n"
        f"spec = importlib.util.spec_from_file_location('_conf_child', {__file__!r})\n"
        "m = importlib.util.module_from_spec(spec); sys.modules['_conf_child'] = m; spec.loader.exec_module(m)\n"
        "m.HAVE_GT4PY = False\n"
        f"m._subprocess_main({str(tmp_path)!r})\n"
    )
    env = dict(os.environ, GRIDBUF_NUM_THREADS="2", _GRIDBUF_CONFORMANCE_NO_GT4PY="1")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-4000:]
    out = np.load(tmp_path / "out.npz")
    failures = []
    for name in CASES:
        inputs, want = gt_results(name, BIG_DOMAIN)
        got = {k: out[f"{name}/{k}"] for k in want}
        try:
            assert_same(got, want, f"{name} on two threads", inputs)
        except AssertionError as e:
            failures.append(str(e))
    assert not failures, "\n".join(failures)


# ============================================================================ 2. regressions
def gb_define(src: str, name: str, **kw):
    """gridbuf's stencil `name` from `src` (GRIDBUF_GTSCRIPT_JIT as set now)."""
    mod = load_source(_DIR, f"_gb_conformance_{os.getpid()}_{next(_COUNTER)}", HEADERS["gb"] + textwrap.dedent(src))
    return gtscript.stencil(backend="numpy", definition=getattr(mod, name), **kw)


@pytest.fixture(params=["jit", "interpreter"])
def mode(request, monkeypatch):
    """Both evaluators: GRIDBUF_GTSCRIPT_JIT is read when a stencil is defined."""
    if request.param == "interpreter":
        monkeypatch.setenv("GRIDBUF_GTSCRIPT_JIT", "0")
    else:
        monkeypatch.delenv("GRIDBUF_GTSCRIPT_JIT", raising=False)
    return request.param


def columns(values, ni=3, nj=2, dtype=np.float64, layout="C"):
    """A field whose every column holds `values` (odd columns negated)."""
    col = np.asarray(values, dtype=dtype)
    a = np.empty((ni, nj, col.size), dtype=dtype)
    for i, j in itertools.product(range(ni), range(nj)):
        a[i, j] = col if (i + j) % 2 == 0 or dtype == np.bool_ else -col
    return in_layout(a, layout, "IJK")


@pytest.mark.parametrize("layout", ["C", "gt:cpu_kfirst"])
def test_issue21_backward_if_writes_its_condition(mode, layout):
    """Issue 21: `if a > 0.0: b = -1; a = -a` / `else: b = 1; a = a` in BACKWARD left b == 1
    everywhere; GT4Py gives -1 where a was positive (condition evaluated once per point)."""
    st_ = gb_define(
        """
        def bwd_if(a: Field[np.float64], b: Field[np.float64]):
            with computation(BACKWARD), interval(...):
                if a > 0.0:
                    b = -1
                    a = -a
                else:
                    b = 1
                    a = a
        """,
        "bwd_if",
    )
    a = columns([1.0, -1.0, 2.0, -3.0], layout=layout)
    a0 = np.array(np.asarray(a))
    b = in_layout(np.zeros(a0.shape), layout, "IJK")
    st_(a, b)
    np.testing.assert_array_equal(np.asarray(b), np.where(a0 > 0, -1.0, 1.0))
    np.testing.assert_array_equal(np.asarray(a), np.where(a0 > 0, -a0, a0))
    assert (np.asarray(b)[0, 0] == [-1, 1, -1, 1]).all()


@pytest.mark.parametrize("layout", ["C", "gt:cpu_ifirst"])
def test_issue21_2d_temporary_column_sum(mode, layout):
    """Issue 21: a typed 2-D temporary is one value per column carried across K. A column sum
    of ones gives 1, 2, 3, 4 (it gave 1, 1, 1, 1)."""
    st_ = gb_define(
        """
        def colsum(x: Field[np.float64], out: Field[np.float64]):
            with computation(FORWARD), interval(0, 1):
                tmp: Field[IJ, np.float64] = 0
            with computation(FORWARD), interval(...):
                tmp = tmp + x
                out = tmp
        """,
        "colsum",
    )
    x = in_layout(np.ones((3, 2, 4)), layout, "IJK")
    out = in_layout(np.zeros((3, 2, 4)), layout, "IJK")
    st_(x, out)
    np.testing.assert_array_equal(np.asarray(out), np.broadcast_to([1.0, 2.0, 3.0, 4.0], (3, 2, 4)))
    # Random values on an odd domain: the sum in K order, exactly.
    rng = np.random.default_rng(21)
    xv = rng.uniform(-1, 1, size=(13, 9, 7))
    x, out = in_layout(xv, layout, "IJK"), in_layout(np.zeros((13, 9, 7)), layout, "IJK")
    st_(x, out)
    np.testing.assert_array_equal(np.asarray(out), np.cumsum(xv, axis=2))


def test_issue21_2d_temporary_one_computation(mode):
    """GT4Py's other spelling: one FORWARD computation, interval(0, 1) sets the 2-D temporary,
    interval(1, None) accumulates: out at k = 0 is not written."""
    st_ = gb_define(
        """
        def colsum1(x: Field[np.float64], out: Field[np.float64]):
            with computation(FORWARD):
                with interval(0, 1):
                    tmp: Field[IJ, np.float64] = 0
                with interval(1, None):
                    tmp = tmp + x
                    out = tmp
        """,
        "colsum1",
    )
    x, out = np.ones((5, 3, 4)), np.full((5, 3, 4), -9.0)
    st_(x, out)
    np.testing.assert_array_equal(out, np.broadcast_to([-9.0, 1.0, 2.0, 3.0], (5, 3, 4)))


@pytest.mark.parametrize("order", ["PARALLEL", "FORWARD", "BACKWARD"])
def test_condition_evaluated_once(mode, order):
    """Each branch changes what the condition reads so that a second evaluation (for the else
    branch, or before each statement) would pick the other branch: the effects of both
    branches are checked."""
    st_ = gb_define(
        f"""
        def once(a: Field[np.float64], m: Field[bool], b: Field[np.float64], c: Field[np.float64], d: Field[np.int32], e: Field[np.int32]):
            with computation({order}), interval(...):
                if a > 0.0:
                    a = -1.0 - a
                    b = 1.0
                else:
                    a = a + 100.0
                    c = 7.0
                if m:
                    m = False
                    d = 1
                else:
                    m = True
                    e = 2
        """,
        "once",
    )
    rng = np.random.default_rng(3)
    shape = (13, 9, 7)
    a0 = rng.uniform(-10, 10, size=shape)
    a0[0, 0, :3] = [0.0, -0.0, 5.0]
    m0 = rng.random(shape) < 0.5
    a, m = a0.copy(), m0.copy()
    b, c = np.zeros(shape), np.zeros(shape)
    d, e = np.zeros(shape, np.int32), np.zeros(shape, np.int32)
    st_(a, m, b, c, d, e)
    pos = a0 > 0.0
    np.testing.assert_array_equal(a, np.where(pos, -1.0 - a0, a0 + 100.0))
    np.testing.assert_array_equal(b, np.where(pos, 1.0, 0.0))
    np.testing.assert_array_equal(c, np.where(pos, 0.0, 7.0))
    np.testing.assert_array_equal(m, ~m0)
    np.testing.assert_array_equal(d, np.where(m0, 1, 0))
    np.testing.assert_array_equal(e, np.where(m0, 0, 2))


def test_condition_evaluated_once_nested(mode):
    """A nested `if` reads what its enclosing branch wrote before it (GT4Py evaluates the inner
    condition where it stands), while the outer condition is not evaluated again."""
    st_ = gb_define(
        """
        def nested(a: Field[np.float64], b: Field[np.float64]):
            with computation(PARALLEL), interval(...):
                if a > 0.0:
                    a = a - 5.0
                    if a > 0.0:
                        b = 1.0
                    else:
                        b = 2.0
                        a = a + 100.0
                else:
                    b = 3.0
        """,
        "nested",
    )
    a0 = np.array([7.0, 3.0, -1.0, 0.0, 5.0, 5.5]).reshape(6, 1, 1)
    a, b = a0.copy(), np.zeros_like(a0)
    st_(a, b)
    np.testing.assert_array_equal(b.ravel(), [1.0, 2.0, 3.0, 3.0, 2.0, 1.0])
    np.testing.assert_array_equal(a.ravel(), [2.0, 98.0, -1.0, 0.0, 100.0, 0.5])


# ============================================================================ 3. random trees
RND_FIELDS = ("a", "b", "c")
RND_DTYPES = ["bool", "np.int8", "np.int16", "np.int32", "np.int64", "np.float32", "np.float64"]
RND_LITERALS = ["0", "1", "2", "7", "300", "100000", "0.5", "2.0", "1e10", "True", "False"]
RND_CASTS = ["int32", "int64", "float32", "float64", "int", "float"]

# gridbuf refuses what GT4Py computes with a stale ("naive") type (notes §2b): a true division
# of integers, a float function of an integer or a float32 power inside a larger expression.
# GT4Py silently truncates those or fails to build; gridbuf's refusal is deliberate.
# Also refused though GT4Py accepts them: `%`, min and max of two booleans (GT4Py's bool check
# covers the arithmetic operators only; NumPy then uses its int8 and bool loops). gridbuf
# refuses every non-comparison, non-logical binary operation on two booleans.
DELIBERATE_REFUSALS = ("true division of integers", "arithmetic on two booleans")


@st.composite
def typed_trees(draw, bools=(), want="num", depth=0):
    """Source text of a random expression over fields a, b, c (`bools` are the bool ones) and
    literals: mostly of the kind wanted ("num" or "bool"), sometimes not (GT4Py refuses most
    of those, and gridbuf must too)."""
    if draw(st.integers(0, 9)) == 0:
        want = "bool" if want == "num" else "num"
    sub = lambda w="num": draw(typed_trees(bools, w, depth + 1))  # noqa: E731
    if depth >= 3 or draw(st.integers(0, 4)) == 0:
        fields = [f for f in RND_FIELDS if (f in bools) == (want == "bool")]
        if fields and draw(st.integers(0, 3)):
            f = draw(st.sampled_from(fields))
            if draw(st.booleans()):
                return f
            return f"{f}[{draw(st.integers(-1, 1))}, {draw(st.integers(-1, 1))}, 0]"
        if want == "bool":
            return draw(st.sampled_from(["True", "False", "(a != a)"]))
        return draw(st.sampled_from(RND_LITERALS))
    if want == "bool":
        kind = draw(st.sampled_from(["cmp", "cmp", "logic", "not", "sel"]))
        if kind == "cmp":
            return f"({sub()} {draw(st.sampled_from(['<', '<=', '==', '!=', '>', '>=']))} {sub()})"
        if kind == "logic":
            return f"({sub('bool')} {draw(st.sampled_from(['and', 'or']))} {sub('bool')})"
        if kind == "not":
            return f"(not {sub('bool')})"
        return f"({sub('bool')} if {sub('bool')} else {sub('bool')})"
    kind = draw(st.sampled_from(["arith", "arith", "arith", "neg", "sel", "minmax", "abs", "cast"]))
    if kind == "arith":
        return f"({sub()} {draw(st.sampled_from(['+', '-', '*', '/', '%']))} {sub()})"
    if kind == "neg":
        return f"(-{sub()})"
    if kind == "sel":
        return f"({sub()} if {sub('bool')} else {sub()})"
    if kind == "minmax":
        return f"{draw(st.sampled_from(['min', 'max']))}({sub()}, {sub()})"
    if kind == "abs":
        return f"abs({sub()})"
    return f"{draw(st.sampled_from(RND_CASTS))}({sub()})"


@st.composite
def rnd_definitions(draw):
    """(dtypes of a, b, c, o1, o2; the expressions for o1 and o2)."""
    dts = draw(st.lists(st.sampled_from(RND_DTYPES), min_size=5, max_size=5))
    bools = tuple(f for f, d in zip(RND_FIELDS, dts) if d == "bool")
    return dts, draw(typed_trees(bools, "bool" if dts[3] == "bool" else "num")), draw(typed_trees(bools, "bool" if dts[4] == "bool" else "num"))


_RND_STATS: dict = {}  # outcome -> count, for tuning the generator


@needs_gt4py
@settings(max_examples=int(os.environ.get("GRIDBUF_CONFORMANCE_EXAMPLES", "40")), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much])
@given(d=rnd_definitions(), temp=st.booleans(), layout=st.sampled_from(LAYOUTS), seed=st.integers(0, 2**16))
def test_random_mixed_dtype_trees(d, temp, layout, seed):
    dts, e1, e2 = d
    outcome = check_random_tree(e1, e2, temp, dts, layout, seed)
    _RND_STATS[outcome] = _RND_STATS.get(outcome, 0) + 1


def check_random_tree(e1, e2, temp, dts, layout, seed) -> str:
    """Random expressions over fields of random dtypes, assigned to outputs of random dtypes
    (the second through an untyped temporary, whose type is its first value's): what GT4Py
    refuses gridbuf refuses at definition, and what both accept computes the same bits."""
    second = f"        t = {e2}\n        o2 = t\n" if temp else f"        o2 = {e2}\n"
    params = ", ".join(f"{n}: Field[{d}]" for n, d in zip(("a", "b", "c", "o1", "o2"), dts))
    body = f"def rnd({params}):\n    with computation(PARALLEL), interval(...):\n        o1 = {e1}\n" + second
    key = f"_gb_conformance_rnd_{os.getpid()}_{next(_COUNTER)}"
    gt_mod = load_source(_DIR, key + "_gt", HEADERS["gt"] + body)
    gb_mod = load_source(_DIR, key + "_gb", HEADERS["gb"] + body)
    from gt4py.cartesian import gtscript as gts

    try:
        with np.errstate(all="ignore"):
            gt_st = gts.stencil(backend="numpy", definition=gt_mod.rnd)
        gt_error = None
    except Exception as exc:  # noqa: BLE001 - GT4Py raises many kinds for a refused definition
        gt_error = exc
    if gt_error is not None:
        try:
            gtscript.stencil(backend="numpy", definition=gb_mod.rnd)
        except (GridbufValueError, GridbufTypeError):
            return "both refuse"
        pytest.fail(f"GT4Py refuses this definition ({type(gt_error).__name__}: {str(gt_error)[:300]}) but gridbuf accepts it:\n{body}")
    try:
        gb_st = gtscript.stencil(backend="numpy", definition=gb_mod.rnd)
    except GridbufValueError as exc:
        if any(w in str(exc) for w in DELIBERATE_REFUSALS):
            return "deliberate refusal"
        raise AssertionError(f"gridbuf refuses a definition GT4Py accepts:\n{body}\n{exc}") from None
    domain = (6, 5, 3)
    rng = np.random.default_rng(seed)
    inputs = {}
    for n, d in zip(("a", "b", "c", "o1", "o2"), dts):
        inputs[n] = values(np.dtype(eval(d, {"np": np})), (domain[0] + 2, domain[1] + 2, domain[2]), rng, "wide")  # noqa: S307
    outcome = "compared"
    try:
        ref = gt4py_reference(gt_st, inputs, origin=(1, 1, 0), domain=domain)
    except ValueError as exc:
        # GT4Py's numpy backend casts a number to a bool output with Python's `bool()` over the
        # whole array (`o2: Field[bool]`, `o2 = 7 if a >= 1 else 0`) and raises; its debug
        # backend, point by point, is the witness there.
        if "truth value of an array" not in str(exc):
            raise
        debug_st = gts.stencil(backend="debug", definition=gt_mod.rnd)
        ref = gt4py_reference(debug_st, inputs, origin=(1, 1, 0), domain=domain)
        outcome = "compared with GT4Py debug"
    got = run_in_layout(gb_st, inputs, layout, origin=(1, 1, 0), domain=domain)
    assert_same(got, ref, f"random tree on {layout}:\n{body}", inputs)
    return outcome


# ============================================================================ 4. bad input
def marked_line(src: str) -> int:
    """The line of `src` (as written to the file, after the header) marked `# BAD`."""
    lines = (HEADERS["gb"] + src).splitlines()
    return next(n for n, text in enumerate(lines, 1) if "# BAD" in text)


BAD_DEFINITIONS = {
    # Compile-time conditions: what the lowering evaluates now follows GT4Py's rules too (a
    # random tree drew the first; the lowering folded it with Python's `True + True == 2`).
    "arithmetic on two boolean literals in a constant condition": (
        "def bad(a: Field[np.int8], out: Field[bool]):\n    with computation(PARALLEL), interval(...):\n        out = 0 if (True < (True + True)) else True  # BAD\n",
        ["booleans"],
    ),
    "unary minus on a boolean literal in a constant condition": (
        "def bad(a: Field[np.int8], out: Field[bool]):\n    with computation(PARALLEL), interval(...):\n        out = 0 if (-True < 1) else True  # BAD\n",
        ["boolean"],
    ),
    "uint8 field": (
        "def bad(a: Field[np.uint8], out: Field[np.float64]):  # BAD\n    with computation(PARALLEL), interval(...):\n        out = a\n",
        ["uint8"],
    ),
    "float16 field": (
        "def bad(a: Field[np.float16], out: Field[np.float64]):  # BAD\n    with computation(PARALLEL), interval(...):\n        out = a\n",
        ["float16"],
    ),
    "uint32 scalar": (
        "def bad(a: Field[np.float64], out: Field[np.float64], *, s: np.uint32):  # BAD\n    with computation(PARALLEL), interval(...):\n        out = a * s\n",
        ["uint32", "s"],  # words: regular expressions matched between word boundaries
    ),
    "float16 temporary": (
        "def bad(a: Field[np.float64], out: Field[np.float64]):\n    with computation(PARALLEL), interval(...):\n        t: np.float16 = a  # BAD\n        out = t\n",
        ["float16", "t"],
    ),
    "not on a float field": (
        "def bad(a: Field[np.float64], out: Field[bool]):\n    with computation(PARALLEL), interval(...):\n        out = not a  # BAD\n",
        ["not", "float64"],
    ),
    "and on ints": (
        "def bad(a: Field[np.int32], b: Field[np.int32], out: Field[bool]):\n    with computation(PARALLEL), interval(...):\n        out = a and b  # BAD\n",
        ["and"],
    ),
    "or on a float and a bool": (
        "def bad(a: Field[np.float32], m: Field[bool], out: Field[bool]):\n    with computation(PARALLEL), interval(...):\n        out = m or a  # BAD\n",
        ["or"],
    ),
    "if on a float field": (
        "def bad(a: Field[np.float64], out: Field[np.float64]):\n    with computation(PARALLEL), interval(...):\n        if a:  # BAD\n            out = 1.0\n",
        ["condition", "float64"],
    ),
    "if on an int literal": (
        "def bad(a: Field[np.float64], out: Field[np.float64]):\n    with computation(PARALLEL), interval(...):\n        if 1:  # BAD\n            out = a\n",
        ["condition"],
    ),
    "ternary on an int field": (
        "def bad(a: Field[np.int32], out: Field[np.float64]):\n    with computation(PARALLEL), interval(...):\n        out = 1.0 if a else 2.0  # BAD\n",
        ["condition", "int32"],
    ),
    "ternary on a float literal": (
        "def bad(a: Field[np.float64], out: Field[np.float64]):\n    with computation(PARALLEL), interval(...):\n        out = a if 0.5 else -a  # BAD\n",
        ["condition"],
    ),
    "int ** field exponent": (
        "def bad(a: Field[np.int32], b: Field[np.int32], out: Field[np.int32]):\n    with computation(PARALLEL), interval(...):\n        out = a ** b  # BAD\n",
        ["power", "exponent"],
    ),
    "int ** negative literal": (
        "def bad(a: Field[np.int32], out: Field[np.int32]):\n    with computation(PARALLEL), interval(...):\n        out = a ** -2  # BAD\n",
        ["power", "exponent"],
    ),
    "write a K field in PARALLEL": (
        "def bad(a: Field[np.float64], kf: Field[K, np.float64]):\n    with computation(PARALLEL), interval(...):\n        kf = a  # BAD\n",
        ["kf"],
    ),
    "write a K field in FORWARD": (
        "def bad(a: Field[np.float64], kf: Field[K, np.float64]):\n    with computation(FORWARD), interval(...):\n        kf = a  # BAD\n",
        ["kf"],
    ),
    "write an IJ field in PARALLEL": (
        "def bad(a: Field[np.float64], s: Field[IJ, np.float64]):\n    with computation(PARALLEL), interval(...):\n        s = a  # BAD\n",
        ["s", "PARALLEL"],
    ),
    "2-D temporary in PARALLEL": (
        "def bad(a: Field[np.float64], out: Field[np.float64]):\n    with computation(PARALLEL), interval(...):\n        t: Field[IJ, np.float64] = a  # BAD\n        out = t\n",
        ["t", "PARALLEL"],
    ),
    "bool + bool": (
        "def bad(a: Field[bool], b: Field[bool], out: Field[np.int32]):\n    with computation(PARALLEL), interval(...):\n        out = a + b  # BAD\n",
        ["booleans?"],
    ),
    "unary minus on a bool": (
        "def bad(a: Field[bool], out: Field[np.int32]):\n    with computation(PARALLEL), interval(...):\n        out = -a  # BAD\n",
        ["booleans?"],
    ),
    "unary minus on a bool literal": (
        "def bad(a: Field[np.int32], out: Field[np.int32]):\n    with computation(PARALLEL), interval(...):\n        out = a + (-True)  # BAD\n",
        ["booleans?"],
    ),
    "% of two booleans into a bool field": (
        "def bad(b: Field[bool], out: Field[bool]):\n    with computation(PARALLEL), interval(...):\n        out = b % True  # BAD\n",
        ["booleans", "int8"],
    ),
    "% of two booleans into a bool field under if": (
        "def bad(b: Field[bool], out: Field[bool]):\n    with computation(PARALLEL), interval(...):\n        if b:\n            out = b % b  # BAD\n",
        ["booleans", "int8"],
    ),
    "unary minus on % of two booleans (GT4Py types it bool)": (
        "def bad(a: Field[np.float64], out: Field[np.float64]):\n    with computation(PARALLEL), interval(...):\n        out = -(True % (a != a))  # BAD\n",
        ["booleans?"],
    ),
    "unary minus on min of two booleans under a select": (
        "def bad(a: Field[np.float64], out: Field[np.float64]):\n    with computation(PARALLEL), interval(...):\n        out = -(min(a > 0, a < 1) if a > 2 else (a > 3) % (a < 4))  # BAD\n",
        ["booleans?"],
    ),
    "unary minus on abs of a bool (GT4Py types it bool)": (
        "def bad(b: Field[bool], out: Field[np.int32]):\n    with computation(PARALLEL), interval(...):\n        out = -abs(b)  # BAD\n",
        ["booleans?"],
    ),
    "unary minus on abs of a bool literal": (
        "def bad(b: Field[bool], out: Field[bool]):\n    with computation(PARALLEL), interval(...):\n        out = True + (-abs(True))  # BAD\n",
        ["booleans?"],
    ),
    "unary minus on floor of a bool": (
        "def bad(b: Field[bool], out: Field[np.float64]):\n    with computation(PARALLEL), interval(...):\n        out = -floor(b)  # BAD\n",
        ["booleans?"],
    ),
    "unary minus on isnan": (
        "def bad(a: Field[np.float64], out: Field[np.float64]):\n    with computation(PARALLEL), interval(...):\n        out = -isnan(a)  # BAD\n",
        ["booleans?"],
    ),
    "int / int into an int field": (
        "def bad(a: Field[np.int32], b: Field[np.int32], out: Field[np.int32]):\n    with computation(PARALLEL), interval(...):\n        out = a / b  # BAD\n",
        ["division"],
    ),
    "int / int inside an expression": (
        "def bad(a: Field[np.int32], b: Field[np.int32], out: Field[np.float64]):\n    with computation(PARALLEL), interval(...):\n        out = a / b * 2  # BAD\n",
        ["division"],
    ),
    "int8() is no gtscript cast": (
        "def bad(a: Field[np.float64], out: Field[np.int8]):\n    with computation(PARALLEL), interval(...):\n        out = int8(a)  # BAD\n",
        ["int8"],
    ),
    "unknown dtypes symbol": (
        'def bad(a: Field["DT"], out: Field["DT"]):  # BAD\n    with computation(PARALLEL), interval(...):\n        out = a\n',
        ["DT"],
    ),
}


# Definitions GT4Py builds though gridbuf refuses them, deliberately: an integer power of a field
# exponent fails in NumPy when called if an exponent is negative (`int ** -2` fails for every
# call), `a / b * 2` on ints is silently truncated by GT4Py (notes §2b), and a missing dtypes
# symbol is an error only when building (not defining) in GT4Py too.
GT4PY_BUILDS = ("int ** field exponent", "int ** negative literal", "int / int inside an expression", "unknown dtypes symbol")


@pytest.mark.parametrize("what", list(BAD_DEFINITIONS))
def test_bad_definitions_rejected(what):
    """Refused when the stencil is defined, naming the construct and the line."""
    src, words = BAD_DEFINITIONS[what]
    mod = load_source(_DIR, f"_gb_conformance_bad_{os.getpid()}_{next(_COUNTER)}", HEADERS["gb"] + src)
    with pytest.raises((GridbufValueError, GridbufTypeError)) as err:
        gtscript.stencil(backend="numpy", definition=mod.bad)
    msg = str(err.value)
    for w in words:
        assert re.search(rf"\b{w}\b", msg), f"{what}: {w!r} not in {msg!r}"
    assert f"line {marked_line(src)}" in msg, f"{what}: line {marked_line(src)} not in {msg!r}"


@needs_gt4py
@pytest.mark.parametrize("what", [w for w in BAD_DEFINITIONS if w not in GT4PY_BUILDS])
def test_bad_definitions_gt4py_refuses_too(what):
    """The premise of test_bad_definitions_rejected: GT4Py's numpy backend refuses them."""
    src, _ = BAD_DEFINITIONS[what]
    with pytest.raises(Exception):  # noqa: B017, PT011 - GT4Py raises ValueError, TypeError, GTScriptSyntaxError, ...
        mod = load_source(_DIR, f"_gb_conformance_badgt_{os.getpid()}_{next(_COUNTER)}", HEADERS["gt"] + src)
        from gt4py.cartesian import gtscript as gts

        gts.stencil(backend="numpy", definition=mod.bad)


RUNTIME_SRC = """
def rt(a: Field[np.int32], f: Field[np.float32], m: Field[bool], out: Field[np.int32], fo: Field[np.float32], *, s: np.int32, t: np.int8):
    with computation(PARALLEL), interval(...):
        out = a * s + t
        fo = f if m else -f
"""


@pytest.mark.parametrize("layout", ["C", "gt:cpu_ifirst"])
def test_runtime_errors_write_nothing(layout):
    """Wrong dtypes and scalar values are refused when called, and nothing is written."""
    st_ = gb_define(RUNTIME_SRC, "rt")
    shape = (5, 4, 3)
    rng = np.random.default_rng(9)
    good = {
        "a": values(np.dtype(np.int32), shape, rng),
        "f": values(np.dtype(np.float32), shape, rng, "finite"),
        "m": values(np.dtype(bool), shape, rng),
        "out": np.full(shape, -77, np.int32),
        "fo": np.full(shape, -7.5, np.float32),
    }
    scalars = {"s": np.int32(3), "t": np.int8(-2)}

    def fresh(**over):
        args = {k: in_layout(v, layout, "IJK") for k, v in good.items()}
        args.update({k: in_layout(v, layout, "IJK") if isinstance(v, np.ndarray) else v for k, v in over.items()})
        return args

    bad_fields = {
        "a": good["a"].astype(np.int64),
        "f": good["f"].astype(np.float64),
        "m": good["m"].astype(np.int8),
        "out": good["out"].astype(np.float32),
        "fo": good["fo"].astype(np.int32),
    }
    for name, arr in bad_fields.items():
        args = fresh(**{name: arr})
        before = {k: np.array(np.asarray(v)) for k, v in args.items()}
        with pytest.raises(GridbufError):
            st_(**args, **scalars)
        for k, v in args.items():
            np.testing.assert_array_equal(np.asarray(v), before[k], err_msg=f"{k} written after a call with {name} of dtype {arr.dtype}")
    for name, value in [("s", 2.5), ("s", np.float64(0.5)), ("s", float("nan")), ("s", "3"), ("t", 1.5), ("s", np.ones(2, np.int32))]:
        args = fresh()
        with pytest.raises((GridbufTypeError, GridbufValueError)):
            st_(**args, **dict(scalars, **{name: value}))
        np.testing.assert_array_equal(np.asarray(args["out"]), good["out"], err_msg=f"out written after {name}={value!r}")
        np.testing.assert_array_equal(np.asarray(args["fo"]), good["fo"], err_msg=f"fo written after {name}={value!r}")
    # The same call with good arguments writes.
    args = fresh()
    st_(**args, **scalars)
    np.testing.assert_array_equal(np.asarray(args["out"]), (good["a"].astype(np.int64) * 3 - 2).astype(np.int32))
    np.testing.assert_array_equal(np.asarray(args["fo"]), np.where(good["m"], good["f"], -good["f"]))


def test_int_scalar_out_of_range_refused():
    """300 is no int8 (GT4Py refuses any value whose type is not the declared one)."""
    st_ = gb_define(RUNTIME_SRC, "rt")
    shape = (3, 3, 2)
    out = np.full(shape, -77, np.int32)
    with pytest.raises((GridbufTypeError, GridbufValueError, GridbufError)):
        st_(np.ones(shape, np.int32), np.ones(shape, np.float32), np.ones(shape, bool), out, np.zeros(shape, np.float32), s=np.int32(1), t=300)
    assert (out == -77).all()


def test_numpy_type_casts_match_gtscript_casts():
    """`np.float32(x)`, `np.int32(x)`, ... (which GT4Py 1.1.12 refuses in a definition) convert
    as gtscript's `float32(x)`, `int32(x)`: NumPy's C conversion."""
    st_ = gb_define(
        """
        def npcast(d: Field[np.float64], o1: Field[np.float32], o2: Field[np.float32], o3: Field[np.int64], o4: Field[np.int64], o5: Field[np.float64], o6: Field[np.float64]):
            with computation(PARALLEL), interval(...):
                o1 = np.float32(d) * 1.1
                o2 = float32(d) * 1.1
                o3 = np.int32(d * 1000.0) * 3
                o4 = int32(d * 1000.0) * 3
                o5 = np.float64(np.float32(d))
                o6 = float64(float32(d))
        """,
        "npcast",
    )
    rng = np.random.default_rng(11)
    d = values(np.dtype(np.float64), (7, 5, 3), rng, "huge")
    outs = [np.zeros((7, 5, 3), t) for t in (np.float32, np.float32, np.int64, np.int64, np.float64, np.float64)]
    st_(d, *outs)
    for x, y in zip(outs[::2], outs[1::2]):
        assert_same({"x": x}, {"x": y}, "np.T(x) against T(x)", {"d": d})
    with np.errstate(all="ignore"):
        assert_same({"o1": outs[0]}, {"o1": (d.astype(np.float32).astype(np.float64) * 1.1).astype(np.float32)}, "np.float32(d) * 1.1", {"d": d})
        assert_same({"o3": outs[2]}, {"o3": (d * 1000.0).astype(np.int32).astype(np.int64) * 3}, "np.int32(d * 1000.0) * 3", {"d": d})
