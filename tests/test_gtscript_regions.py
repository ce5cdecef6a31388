"""gridbuf.gtscript's horizontal regions and while loops (issue 22), against GT4Py 1.1.12's
numpy backend.

Conformance definitions (run by both engines on the same random inputs, every array argument
compared bit for bit afterwards) in every layout and on every schedule the engine has: slabs (no
temporaries), sweeps (PARALLEL with temporaries), blocks (``GRIDBUF_GTSCRIPT_SWEEP=0``, FORWARD
sections, loops), column buffers (FORWARD on gt:cpu_kfirst), and the tape interpreter. Then bad
input: a region that reads beyond the halo, a domain too small for a region's extents, and loops
refused at definition; nothing is written.

GT4Py's behaviour relied on (checked with gt4py 1.1.12): ``I[0] + n`` counts from the compute
domain's start, ``I[-1] + n`` from its end (the last point), a single position ``p`` is
``p : p + 1``; a statement in a region runs where the region meets the extent its target is
computed over (a field: the compute domain; a temporary: as far as its readers need it, which a
region may put in the halo); ``horizontal(r1, r2)`` runs the body once per region, so twice where
they overlap; a region may not read at a horizontal offset what was written outside regions
before it. ``while cond`` runs its body under ``cond`` until no point has it (the numpy backend
re-tests ``cond`` before every statement, the compiled backends once per pass: gridbuf takes only
loops where the two agree). A loop over variable K offsets (a vertical remap) reads, in the
values its masks throw away, levels beyond the column: GT4Py's numpy backend clips them, gridbuf
reads the point's own level there; neither is an error.
"""

from __future__ import annotations

import itertools
import os
import textwrap
import zlib
from dataclasses import dataclass, field

import numpy as np
import pytest

import gridbuf as gb
from gridbuf import gtscript
from _gtscript_oracle import assert_same, gt4py_reference, load_source, run_in_layout
from gridbuf.errors import GridbufValueError
from _scratch import scratch_dir

os.environ.setdefault("GT_CACHE_ROOT", scratch_dir("gridbuf_test_regions_"))
try:
    import gt4py.cartesian.gtscript as gt_gtscript

    HAVE_GT4PY = True
except ImportError:  # pragma: no cover - gt4py is a dev requirement
    gt_gtscript = None
    HAVE_GT4PY = False

needs_gt4py = pytest.mark.skipif(not HAVE_GT4PY, reason="gt4py is not installed")

LAYOUTS = ["C", "F", "gt:cpu_ifirst", "gt:cpu_kfirst"]
DOMAIN = (9, 7, 4)
HEADERS = {
    "gb": "import numpy as np\nfrom gridbuf import gtscript\nfrom gridbuf.gtscript import *\n",
    "gt": "import numpy as np\nfrom gt4py.cartesian import gtscript\nfrom gt4py.cartesian.gtscript import *\n",
}

SOURCE = textwrap.dedent(
    '''
    F = Field[np.float64]


    def edges(a: F, out: F):
        with computation(PARALLEL), interval(...):
            out = a
            with horizontal(region[I[0], :]):
                out = a[-1, 0, 0] + 1.0
            with horizontal(region[I[-1], :]):
                out = a[1, 0, 0] + 2.0
            with horizontal(region[:, J[0]]):
                out = out + a[0, -1, 0]
            with horizontal(region[:, J[-1]]):
                out = out * a[0, 1, 0]


    def corners(a: F, out: F):
        from __externals__ import i_start, i_end, j_start, j_end
        with computation(PARALLEL), interval(...):
            out = 0.0
            with horizontal(region[i_start, j_start], region[i_end, j_end]):
                out = a[-1, -1, 0] + a[1, 1, 0]
            with horizontal(region[i_start, j_end], region[i_end, j_start]):
                out = out + 10.0 * a[-1, 1, 0]
            with horizontal(region[i_start + 1 : i_end, j_start : j_start + 2]):
                out = out - 1.0


    def overlapping(a: F, out: F):
        with computation(PARALLEL), interval(...):
            out = a
            with horizontal(region[I[0] : I[0] + 3, :], region[I[0] + 1 : I[0] + 4, J[0] + 1 :]):
                out = out + 10.0


    def wide(a: F, out: F):
        with computation(PARALLEL), interval(...):
            t = a * 2.0
            with horizontal(region[I[0] - 1, :], region[I[-1] + 1, :]):
                t = a + 100.0
            with horizontal(region[I[0] - 3 : I[0] + 3, J[-1] - 1 : J[-1] + 4]):
                t = t + 1.0
            out = t[-1, 0, 0] + t[1, 0, 0] + t[0, 1, 0]


    def with_temporaries(a: F, b: F, out: F):
        with computation(PARALLEL), interval(...):
            lap = a[1, 0, 0] + a[-1, 0, 0] - 2.0 * a
            with horizontal(region[I[0], :]):
                lap = b[-1, 0, 0] - b
            flx = lap[1, 0, 0] - lap
            with horizontal(region[:, J[-1]]):
                flx = 0.0
            out = flx - flx[-1, 0, 0]


    @gtscript.function
    def edge_fix(x, y):
        z = x
        with horizontal(region[I[0], :], region[:, J[-1]]):
            z = y[1, 0, 0] * 0.5
        return z


    def in_function(a: F, b: F, out: F):
        with computation(PARALLEL), interval(...):
            out = edge_fix(a, b)


    @gtscript.function
    def edge_values(bl, q, al):
        # PyFV3's yppm.bl_br_edges: locals first assigned in edge regions, read in a later
        # region covering them; one (dm_left) read where no region assigned it, into a value
        # assigned again at once (dead).
        with horizontal(region[:, J[0] - 1]):
            dm_left = q[0, -1, 0] - q
            yt_bl = 0.5 * dm_left + q
        with horizontal(region[:, J[0]]):
            yt_bl = 0.25 * dm_left + q
            yt_bl = q[0, 1, 0] * 2.0
        with horizontal(region[:, J[-1]]):
            yt_bl = al[0, 1, 0] - q
        with horizontal(region[:, J[0] - 1 : J[0] + 1], region[:, J[-1]]):
            bl = yt_bl - q
        return bl


    def function_region_locals(a: F, b: F, out: F):
        with computation(PARALLEL), interval(...):
            out = edge_values(b, a, b)


    @gtscript.function
    def next_row_at_edge(q, b):
        # PyFV3's `al_ip1 = al[0, 1, 0]` (yppm.bl_br_edges): a local holding an offset read of
        # a value computed under an `if` (its mask is written outside regions), then read in an
        # edge region whose offset reaches past the domain.
        v = q
        if q > 0.0:
            v = 2.0 * q
        v_jp1 = v[0, 1, 0]
        r = b
        with horizontal(region[:, J[-1]], region[I[0], J[0]]):
            r = v_jp1 + b
        return r


    def mask_read_at_offset_in_region(a: F, b: F, out: F):
        with computation(PARALLEL), interval(...):
            out = next_row_at_edge(a, b)


    def forward_regions(a: F, out: F):
        with computation(FORWARD):
            with interval(0, 1):
                out = a
            with interval(1, None):
                out = out[0, 0, -1] * 0.5 + a
                with horizontal(region[I[0], :], region[:, J[-1]]):
                    out = out[0, 0, -1] - a
        with computation(BACKWARD), interval(0, -1):
            with horizontal(region[I[-1], J[0] : J[0] + 2]):
                out = out[0, 0, 1] + 1.0


    @gtscript.function
    def count_down(x):
        y = x
        while y > 0.0:
            y = y - 1.0
        return y


    def loops(a: F, b: F, out: F, cnt: F):
        with computation(PARALLEL), interval(...):
            out = count_down(a)
            cnt = 0.0
            k = 0.0
            j = 0.0
            if a > 0.0:
                while k < b:
                    j = 0.0
                    while j < k:
                        cnt = cnt + 1.0
                        j = j + 1.0
                    k = k + 1.0


    @gtscript.function
    def staged(x):
        z = x
        acc = 0.0
        c = 0.0
        while c < 3.0:
            nxt = z * 0.5
            z = z + 1.0
            acc = acc + nxt
            c = c + 1.0
        return acc + z


    def function_locals_in_loops(a: F, out: F):
        with computation(PARALLEL), interval(...):
            out = staged(a)


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


    def remap(pe1: F, pe2: F, q1: F, q2: F):
        with computation(FORWARD):
            with interval(0, 1):
                q2, off = remap_layer(pe1, pe2, q1, 0)
            with interval(1, -1):
                q2, off = remap_layer(pe1, pe2, q1, off[0, 0, -1] - 1)


    @gtscript.function
    def level_walk(e, q, start):
        # Locals in a loop that read at run-time K levels: one set in both branches of an `if`,
        # one read again after the level it was read at moved.
        o = start
        acc = 0.0
        n = 0
        while n < 2:
            v = e[0, 0, o]
            if v > 0.5:
                w = q[0, 0, o] * 2.0
            else:
                w = q[0, 0, o + 1] - v
            acc = acc + v * w
            o = o + 1
            acc = acc - v * 0.25 + w
            n = n + 1
        return acc


    def kread_locals_in_loop(e: F, q: F, out: F):
        with computation(FORWARD), interval(0, -2):
            out = level_walk(e, q, 0)


    def masked_locals_in_loop(a: F, b: F, out: F):
        # PyFV3's map_single.lagrangian_contributions: temporaries first assigned in one branch
        # of an `if`, read only there, in a FORWARD computation with a loop (one point
        # function per column on a layout with unit stride along K).
        with computation(FORWARD):
            with interval(0, 1):
                out = a
            with interval(1, None):
                if a > 0.0:
                    x = a * 2.0
                    out = x + out[0, 0, -1] * 0.5
                else:
                    y = b - 1.0
                    n = 0.0
                    while y > a:
                        n = n + 1.0
                        y = y - 1.0
                    out = y + n


    @gtscript.function
    def limited_slope(q):
        # PyFV3's yppm.dm_jord8plus: a value over a neighbourhood, larger than a temporary's
        # cost, that its callers read at three J offsets and in several statements.
        yt = 0.25 * (q[0, 1, 0] - q[0, -1, 0])
        dqr = max(max(q, q[0, -1, 0]), q[0, 1, 0]) - q
        dql = q - min(min(q, q[0, -1, 0]), q[0, 1, 0])
        s = min(min(abs(yt), dqr), dql)
        if yt < 0.0:
            s = -s
        return s


    @gtscript.function
    def face_value(q, dm):
        return 0.5 * (q[0, -1, 0] + q) + 1.0 / 3.0 * (dm[0, -1, 0] - dm)


    @gtscript.function
    def ppm_edges(q):
        dm = limited_slope(q)
        al = face_value(q, dm)
        bl = al - q
        br = al[0, 1, 0] - q
        with horizontal(region[:, J[0]]):
            bl = dm * 0.5
        return bl + br * dm


    @gtscript.function
    def smoothed(w):
        # A local (not a function's value) over a neighbourhood, read at I offsets.
        g = 0.25 * (w[1, 0, 0] - w[-1, 0, 0]) + 0.5 * (w[0, 1, 0] - w[0, -1, 0]) + max(w[1, 0, 0], w[-1, 0, 0]) * min(w[0, 1, 0], w[0, -1, 0])
        return g[-1, 0, 0] + 2.0 * g + g[1, 0, 0]


    def neighbourhood_values(q: F, w: F, out: F, out2: F):
        with computation(PARALLEL), interval(...):
            out = ppm_edges(q)
            out2 = smoothed(w)
            with horizontal(region[I[0], :]):
                out2 = limited_slope(w) * 2.0 - w


    def backward_loop(a: F, out: F, cnt: F):
        with computation(BACKWARD):
            with interval(-1, None):
                out = a
            with interval(0, -1):
                x = out[0, 0, 1] + 0.5
                n = 0.0
                while x > a:
                    n = n + 1.0
                    x = x - 1.0
                if a > 0.0:
                    cnt = n
                out = x


    def forward_loop(a: F, out: F):
        with computation(FORWARD):
            with interval(0, 1):
                out = a
            with interval(1, None):
                out = out[0, 0, -1]
                while out < a:
                    out = out + 1.5
    '''
)

AXES = {"i_start": "I[0]", "i_end": "I[-1]", "j_start": "J[0]", "j_end": "J[-1]"}


@dataclass
class Case:
    """A definition (`fn`, in SOURCE) run with a halo of `halo` around the domain; externals given
    as source text, evaluated in each library's namespace (axis positions are each library's
    own); `finite` inputs for loops (an infinite value would never end them, in GT4Py too)."""

    fn: str
    halo: tuple[int, int, int] = (1, 1, 0)
    externals: dict = field(default_factory=dict)
    finite: bool = False
    # Arguments that are pressure edges: from 0 to 1 along K, strictly increasing.
    edges: tuple[str, ...] = ()


CASES: dict[str, Case] = {
    "edges": Case("edges"),
    "corners": Case("corners", externals=AXES),
    "overlapping": Case("overlapping", halo=(0, 0, 0)),
    "wide": Case("wide", halo=(2, 1, 0)),
    "with_temporaries": Case("with_temporaries", halo=(2, 1, 0)),
    "in_function": Case("in_function"),
    "function_region_locals": Case("function_region_locals", halo=(0, 2, 0)),
    "mask_read_at_offset_in_region": Case("mask_read_at_offset_in_region", halo=(0, 1, 0)),
    "forward_regions": Case("forward_regions", halo=(0, 0, 0)),
    "loops": Case("loops", halo=(0, 0, 0), finite=True),
    "forward_loop": Case("forward_loop", halo=(0, 0, 0), finite=True),
    "backward_loop": Case("backward_loop", halo=(0, 0, 0), finite=True),
    "function_locals_in_loops": Case("function_locals_in_loops", halo=(0, 0, 0), finite=True),
    "remap": Case("remap", halo=(0, 0, 0), finite=True, edges=("pe1", "pe2")),
    "masked_locals_in_loop": Case("masked_locals_in_loop", halo=(0, 0, 0), finite=True),
    "kread_locals_in_loop": Case("kread_locals_in_loop", halo=(0, 0, 0), finite=True),
    "neighbourhood_values": Case("neighbourhood_values", halo=(2, 2, 0)),
}

# Every schedule: slabs need no temporaries; sweeps PARALLEL sections whose temporaries live in
# them; blocks the rest, or everything with GRIDBUF_GTSCRIPT_SWEEP=0.
SCHEDULES = {"default": {}, "blocks": {"GRIDBUF_GTSCRIPT_SWEEP": "0"}, "interpreter": {"GRIDBUF_GTSCRIPT_JIT": "0"}}

_DIR = scratch_dir("gridbuf_regions_defs_")
_MODULES: dict = {}


def defs(lib: str):
    """The definitions, imported from a file (both frontends read the source)."""
    if lib not in _MODULES:
        _MODULES[lib] = load_source(_DIR, f"_gb_regions_defs_{lib}_{os.getpid()}", HEADERS[lib] + SOURCE)
    return _MODULES[lib]


def externals(name: str, lib: str) -> dict:
    ns = vars(defs(lib))
    return {k: eval(v, ns) for k, v in CASES[name].externals.items()}  # noqa: S307 - our own text


def arg_names(name: str) -> list[str]:
    import inspect

    return list(inspect.signature(getattr(defs("gt"), CASES[name].fn)).parameters)


def make_inputs(name: str) -> dict[str, np.ndarray]:
    c = CASES[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    shape = tuple(n + 2 * h for n, h in zip(DOMAIN, c.halo))
    out = {}
    for n in arg_names(name):
        v = rng.uniform(-3.0, 3.0, size=shape)
        if n in c.edges:
            e = np.cumsum(rng.uniform(0.2, 1.0, size=shape), axis=2) - 0.5
            v = (e - e[:, :, :1]) / (e[:, :, -1:] - e[:, :, :1])
        if not c.finite:
            special = rng.random(shape) < 0.05
            v[special] = rng.choice(np.array([0.0, -0.0, 1.0, np.nan, np.inf]), size=int(special.sum()))
        out[n] = v
    return out


_GT: dict = {}
_GB: dict = {}


def gt_results(name: str):
    """Inputs and GT4Py's numpy-backend results (one build per case)."""
    if name not in _GT:
        c = CASES[name]
        st = gt_gtscript.stencil(backend="numpy", definition=getattr(defs("gt"), c.fn), externals=externals(name, "gt"))
        inputs = make_inputs(name)
        _GT[name] = (inputs, gt4py_reference(st, inputs, origin=c.halo, domain=DOMAIN))
    return _GT[name]


def run_gb(name: str, layout: str, schedule: str, monkeypatch) -> tuple[dict, dict]:
    inputs, want = gt_results(name)
    key = (name, schedule)
    if key not in _GB:
        with monkeypatch.context() as m:
            for k, v in SCHEDULES[schedule].items():
                m.setenv(k, v)
            _GB[key] = gtscript.stencil(backend="numpy", definition=getattr(defs("gb"), CASES[name].fn), externals=externals(name, "gb"))
    # no axes given: every argument is allocated by the preset (or in NumPy's C or F order)
    return run_in_layout(_GB[key], inputs, layout, origin=CASES[name].halo, domain=DOMAIN), want


# ============================================================================ 1. conformance
@needs_gt4py
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", list(CASES))
def test_conformance(name, layout, monkeypatch):
    got, want = run_gb(name, layout, "default", monkeypatch)
    assert_same(got, want, f"{name} on {layout}")


@needs_gt4py
@pytest.mark.parametrize("layout", ["C", "gt:cpu_kfirst"])
@pytest.mark.parametrize("schedule", ["blocks", "interpreter"])
@pytest.mark.parametrize("name", list(CASES))
def test_conformance_other_schedules(name, schedule, layout, monkeypatch):
    got, want = run_gb(name, layout, schedule, monkeypatch)
    assert_same(got, want, f"{name} on {layout}, {schedule}")


def test_cases_cover_every_schedule():
    """Slabs run PARALLEL stencils without temporaries (`edges`, `corners`, `overlapping`);
    sweeps PARALLEL ones whose temporaries live within them (`wide`, `with_temporaries`); blocks
    FORWARD sections and loops, and everything under GRIDBUF_GTSCRIPT_SWEEP=0 (the core's rules,
    seen here from the IR: no temporaries, temporaries, FORWARD or loops)."""
    ir = {n: gtscript.stencil(backend="numpy", definition=getattr(defs("gb"), CASES[n].fn), externals=externals(n, "gb")).ir for n in CASES}
    assert not any(ln.startswith("temp ") for ln in ir["edges"].splitlines())
    assert any(ln.startswith("temp ") for ln in ir["with_temporaries"].splitlines())
    assert "comp FORWARD" in ir["forward_regions"] and "while" in ir["loops"].split()
    assert sum(ln.startswith("region ") for ln in ir["corners"].splitlines()) == 5


# ============================================================================ 2. bad input
def _define(src: str, name: str, **kw):
    m = load_source(_DIR, f"_gb_regions_bad_{os.getpid()}_{next(_COUNT)}", HEADERS["gb"] + textwrap.dedent(src))
    return gtscript.stencil(backend="numpy", definition=getattr(m, name), **kw)


_COUNT = itertools.count()


def test_region_reading_beyond_the_halo_is_refused_nothing_written():
    """`a[1, 0, 0]` in region[I[-1], :] needs one point of `a` beyond the domain's end: with no
    halo there, the call is refused before anything runs. The same read in region[I[0], :] needs
    none (GT4Py's extents), so that call runs."""
    st = _define(
        """
        def f(a: Field[np.float64], out: Field[np.float64]):
            with computation(PARALLEL), interval(...):
                out = 1.0
                with horizontal(region[I[-1], :]):
                    out = a[1, 0, 0]
        """,
        "f",
    )
    a = np.ones((6, 5, 3))
    out = np.full((6, 5, 3), 7.0)
    with pytest.raises(GridbufValueError, match=r'field "a" is too small along I: .* upper extent 1'):
        st(a, out, origin=(0, 0, 0), domain=(6, 5, 3))
    assert (out == 7.0).all()
    st(a, out, origin=(0, 0, 0), domain=(5, 5, 3))
    assert (out[:5] == 1.0).all() and (out[5] == 7.0).all()
    ok = _define(
        """
        def f(a: Field[np.float64], out: Field[np.float64]):
            with computation(PARALLEL), interval(...):
                out = 1.0
                with horizontal(region[I[0], :]):
                    out = a[1, 0, 0] + 1.0
        """,
        "f",
    )
    out[:] = 7.0
    ok(a, out, origin=(0, 0, 0), domain=(6, 5, 3))
    assert (out[0] == 2.0).all() and (out[1:] == 1.0).all()


def test_domain_too_small_for_a_region_is_refused_nothing_written():
    """A region at the start reading ahead (`region[I[0] : I[0] + 3, :]` reading a[1, 0, 0],
    which GT4Py's extents count as no halo) reads index 3, inside the domain only when it has
    at least 4 points: a smaller domain is refused before anything runs, naming the domain and
    the stencil."""
    st = _define(
        """
        def f(a: Field[np.float64], out: Field[np.float64]):
            with computation(PARALLEL), interval(...):
                out = 1.0
                with horizontal(region[I[0] : I[0] + 3, :]):
                    out = a[1, 0, 0]
        """,
        "f",
    )
    a = np.ones((2, 5, 3))
    out = np.full((2, 5, 3), 7.0)
    with pytest.raises(GridbufValueError, match=r"domain \[2, 5, 3\]: at least 4 points along I.*regions of stencil \"f\"") as info:
        st(a, out, origin=(0, 0, 0), domain=(2, 5, 3))
    assert isinstance(info.value, ValueError)
    assert (out == 7.0).all()


@pytest.mark.parametrize(
    "body, message",
    [
        ("while out < 3.0:\n    out = out + 1.0\n    a = a + 1.0\n", "changes \"out\", which its condition reads"),
        ("with horizontal(region[I[0], :]):\n    with horizontal(region[I[-1], :]):\n        out = a\n", "inside a horizontal region"),
        ("with horizontal(region[I[0]:I[0]+4:2, :]):\n    out = a\n", "with a step"),
        ("with horizontal(region[I[2], :]):\n    out = a\n", r"write I\[0\] or I\[-1\]"),
        ("while False:\n    out = a\nwhile True:\n    out = a\n", "never ends"),
        ("while a > 0.0:\n    pass\n", "body assigns nothing"),
        ("with horizontal(region[I[0], :]):\n    while out < 5.0:\n        out = out + 1.0\n", "while loop inside a horizontal region"),
    ],
)
def test_refused_regions_and_loops(body, message):
    src = "def f(a: Field[np.float64], out: Field[np.float64]):\n    with computation(PARALLEL), interval(...):\n" + textwrap.indent(body, "        ")
    with pytest.raises(GridbufValueError, match=message):
        _define(src, "f")
