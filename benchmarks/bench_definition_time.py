"""Definition time of generated gtscript stencils that grow long: how the time to build a stencil
(``gtscript.stencil(...)``: the frontend's lowering, the core's parsing, typing, inlining and
planning, and the JIT) grows with the number of statements.

Shapes (``n`` statements, ``inp`` and ``out`` float64 fields, PARALLEL):

- ``chain``: single-use chain ``t_k = t_(k-1) * 1.0001 + inp``, ``out = t_(n-1)``;
- ``square``: double-read chain ``t_k = t_(k-1) * t_(k-1)``;
- ``fib``: ``t_k = a * t_(k-1) + b * t_(k-2)`` (``a``, ``b`` scalar parameters);
- ``fan``: ``t_k = inp[1, 0, 0] * k``, then ``out`` the sum of all of them as a balanced tree
  (a left-nested ``t_0 + t_1 + ...`` of more than about 150 terms is refused by the frontend:
  "expression nested too deeply").

Each (shape, n) runs in a fresh Python process with a time limit (``--timeout``, default 60 s)
and an address-space limit (``--memory``, default 4 GiB), so a definition that explodes prints
"> 60 s" or "aborted" instead of taking the machine down. The table gives the median of
``--repeats`` definitions (default 3; one only where the first took more than 10 s) and the
process's peak RSS (``ru_maxrss``), and how much the definitions raised it above its peak after
the definition's module was imported (Python's own compilation of a 10,000-line function is part
of that earlier peak).

Usage: ``python benchmarks/bench_definition_time.py [--shapes chain,square,fib,fan]
[--sizes 100,1000,3000,10000] [--repeats 3] [--timeout 60] [--memory 4] [--plot DIR]``.

``--plot DIR`` draws the definition times of the table as a bar chart (log axis),
DIR/bench_definition_time.png (needs matplotlib); a size that timed out or was aborted has no bar.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _timing, _plot

import _plot  # noqa: E402
from _env import scratch_dir  # noqa: E402

SHAPES = ("chain", "square", "fib", "fan")


def _sum_tree(names: list[str]) -> str:
    if len(names) == 1:
        return names[0]
    mid = len(names) // 2
    return f"({_sum_tree(names[:mid])} + {_sum_tree(names[mid:])})"


def source(shape: str, n: int) -> str:
    """The definition ``defn`` of `shape` with `n` statements, as module source."""
    head = [
        "from gridbuf.gtscript import PARALLEL, Field, computation, interval",
        "",
        "",
        "def defn(inp: Field[float], out: Field[float], a: float, b: float):",
        "    with computation(PARALLEL), interval(...):",
    ]
    body = ["t0 = inp"]
    if shape == "chain":
        body += [f"t{k} = t{k - 1} * 1.0001 + inp" for k in range(1, n - 1)]
        body.append(f"out = t{n - 2}")
    elif shape == "square":
        body += [f"t{k} = t{k - 1} * t{k - 1}" for k in range(1, n - 1)]
        body.append(f"out = t{n - 2}")
    elif shape == "fib":
        body.append("t1 = inp * b")
        body += [f"t{k} = a * t{k - 1} + b * t{k - 2}" for k in range(2, n - 1)]
        body.append(f"out = t{n - 2} + a")
    elif shape == "fan":
        body = [f"t{k} = inp[1, 0, 0] * {float(k)!r}" for k in range(n - 1)]
        body.append(f"out = {_sum_tree([f't{k}' for k in range(n - 1)])} + a * b")
    else:
        raise ValueError(shape)
    return "\n".join(head + ["        " + s for s in body]) + "\n"


def _child(shape: str, n: int, repeats: int) -> None:
    from gridbuf import gtscript

    directory = scratch_dir("gridbuf_defn_")
    key = f"defn_{shape}_{n}"
    path = os.path.join(directory, f"{key}.py")
    with open(path, "w") as fh:
        fh.write(source(shape, n))
    spec = importlib.util.spec_from_file_location(key, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[key] = mod
    spec.loader.exec_module(mod)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        gtscript.stencil(backend="numpy", definition=mod.defn)
        times.append(time.perf_counter() - t0)
        if times[-1] > 10:
            break
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"times": times, "rss_kb": rss1 - rss0, "peak_kb": rss1}))


def _limit_memory(gib: float) -> None:
    lim = int(gib * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (lim, lim))


def measure(shape: str, n: int, repeats: int, timeout: float, memory: float) -> tuple[str, str, str, float | None]:
    """(definition time, peak RSS, growth) as table cells, and the median seconds (None when the
    run timed out or was aborted)."""
    cmd = [sys.executable, os.path.abspath(__file__), "--child", shape, str(n), str(repeats)]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, preexec_fn=lambda: _limit_memory(memory))
    except subprocess.TimeoutExpired:
        return f"> {timeout:g} s", "-", "-", None
    if r.returncode != 0:
        err = (r.stderr.strip().splitlines() or ["?"])[-1]
        why = "memory" if "memory" in err.lower() or "alloc" in err.lower() or r.returncode < 0 else err[:60]
        return f"aborted ({why})", "-", "-", None
    out = json.loads(r.stdout.strip().splitlines()[-1])
    t = statistics.median(out["times"])
    return (f"{t * 1e3:.0f} ms" if t < 1 else f"{t:.2f} s"), f"{out['peak_kb'] / 1024:.0f}", f"{out['rss_kb'] / 1024:.0f}", t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--sizes", default="100,1000,3000,10000")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--memory", type=float, default=4, help="address-space limit of each run, GiB")
    _plot.add_argument(ap)
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(args.child[0], int(args.child[1]), int(args.child[2]))
        return
    plot_dir = _plot.prepare(args.plot)
    from _timing import markdown_table, print_machine_info

    print_machine_info()
    shapes = args.shapes.split(",")
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = []
    seconds: dict[tuple[str, str], float] = {}
    missing: list[str] = []
    for shape in shapes:
        stop = False
        for n in sizes:
            if stop:
                rows.append([shape, str(n), "skipped (smaller size failed)", "-", "-"])
                missing.append(f"{shape} n={n}: skipped")
                continue
            t, peak, growth, secs = measure(shape, n, args.repeats, args.timeout, args.memory)
            stop = secs is None
            rows.append([shape, str(n), t, peak, growth])
            if secs is None:
                missing.append(f"{shape} n={n}: {t}")
            else:
                seconds[(shape, f"n = {n}")] = secs
            print(" | ".join(rows[-1]), file=sys.stderr, flush=True)
    print()
    print(
        f"Definition time (median of {args.repeats}; `gtscript.stencil(...)`: lowering, core compile, JIT), the process's peak RSS, "
        "and how much the definitions raised it above its peak after importing the definition's module:"
    )
    print()
    print(markdown_table(["shape", "statements", "definition time", "peak RSS (MB)", "raised by the definitions (MB)"], rows))
    if plot_dir and seconds:
        labels = [f"n = {n}" for n in sizes]
        _plot.bar_chart(
            _plot.path(plot_dir, __file__),
            benchmark="bench_definition_time",
            title="definition time of generated stencils of n statements",
            shape="PARALLEL, float64 fields; gtscript.stencil(...): lowering, core compile, JIT",
            panels=[_plot.Panel(seconds, groups=shapes, series=labels, ylabel="definition time", log=True,
                                notes=["no bar: " + "; ".join(missing)] if missing else [])],
            repeats=args.repeats,
            note="one only where the first took more than 10 s; each size in a fresh process",
            colors=_plot.ramp(labels),
        )


if __name__ == "__main__":
    main()
