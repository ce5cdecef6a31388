"""Call-path benchmark: what a stencil call costs with and without ``validate_args``, on a small
domain where the binder's work shows: a 16x16x8 hdiff (two-point halo, origin (2, 2, 0)) as the
native kernel and as a gtscript stencil, called normally, with ``validate_args=False``, and bound;
and a gtscript ``while`` loop on the same domain.

Prints a markdown table of medians (round-robin repeats, see ``_timing``). With
``--baseline PATH`` it also runs the same measurements on the gridbuf package found under PATH
(a directory holding another build's ``gridbuf/``, e.g. one of the commit before a change), in
alternating child processes, and prints both columns side by side: the check that a change kept
the call path as fast.

    .venv/bin/python benchmarks/bench_call_checks.py [--repeats 9] [--rounds 3] [--baseline DIR] [--plot DIR]

``--plot DIR`` draws the printed medians (both builds' with ``--baseline``) as a bar chart,
DIR/bench_call_checks.png (needs matplotlib).
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

SHAPE = (20, 20, 8)  # 16x16x8 domain plus a two-point halo in I and J
ORIGIN = (2, 2, 0)

HDIFF_SOURCE = '''
import numpy as np
from gridbuf.gtscript import PARALLEL, Field, computation, interval

def hdiff(inp: Field[np.float64], coeff: Field[np.float64], out: Field[np.float64]):
    with computation(PARALLEL), interval(...):
        lap = 4.0 * inp - (inp[1, 0, 0] + inp[-1, 0, 0] + inp[0, 1, 0] + inp[0, -1, 0])
        flx = lap[1, 0, 0] - lap
        flx = 0.0 if flx * (inp[1, 0, 0] - inp) > 0.0 else flx
        fly = lap[0, 1, 0] - lap
        fly = 0.0 if fly * (inp[0, 1, 0] - inp) > 0.0 else fly
        out = inp - coeff * (flx - flx[-1, 0, 0] + fly - fly[0, -1, 0])

def count_up(inp: Field[np.float64], out: Field[np.float64]):
    with computation(PARALLEL), interval(...):
        x = inp
        while x < 3.0:
            x = x + 1.0
        out = x
'''


def measure(repeats: int) -> dict[str, float]:
    """Seconds per call (median over `repeats`) of each way of calling, in this process."""
    
    import gridbuf as gb
    from _timing import Candidate, compare
    from gridbuf import gtscript

    sys.path.insert(0, os.path.join(HERE, "..", "tests"))
    from _gtscript_oracle import load_source

    mod = load_source(scratch_dir("bench_call_checks_"), "bench_call_checks_hdiff", HDIFF_SOURCE)
    gt_hdiff = gtscript.stencil(backend="numpy", definition=mod.hdiff)
    gt_loop = gtscript.stencil(backend="numpy", definition=mod.count_up)
    rng = np.random.default_rng(0)
    inp = gb.from_array(rng.random(SHAPE), backend="gt:cpu_ifirst")
    coeff = gb.from_array(rng.random(SHAPE) * 0.1, backend="gt:cpu_ifirst")
    out = gb.zeros(SHAPE, np.float64, backend="gt:cpu_ifirst")
    nat = gb.kernels.hdiff
    domain = (16, 16, 8)
    bound_nat = nat.bind(inp, coeff, out, origin=ORIGIN, domain=domain)
    cands = [
        Candidate("native hdiff, validated", lambda: nat(inp, coeff, out, origin=ORIGIN, domain=domain)),
        Candidate("native hdiff, validate_args=False", lambda: nat(inp, coeff, out, origin=ORIGIN, domain=domain, validate_args=False)),
        Candidate("native hdiff, bound", bound_nat),
        Candidate("gtscript hdiff, validated", lambda: gt_hdiff(inp, coeff, out, origin=ORIGIN, domain=domain)),
        Candidate("gtscript hdiff, validate_args=False", lambda: gt_hdiff(inp, coeff, out, origin=ORIGIN, domain=domain, validate_args=False)),
        # A `while` loop (up to 3 passes a point): runs beside the polling thread since Ctrl-C
        # support (issue 36), a hand-over per call.
        Candidate("gtscript while loop, validated", lambda: gt_loop(inp, out, origin=ORIGIN, domain=domain)),
    ]
    results = compare(cands, repeats=repeats, repeat_seconds=0.1)
    return {r.label: r.median for r in results}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--rounds", type=int, default=3, help="alternating child runs per build (with --baseline)")
    ap.add_argument("--baseline", help="directory holding another build's gridbuf/ package")
    _plot.add_argument(ap)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(measure(args.repeats)))
        return
    plot_dir = _plot.prepare(args.plot)
    if not args.baseline:
        res = measure(args.repeats)
        print("| call (16x16x8 hdiff, float64, gt:cpu_ifirst) | median per call |")
        print("|---|---|")
        for k, v in res.items():
            print(f"| {k} | {v * 1e6:.2f} us |")
        if plot_dir:
            plot(plot_dir, {(k, "this build"): v for k, v in res.items()}, f"median of {args.repeats} repeats")
        return
    runs: dict[str, list[dict[str, float]]] = {"this build": [], "baseline": []}
    for _ in range(args.rounds):
        for which in runs:
            env = dict(os.environ)
            if which == "baseline":
                env["PYTHONPATH"] = os.path.abspath(args.baseline) + os.pathsep + env.get("PYTHONPATH", "")
            cmd = [sys.executable, os.path.abspath(__file__), "--child", "--repeats", str(args.repeats)]
            out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
            runs[which].append(json.loads(out.strip().splitlines()[-1]))
    labels = list(runs["this build"][0])
    print(f"Medians over {args.rounds} alternating runs of {args.repeats} repeats each.\n")
    print("| call (16x16x8 hdiff, float64, gt:cpu_ifirst) | baseline | this build | this / baseline |")
    print("|---|---|---|---|")
    values = {}
    for k in labels:
        b = statistics.median(r[k] for r in runs["baseline"])
        t = statistics.median(r[k] for r in runs["this build"])
        print(f"| {k} | {b * 1e6:.2f} us | {t * 1e6:.2f} us | {t / b:.2f} |")
        values[(k, "baseline")], values[(k, "this build")] = b, t
    if plot_dir:
        plot(plot_dir, values, f"median over {args.rounds} alternating runs per build of the median of {args.repeats} repeats")


def plot(directory: str, values: dict[tuple[str, str], float], caption: str) -> None:
    """The printed medians as a bar chart: a group per way of calling, a bar per build."""
    _plot.bar_chart(
        _plot.path(directory, __file__),
        benchmark="bench_call_checks",
        title="cost of a stencil call's checks",
        shape="hdiff on a 16x16x8 float64 domain (two-point halo), gt:cpu_ifirst",
        panels=[_plot.Panel(values, ylabel="time per call")],
        repeats=None,
        note=caption,
    )


if __name__ == "__main__":
    main()
