"""Runs one benchmark script against two builds of gridbuf, alternately, and prints its tables side by side.

A change that should not alter performance (a restructuring, a refactor) is checked by running the
benchmarks of the build before it and of the build after it in the same session, alternating
child processes so that a slow phase of the machine hits both alike. This script does that for any
benchmark of this folder that prints Markdown tables (every ``bench_*.py`` does):

1. it runs ``python BENCH ARGS...`` ``--rounds`` times under each build, alternating (the baseline
   is another build's ``gridbuf/`` package, put first on ``PYTHONPATH``; the other is whatever this
   interpreter imports);
2. it reads every Markdown table the benchmark printed, and every time cell (``1.23 ms``,
   ``4.5 us``, ``310 ns``, ``2.1 s``, a bare number under a header that names the unit);
3. for each table row and time column it prints the median over the rounds for each build and the
   ratio after / before. Cells that are not times (ratios, errors, labels) identify the row.

Usage::

    .venv/bin/python benchmarks/compare_builds.py --baseline DIR [--rounds 3] -- bench_stencil.py --part overhead

The tables are what each benchmark measured; this script only collates medians, it never judges.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0}
_CELL = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?(?:e[-+]?[0-9]+)?)\s*(ns|us|µs|ms|s)?\s*$")
_HEADER_UNIT = re.compile(r"\b(ns|us|µs|ms|s)\b|,\s*(ns|us|µs|ms|s)\s*$")

Table = tuple[str, list[str], list[list[str]]]


def parse_tables(text: str) -> list[Table]:
    """Every Markdown table in ``text``: (title line before it, headers, rows of cells)."""
    tables: list[Table] = []
    title = ""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        if line.startswith("|") and i + 1 < len(lines) and set(lines[i + 1].strip()) <= set("|-: "):
            headers = [c.strip() for c in line.strip("|").split("|")]
            rows = []
            i += 2
            while i < len(lines) and lines[i].strip().startswith("|"):
                rows.append([c.strip() for c in lines[i].strip().strip("|").split("|")])
                i += 1
            tables.append((title, headers, rows))
            continue
        if line.startswith("#") or (line and not title):
            title = line.lstrip("# ")
        i += 1
    return tables


def seconds(cell: str, header: str, title: str = "") -> float | None:
    """The time a cell holds, in seconds, or None when it is not a time (a bare number takes
    its unit from the column's header, else from the table's title: "Time per call, ms")."""
    m = _CELL.match(cell.replace("\u2009", " "))
    if not m:
        return None
    unit = m.group(2)
    if unit is None:
        if "/" in header or any(w in header.lower() for w in ("ratio", "error", "gb/s", "%")):
            return None
        hm = _HEADER_UNIT.search(header) or _HEADER_UNIT.search(title.split("(")[0])
        if hm is None:
            return None
        unit = hm.group(1) or hm.group(2)
    return float(m.group(1)) * _UNITS[unit]


def run(bench: list[str], baseline: str | None) -> str:
    """One child run of the benchmark; its standard output."""
    env = dict(os.environ)
    if baseline is not None:
        env["PYTHONPATH"] = os.path.abspath(baseline) + os.pathsep + env.get("PYTHONPATH", "")
    script = Path(__file__).with_name(bench[0]) if not os.path.exists(bench[0]) else Path(bench[0])
    out = subprocess.run([sys.executable, str(script), *bench[1:]], env=env, check=True, capture_output=True, text=True)
    return out.stdout


def fmt(s: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", required=True, help="directory holding the other build's gridbuf/ package")
    ap.add_argument("--rounds", type=int, default=3, help="child runs per build, alternating")
    ap.add_argument("--save", help="directory to keep each run's output in (before-1.txt, after-1.txt, ...)")
    ap.add_argument("bench", nargs=argparse.REMAINDER, help="-- SCRIPT [ARGS...]")
    args = ap.parse_args()
    bench = args.bench[1:] if args.bench[:1] == ["--"] else args.bench
    if not bench:
        ap.error("name the benchmark script after --")
    runs: dict[str, list[list[Table]]] = {"before": [], "after": []}
    for r in range(args.rounds):
        for which in ("before", "after") if r % 2 == 0 else ("after", "before"):
            print(f"round {r + 1}: {which}", file=sys.stderr, flush=True)
            out = run(bench, args.baseline if which == "before" else None)
            if args.save:
                os.makedirs(args.save, exist_ok=True)
                Path(args.save, f"{which}-{r + 1}.txt").write_text(out)
            runs[which].append(parse_tables(out))
    shapes = {tuple((t, tuple(h), len(rows)) for t, h, rows in tabs) for tabs in runs["before"] + runs["after"]}
    if len(shapes) != 1:
        sys.exit("the runs printed different tables; compare them by hand")
    print(f"# {' '.join(bench)}: before = {args.baseline}, after = this build; medians of {args.rounds} runs each\n")
    worst = 0.0
    for ti, (title, headers, rows) in enumerate(runs["after"][0]):
        time_cols = [j for j, h in enumerate(headers) if any(seconds(row[j], h, title) is not None for row in rows if j < len(row))]
        if not time_cols:
            continue
        key_cols = [j for j in range(len(headers)) if j not in time_cols and "/" not in headers[j]][:3]
        print(f"## {title}\n")
        print("| " + " | ".join([*(headers[j] for j in key_cols), "column", "before", "after", "after / before"]) + " |")
        print("|" + "---|" * (len(key_cols) + 4))
        shown = ["" for _ in key_cols]
        for ri, row in enumerate(rows):
            # A blank key cell continues the row above it.
            shown = [row[k] or shown[n] for n, k in enumerate(key_cols)]
            for j in time_cols:
                vals = {}
                for which in ("before", "after"):
                    cells = [seconds(tabs[ti][2][ri][j], headers[j], title) for tabs in runs[which] if j < len(tabs[ti][2][ri])]
                    got = [c for c in cells if c is not None]
                    vals[which] = statistics.median(got) if got else None
                b, a = vals["before"], vals["after"]
                if b is None or a is None or b == 0:
                    continue
                ratio = a / b
                worst = max(worst, ratio)
                print("| " + " | ".join([*shown, headers[j], fmt(b), fmt(a), f"{ratio:.2f}"]) + " |")
        print()
    print(f"largest after / before: {worst:.2f}")


if __name__ == "__main__":
    main()
