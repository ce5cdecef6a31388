"""gridbuf as a GT4Py backend (``gridbuf.gt4py``): what a call through GT4Py's ``StencilObject``
costs, and how long a definition takes to its first result.

Call overhead: a 16x16x8 hdiff (two-point halo, origin (2, 2, 0)) written against
``gt4py.cartesian.gtscript``, called

- through ``gridbuf:cpu_ifirst``'s stencil object: ``__call__`` (validated and with
  ``validate_args=False``), ``run()`` (GT4Py's unchecked entry, the one ``FrozenStencil`` and
  NDSL use) and a frozen stencil;
- through :mod:`gridbuf.gtscript` directly (the same definition with gridbuf's imports);
- through GT4Py's ``gt:cpu_ifirst`` (compiled C++; built once, in a cache directory of its own)
  and ``numpy``: ``__call__`` and ``run()``.

Definition to first result: from ``gtscript.stencil(...)`` to the end of the first call of the
hdiff, through ``gridbuf:cpu_ifirst``, ``gridbuf.gtscript``, GT4Py's ``numpy`` and
``gt:cpu_ifirst`` (each in a fresh process with an empty GT4Py cache; imports not counted).

    .venv/bin/python benchmarks/bench_gt4py_backend.py [--repeats 9] [--no-compiled] [--plot DIR]

Prints markdown tables of medians (round-robin repeats, see ``_timing``); needs gt4py.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import _plot  # noqa: E402
from _env import scratch_dir  # noqa: E402

SHAPE = (20, 20, 8)
ORIGIN = (2, 2, 0)
DOMAIN = (16, 16, 8)

HDIFF_BODY = """
def hdiff(inp: Field[np.float64], coeff: Field[np.float64], out: Field[np.float64]):
    with computation(PARALLEL), interval(...):
        lap = 4.0 * inp - (inp[1, 0, 0] + inp[-1, 0, 0] + inp[0, 1, 0] + inp[0, -1, 0])
        flx = lap[1, 0, 0] - lap
        flx = 0.0 if flx * (inp[1, 0, 0] - inp) > 0.0 else flx
        fly = lap[0, 1, 0] - lap
        fly = 0.0 if fly * (inp[0, 1, 0] - inp) > 0.0 else fly
        out = inp - coeff * (flx - flx[-1, 0, 0] + fly - fly[0, -1, 0])
"""
HEADER = {
    "gt4py": "import numpy as np\nfrom gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval\n",
    "gridbuf": "import numpy as np\nfrom gridbuf.gtscript import PARALLEL, Field, computation, interval\n",
}


def _load(kind: str):
    sys.path.insert(0, os.path.join(HERE, "..", "tests"))
    from _gtscript_oracle import load_source

    return load_source(scratch_dir(f"bench_gt4py_backend_{kind}_"), f"bench_gt4py_backend_{kind}", HEADER[kind] + HDIFF_BODY)


def measure_calls(repeats: int, compiled: bool) -> list[tuple[str, float]]:
    """Seconds per call (median over `repeats`) of each way of calling the hdiff."""
    import gridbuf.gt4py  # noqa: F401 - registers the backends
    from _timing import Candidate, compare
    from gridbuf import gtscript as gb_gtscript
    from gt4py.cartesian import gtscript

    gt_mod, gb_mod = _load("gt4py"), _load("gridbuf")
    rng = np.random.default_rng(0)
    base = {"inp": rng.random(SHAPE), "coeff": rng.random(SHAPE) * 0.1, "out": np.zeros(SHAPE)}
    origins = dict.fromkeys(base, ORIGIN)
    cands = []

    def add(label_prefix: str, backend: str, st, *, with_run: bool = True, frozen: bool = False) -> None:
        import gt4py.storage as gt_storage

        arrays = {k: gt_storage.from_array(v, np.float64, backend=backend) for k, v in base.items()}
        inp, coeff, out = arrays["inp"], arrays["coeff"], arrays["out"]
        cands.append(Candidate(f"{label_prefix}: __call__", lambda: st(inp, coeff, out, origin=ORIGIN, domain=DOMAIN)))
        cands.append(Candidate(f"{label_prefix}: __call__, validate_args=False", lambda: st(inp, coeff, out, origin=ORIGIN, domain=DOMAIN, validate_args=False)))
        if with_run:
            cands.append(Candidate(f"{label_prefix}: run()", lambda: st.run(_domain_=DOMAIN, _origin_=origins, exec_info=None, inp=inp, coeff=coeff, out=out)))
        if frozen:
            fz = st.freeze(origin=origins, domain=DOMAIN)
            cands.append(Candidate(f"{label_prefix}: frozen", lambda: fz(inp=inp, coeff=coeff, out=out)))

    add("gridbuf:cpu_ifirst (GT4Py backend)", "gridbuf:cpu_ifirst", gtscript.stencil(backend="gridbuf:cpu_ifirst", definition=gt_mod.hdiff), frozen=True)
    add("gridbuf.gtscript directly", "gt:cpu_ifirst", gb_gtscript.stencil(backend="gt:cpu_ifirst", definition=gb_mod.hdiff), with_run=False)
    if compiled:
        add("GT4Py gt:cpu_ifirst", "gt:cpu_ifirst", gtscript.stencil(backend="gt:cpu_ifirst", definition=gt_mod.hdiff), frozen=True)
    add("GT4Py numpy", "numpy", gtscript.stencil(backend="numpy", definition=gt_mod.hdiff), frozen=True)
    results = compare(cands, repeats=repeats, repeat_seconds=0.1)
    return [(r.label, r.median) for r in results]


_FIRST_RESULT = """
import json, sys, time
import numpy as np
sys.path.insert(0, {here!r})
import bench_gt4py_backend as b
kind = sys.argv[1]
if kind == "gridbuf:cpu_ifirst":
    import gridbuf.gt4py
mod = b._load("gridbuf" if kind == "gridbuf.gtscript" else "gt4py")
if kind == "gridbuf.gtscript":
    from gridbuf import gtscript
    backend = "gt:cpu_ifirst"
else:
    from gt4py.cartesian import gtscript
    backend = kind
arrays = [np.ones(b.SHAPE) for _ in range(3)]
t0 = time.perf_counter()
st = gtscript.stencil(backend=backend, definition=mod.hdiff)
st(*arrays, origin=b.ORIGIN, domain=b.DOMAIN)
print(json.dumps({{"first_result": time.perf_counter() - t0}}))
"""


def measure_definition(kind: str) -> float:
    """Seconds from `gtscript.stencil(...)` to the end of the first call, in a fresh process
    with an empty GT4Py cache."""
    env = dict(os.environ, GT_CACHE_ROOT=scratch_dir("bench_gt4py_backend_cache_"))
    code = _FIRST_RESULT.format(here=HERE)
    out = subprocess.run([sys.executable, "-c", code, kind], env=env, capture_output=True, text=True, check=True).stdout
    return float(json.loads(out.strip().splitlines()[-1])["first_result"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--definition-repeats", type=int, default=3)
    ap.add_argument("--no-compiled", action="store_true", help="leave out GT4Py's gt:cpu_ifirst (its build takes ~10-20 s)")
    _plot.add_argument(ap)
    args = ap.parse_args()
    plot_dir = _plot.prepare(os.path.abspath(args.plot) if args.plot else None)
    # GT4Py's C++ build runs setuptools in the working directory, which refuses the
    # repository's layout (target/, crates/): build from a scratch directory.
    os.chdir(scratch_dir("bench_gt4py_backend_"))
    from _timing import print_machine_info

    print_machine_info()
    calls = measure_calls(args.repeats, not args.no_compiled)
    direct = dict(calls)["gridbuf.gtscript directly: __call__"]
    print(f"\n### Call overhead: hdiff, {DOMAIN[0]}x{DOMAIN[1]}x{DOMAIN[2]} float64 (medians of {args.repeats} repeats)\n")
    print("| call | median per call | / gridbuf.gtscript direct `__call__` |")
    print("|---|---|---|")
    for label, t in calls:
        print(f"| {label} | {t * 1e6:.2f} us | {t / direct:.2f} |")
    kinds = ["gridbuf:cpu_ifirst", "gridbuf.gtscript", "numpy"] + ([] if args.no_compiled else ["gt:cpu_ifirst"])
    print(f"\n### Definition to first result: hdiff, fresh process and empty GT4Py cache (median of {args.definition_repeats})\n")
    print("| backend | definition to first result |")
    print("|---|---|")
    for kind in kinds:
        reps = 1 if kind == "gt:cpu_ifirst" else args.definition_repeats  # a C++ build: once
        t = statistics.median(measure_definition(kind) for _ in range(reps))
        print(f"| {kind} | {t * 1e3:.1f} ms |")
    if plot_dir:
        _plot.bar_chart(
            _plot.path(plot_dir, __file__),
            benchmark="bench_gt4py_backend",
            title="a call through GT4Py's stencil object",
            shape=f"hdiff on a {DOMAIN[0]}x{DOMAIN[1]}x{DOMAIN[2]} float64 domain",
            panels=[_plot.Panel({(label, "per call"): t for label, t in calls}, ylabel="time per call")],
            repeats=args.repeats,
            note="",
        )


if __name__ == "__main__":
    main()
