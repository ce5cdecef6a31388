"""Allocation benchmark: gridbuf against NumPy and, when importable, gt4py.storage.

Prints markdown tables of what it measured in this run and how the ratios compare with the
project's targets. It never asserts anything about timings.

    .venv/bin/python benchmarks/bench_allocation.py [--repeats 7] [--repeat-seconds 0.15] [--plot DIR]

``--plot DIR`` draws the table's medians as a bar chart, DIR/bench_allocation.png (needs matplotlib).

Each number is the median over the repeats of the time per call; see _timing.py for how the
repeats are run (round-robin over the libraries of a row, arrays freed right after each call).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import gridbuf as gb  # noqa: E402
import _plot  # noqa: E402
from _timing import Candidate, Result, compare, fmt_time, markdown_table, print_machine_info  # noqa: E402

try:
    import gt4py.storage as gs
except ImportError:  # gt4py is optional: its rows are left out
    gs = None

SMALL = (10, 11, 12)
LARGE = (256, 256, 80)


@dataclass
class Row:
    """A group of statements that do the same job, timed against each other."""

    key: str
    title: str
    short: str  # the row's name in the chart
    unit: str  # "us" or "ms"
    baseline: str  # label of the NumPy statement the others are compared with
    candidates: list[Candidate]


def build_rows() -> list[Row]:
    rng = np.random.default_rng(0)
    src = rng.random(LARGE)  # C-ordered float64, 40 MiB
    ns_small = {"gb": gb, "np": np, "gs": gs, "shape": SMALL}
    ns_large = {"gb": gb, "np": np, "gs": gs, "shape": LARGE, "src": src}

    def cands(ns: dict, stmts: list[tuple[str, str, bool]]) -> list[Candidate]:
        # (library, statement, needs gt4py)
        return [Candidate(f"{lib}: `{s}`", s, ns) for lib, s, needs_gt4py in stmts if gs is not None or not needs_gt4py]

    return [
        Row(
            "small_zeros",
            f"small zeros {SMALL} float64, per call",
            "small zeros",
            "us",
            "numpy",
            cands(
                ns_small,
                [
                    ("gridbuf", "gb.zeros(shape, aligned_index=(1, 1, 0))", False),
                    ("numpy", "np.zeros(shape)", False),
                    ("gt4py", 'gs.zeros(shape, backend="gt:cpu_ifirst", aligned_index=(1, 1, 0))', True),
                ],
            ),
        ),
        Row(
            "large_zeros",
            f"large zeros {LARGE} float64, allocate + free (untouched)",
            "large zeros",
            "ms",
            "numpy",
            cands(
                ns_large,
                [
                    ("gridbuf", "gb.zeros(shape)", False),
                    ("numpy", "np.zeros(shape)", False),
                    ("gt4py", 'gs.zeros(shape, backend="gt:cpu_ifirst")', True),
                ],
            ),
        ),
        Row(
            "large_ones",
            f"large ones {LARGE} float64, allocate + fill + free",
            "large ones",
            "ms",
            "numpy",
            cands(
                ns_large,
                [
                    ("gridbuf", "gb.ones(shape)", False),
                    ("numpy", "np.full(shape, 1.0)", False),
                    ("numpy", "np.ones(shape)", False),
                    ("gt4py", 'gs.ones(shape, backend="gt:cpu_ifirst")', True),
                ],
            ),
        ),
        Row(
            "from_array_layout",
            f"from_array {LARGE} float64, C-ordered source, layout change",
            "from_array, layout change",
            "ms",
            "numpy",
            cands(
                ns_large,
                [
                    ("gridbuf", 'gb.from_array(src, backend="F")', False),
                    ("gridbuf", 'gb.from_array(src, backend="gt:cpu_ifirst")', False),
                    ("numpy", "np.asfortranarray(src)", False),
                    ("gt4py", 'gs.from_array(src, backend="gt:cpu_ifirst")', True),
                ],
            ),
        ),
        Row(
            "from_array_same",
            f"from_array {LARGE} float64, C-ordered source, same layout (plain copy)",
            "from_array, same layout",
            "ms",
            "numpy",
            cands(
                ns_large,
                [
                    ("gridbuf", 'gb.from_array(src, backend="C")', False),
                    ("numpy", "np.array(src)", False),
                    ("gt4py", 'gs.from_array(src, backend="numpy")', True),
                ],
            ),
        ),
    ]


def sanity_check() -> None:
    """Checks (not timings) that the compared statements produce the same values."""
    src = np.random.default_rng(1).random((16, 12, 8))
    for backend in ("C", "F", "gt:cpu_ifirst"):
        out = gb.from_array(src, backend=backend)
        if not np.array_equal(out, src):
            raise SystemExit(f"gb.from_array(src, backend={backend!r}) differs from src")
    if not (gb.zeros(SMALL) == 0).all() or not (gb.ones(SMALL) == 1).all():
        raise SystemExit("gb.zeros / gb.ones returned wrong values")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7, help="repeats per statement (median reported)")
    parser.add_argument("--repeat-seconds", type=float, default=0.15, help="target duration of one repeat")
    _plot.add_argument(parser)
    args = parser.parse_args()
    plot_dir = _plot.prepare(args.plot)

    start = time.perf_counter()
    sanity_check()
    print("# gridbuf allocation benchmark\n")
    print_machine_info()
    print(f"- repeats: {args.repeats} (median), about {args.repeat_seconds} s per repeat")
    if gs is None:
        print("- gt4py.storage is not importable: its rows are left out")
    print()

    results: dict[str, list[Result]] = {}
    table_rows = []
    rows = build_rows()
    for row in rows:
        res = compare(row.candidates, repeats=args.repeats, repeat_seconds=args.repeat_seconds)
        results[row.key] = res
        base = next(r for r in res if r.label.startswith(row.baseline + ":"))
        for i, r in enumerate(res):
            table_rows.append(
                [
                    row.title if i == 0 else "",
                    r.label,
                    f"{fmt_time(r.median, row.unit)} {row.unit}",
                    f"{fmt_time(r.best, row.unit)} {row.unit}",
                    f"{r.median / base.median:.2f}x",
                ]
            )
        print(f"measured: {row.title}", file=sys.stderr, flush=True)

    print(markdown_table(["case", "library: statement", "median", "best", "time / NumPy"], table_rows))
    print()
    print_targets(results)
    print(f"\n(total run time {time.perf_counter() - start:.0f} s)")
    if plot_dir:
        plot(plot_dir, rows, results, args.repeats)


#: Series names of the statements that are not their library's first in a row (the chart's legend).
SERIES = {
    'gb.from_array(src, backend="gt:cpu_ifirst")': "gridbuf (to gt:cpu_ifirst)",
    "np.ones(shape)": "numpy (np.ones)",
}


def plot(directory: str, rows: list[Row], results: dict[str, list[Result]], repeats: int) -> None:
    """The table's medians as one bar chart: a group per case, a bar per statement."""
    values = {}
    for row in rows:
        for r in results[row.key]:
            values[(row.short, SERIES.get(r.stmt, r.label.partition(": ")[0]))] = r.median
    _plot.bar_chart(
        _plot.path(directory, __file__),
        benchmark="bench_allocation",
        title="allocation and copy-construction, time per call",
        shape=f"small {'x'.join(map(str, SMALL))}, large {'x'.join(map(str, LARGE))} float64",
        panels=[_plot.Panel(values, xlabel="gt4py: gt4py.storage on gt:cpu_ifirst (the numpy backend for the same-layout copy)")],
        repeats=repeats,
        note="round-robin over the statements of a case; each result freed before the next call",
    )


def _median(results: dict[str, list[Result]], key: str, stmt_prefix: str) -> float | None:
    for r in results[key]:
        if r.stmt.startswith(stmt_prefix):
            return r.median
    return None


def print_targets(results: dict[str, list[Result]]) -> None:
    m = lambda key, prefix: _median(results, key, prefix)  # noqa: E731
    gb_small, np_small, gs_small = m("small_zeros", "gb."), m("small_zeros", "np."), m("small_zeros", "gs.")
    gb_zeros, np_zeros = m("large_zeros", "gb."), m("large_zeros", "np.")
    gb_ones, np_full = m("large_ones", "gb."), m("large_ones", "np.full")
    gb_f, np_f = m("from_array_layout", 'gb.from_array(src, backend="F")'), m("from_array_layout", "np.")

    # (target, measured ratio as text, met?)
    targets: list[tuple[str, str, str]] = []

    def add(name: str, ratio: float | None, ok) -> None:
        if ratio is None:
            targets.append((name, "n/a", "n/a (gt4py not importable)"))
        else:
            targets.append((name, f"{ratio:.2f}x", "yes" if ok(ratio) else "NO"))

    add("small zeros: gridbuf <= 3x numpy.zeros (gridbuf / numpy)", gb_small / np_small, lambda r: r <= 3.0)
    add(
        "small zeros: gridbuf >= 30x faster than gt4py.storage.zeros (gt4py / gridbuf)",
        gs_small / gb_small if gs_small is not None else None,
        lambda r: r >= 30.0,
    )
    add("large zeros: gridbuf <= 1.2x numpy.zeros (gridbuf / numpy)", gb_zeros / np_zeros, lambda r: r <= 1.2)
    add("large ones: gridbuf <= 1.1x numpy.full (gridbuf / numpy)", gb_ones / np_full, lambda r: r <= 1.1)
    add(
        'from_array, layout change: gridbuf (backend="F") >= 3x faster than numpy.asfortranarray (numpy / gridbuf)',
        np_f / gb_f,
        lambda r: r >= 3.0,
    )
    print("## Targets (ratios of the medians above, this run)\n")
    print(markdown_table(["target", "ratio", "met"], targets))


if __name__ == "__main__":
    main()
