"""An FV3 dynamical-core step (PyFV3 on NDSL) through GT4Py backends chosen by name: gridbuf's
against GT4Py's ``numpy`` (and, with ``--compiled``, GT4Py's compiled CPU backends).

Each measurement is one run of ``tests/integration/fv3_step.py`` (C12, 79 levels, the baroclinic
initial state, ``--steps`` steps), on 6 MPI ranks (one tile each, ``mpiexec -n 6``) and in one
process (rank 0 of 6 with NDSL's ``NullComm``: halos filled with zeros, so its values are not a
model state and its times depend on what NaNs do to the loops: only a rough figure). Cold: an
empty cache directory for GT4Py (``GT_CACHE_ROOT``) and gridbuf's tier two
(``GRIDBUF_TIER2_CACHE``); warm: the same directory again, right after. Threads as the
environment sets them (``OMP_NUM_THREADS`` for GT4Py's compiled backends: with 6 ranks on fewer
cores, set it to 1). Reported (rank 0's clock, seconds): building the
``DynamicalCore`` (which builds its stencils), the first step, the median of the later steps,
and the whole run from the process start. Every configuration runs ``--repeats`` times and the
table shows medians.

GT4Py's compiled backends take about half an hour to build the dycore's stencils here, and NDSL
gives every rank a cache of its own (``.gt_cache_00000R``). ``--compiled-cache DIR`` runs them
warm only, from ``DIR`` (their ``GT_CACHE_ROOT``): fill it once with a one-process cold run
(``--ranks 1 --compiled``, or the driver with ``--comm null``); the ranks' directories missing
from it are made from rank 0's, by hard links (the stencils are the same on every rank).

Needs what ``tests/integration/README.md`` lists (NDSL, PyFV3, mpi4py with mpiexec,
``FV3_ETA_FILE``); run it with that environment's Python::

    FV3_ETA_FILE=/path/eta79.nc PYTHONPATH=/path/NDSL:/path/PyFV3 python benchmarks/bench_fv3.py
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DRIVER = HERE.parent / "tests" / "integration" / "fv3_step.py"
sys.path.insert(0, str(HERE))
import _plot  # noqa: E402
from _timing import markdown_table  # noqa: E402


def run_once(backend: str, ranks: int, steps: int, cache: Path, out: Path, resolution: int = 12) -> dict:
    """One run of the driver; its rank-0 timings plus the wall time of the whole run."""
    mpiexec = Path(sys.executable).parent / "mpiexec"
    cmd = [sys.executable, str(DRIVER), "--backend", backend, "--steps", str(steps), "--out", str(out), "--resolution", str(resolution)]
    cmd = [str(mpiexec if mpiexec.exists() else "mpiexec"), "-n", "6", *cmd] if ranks == 6 else [*cmd, "--comm", "null"]
    # GT4Py's cache and gridbuf's tier-two cache both in `cache`: cold is cold for both.
    env = {**os.environ, "GT_CACHE_ROOT": str(cache), "GRIDBUF_TIER2_CACHE": str(cache / "gridbuf_tier2")}
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{backend} ({ranks} ranks) failed, rc {done.returncode}:\n{done.stderr[-4000:]}")
    timing = json.loads((out / "timing.json").read_text())
    timing["wall_s"] = wall
    for key, name in (("stencils", "stencil_times_rank0.json"), ("stencils_cpu", "stencil_cpu_rank0.json")):
        path = out / name
        timing[key] = json.loads(path.read_text()) if path.exists() else {}
    return timing


def fill_rank_caches(cache: Path, ranks: int = 6) -> None:
    """Makes the per-rank GT4Py cache directories missing from ``cache`` from rank 0's, by hard links."""
    first = cache / ".gt_cache_000000"
    if not first.is_dir():
        raise SystemExit(f"--compiled-cache {cache}: no {first.name} in it (fill it with a one-process cold run first)")
    for rank in range(1, ranks):
        other = cache / f".gt_cache_{rank:06d}"
        if not other.exists():
            shutil.copytree(first, other, copy_function=os.link)


def stencil_name(key: str) -> str:
    """A stencil's definition name from its GT4Py stencil class name (``<definition>____<backend>_<hash>``)."""
    return key.rsplit("____", 1)[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backends", default="numpy,gridbuf:cpu_kfirst,gridbuf:cpu_ifirst")
    parser.add_argument("--compiled", action="store_true", help="also gt:cpu_ifirst and gt:cpu_kfirst (about 10 s per definition to build)")
    parser.add_argument("--ranks", default="6", help="6 (MPI); 1 adds one process with NullComm (GT4Py backends only: its NaN halos send the remap's loops off the column, which gridbuf refuses)")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--resolution", type=int, default=12, help="cells per tile edge (C12 by default)")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--compiled-cache", type=Path, help="GT_CACHE_ROOT with GT4Py's compiled stencils already built: the compiled backends run warm only, from it")
    _plot.add_argument(parser)
    args = parser.parse_args()
    plot_dir = _plot.prepare(args.plot)
    backends = args.backends.split(",") + (["gt:cpu_ifirst", "gt:cpu_kfirst"] if args.compiled else [])
    rows = []
    per_stencil: dict[str, dict[str, float]] = {}  # backend -> definition -> seconds per warm step (6 ranks, rank 0)
    per_stencil_cpu: dict[str, dict[str, float]] = {}  # the same calls' thread CPU seconds
    first_step: dict[tuple[str, str], float] = {}  # (run, backend) -> seconds from the start to the first step's end
    scratch = Path(tempfile.mkdtemp(prefix="gridbuf_bench_fv3_"))
    try:
        for ranks in (int(r) for r in args.ranks.split(",")):
            for backend in backends:
                prepared = args.compiled_cache is not None and backend.startswith("gt:")
                runs: dict[str, list[dict]] = {"warm": []} if prepared else {"cold": [], "warm": []}
                for rep in range(args.repeats):
                    cache = scratch / f"cache_{backend.replace(':', '_')}_{ranks}_{rep}"
                    if prepared:
                        cache = args.compiled_cache.resolve()
                        fill_rank_caches(cache)
                    for kind in runs:
                        out = scratch / f"out_{backend.replace(':', '_')}_{ranks}_{rep}_{kind}"
                        runs[kind].append(run_once(backend, ranks, args.steps, cache, out, args.resolution))
                        print(f"{backend} {ranks} {kind}: {runs[kind][-1]}", file=sys.stderr, flush=True)
                    if not prepared:
                        shutil.rmtree(cache, ignore_errors=True)
                if ranks == 6:
                    for table, key in ((per_stencil, "stencils"), (per_stencil_cpu, "stencils_cpu")):
                        warm = table.setdefault(backend, {})
                        for name, seconds in runs["warm"][0][key].items():
                            warm[stencil_name(name)] = warm.get(stencil_name(name), 0.0) + seconds
                for kind, timings in runs.items():
                    med = lambda key: statistics.median(t[key] for t in timings)  # noqa: E731
                    first_step[(f"{'6 ranks' if ranks == 6 else '1 process'}, {kind}", backend)] = statistics.median(
                        t["imports_s"] + t["setup_s"] + t["build_dycore_s"] + t["steps_s"][0] for t in timings
                    )
                    later = [statistics.median(t["steps_s"][1:]) for t in timings if len(t["steps_s"]) > 1]
                    rows.append([
                        backend,
                        "6 ranks" if ranks == 6 else "1 process",
                        kind,
                        f"{med('build_dycore_s'):.1f}",
                        f"{statistics.median(t['steps_s'][0] for t in timings):.2f}",
                        f"{statistics.median(later):.2f}" if later else "",
                        f"{med('wall_s'):.1f}",
                        f"{med('max_rss_mib'):.0f}",
                    ])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"FV3 dynamical core, C{args.resolution} x 79 levels, {args.steps} steps, medians of {args.repeats} run(s), seconds")
    print(markdown_table(["backend", "run", "cache", "build dycore", "first step", "later steps", "whole run", "max RSS per rank, MiB"], rows))
    for table, what in (
        (per_stencil, "whole calls: GT4Py's `total_call_time`, waits for a core included"),
        (per_stencil_cpu, "the calling thread's CPU time in the same calls"),
    ):
        if not table:
            continue
        first = next(iter(table))
        top = sorted(table[first], key=lambda n: -table[first][n])[:10]
        rows_top = [[n, *(f"{1e3 * table[b].get(n, float('nan')):.2f}" for b in table)] for n in top]
        rows_top.append(["all stencils", *(f"{1e3 * sum(table[b].values()):.1f}" for b in table)])
        print(f"\nThe 10 stencils taking the most time per warm step on {first} (6 ranks, rank 0, ms per step, every call of the definition; {what})")
        print(markdown_table(["stencil", *table], rows_top))
    if plot_dir:
        _plot.bar_chart(
            _plot.path(plot_dir, __file__, "first_step"), benchmark="bench_fv3.py",
            title="from the process start to the end of the first step", shape=f"C{args.resolution} x 79 levels, 6 tiles",
            panels=[_plot.Panel(first_step, ylabel="time")], repeats=args.repeats,
        )  # fmt: skip


if __name__ == "__main__":
    main()
