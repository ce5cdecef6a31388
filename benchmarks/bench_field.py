"""Field arithmetic benchmark: labelled Fields against the same computation on plain NumPy arrays
with broadcasting written out by hand.

Prints markdown tables of what it measured in this run and how the ratios compare with the
project's targets. It never asserts anything about timings.

    python benchmarks/bench_field.py [--repeats 7] [--repeat-seconds 0.15] [--plot DIR]

``--plot DIR`` draws the table's medians as a bar chart, DIR/bench_field.png (needs matplotlib).

Each number is the median over the repeats of the time per call; see _timing.py for how the
repeats are run (round-robin over the statements of a row, results freed right after each call).

The issue's expression ``t + p * s`` mixes layouts: ``t`` is allocated for ``gt:cpu_ifirst``
(I has unit stride) while ``p`` and ``s`` use the default preset "C", so by GDP-3's rules
``p * s`` is K-first and ``t + (p * s)`` reads it across its layout. The NumPy competitor of the
target runs on the very same arrays; a NumPy run on C-ordered copies and a gridbuf run with
``p`` and ``s`` allocated for ``gt:cpu_ifirst`` too show what the layouts cost.
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

LARGE = (256, 256, 80)
TINY = (4, 4, 4)


@dataclass
class Row:
    """Statements that do the same job, timed against each other; the NumPy one is the baseline."""

    key: str
    title: str
    short: str  # the row's name in the chart
    unit: str
    candidates: list[Candidate]


def large_namespace() -> dict:
    rng = np.random.default_rng(0)
    t = gb.Field.zeros(LARGE, backend="gt:cpu_ifirst", halo=(3, 3, 0))
    t[...] = rng.random(LARGE)
    p = gb.Field.from_array(np.linspace(0, 1, LARGE[2]), dims="K")
    s = gb.Field.from_array(rng.random(LARGE[:2]), dims="IJ")
    p_if = gb.Field.from_array(p, backend="gt:cpu_ifirst")
    s_if = gb.Field.from_array(s, backend="gt:cpu_ifirst")
    tn, pn, sn = t.to_numpy(), p.to_numpy(), s.to_numpy()
    return {
        "np": np,
        "t": t,
        "p": p,
        "s": s,
        "p_if": p_if,
        "s_if": s_if,
        "tn": tn,
        "pn": pn,
        "sn": sn,
        "tc": np.ascontiguousarray(tn),
    }


def tiny_namespace() -> dict:
    a = gb.Field.from_array(np.random.default_rng(1).random(TINY))
    b = gb.Field.ones(TINY)
    k = gb.Field.ones(TINY[2:], dims="K")
    s = gb.Field.ones(TINY[:2], dims="IJ")
    an, bn, kn, sn = a.to_numpy(), b.to_numpy(), k.to_numpy(), s.to_numpy()
    return {"np": np, "a": a, "b": b, "k": k, "s": s, "an": an, "bn": bn, "kn": kn, "sn": sn}


def build_rows() -> list[Row]:
    big, tiny = large_namespace(), tiny_namespace()

    def c(lib: str, stmt: str, ns: dict) -> Candidate:
        return Candidate(f"{lib}: `{stmt}`", stmt, ns)

    rows = [
        Row(
            "expr",
            f"`t + p * s`, {LARGE} float64 (IJK + K * IJ)",
            "t + p * s",
            "ms",
            [
                c("gridbuf", "t + p * s", big),
                c("numpy", "tn + pn[None, None, :] * sn[:, :, None]", big),
                c("numpy (C-ordered copy of t)", "tc + pn[None, None, :] * sn[:, :, None]", big),
                c("gridbuf (p, s also gt:cpu_ifirst)", "t + p_if * s_if", big),
            ],
        ),
        Row(
            "mean",
            f"mean over K, {LARGE} float64",
            "mean over K",
            "ms",
            [c("gridbuf", "np.mean(t, axis=2)", big), c("numpy", "np.mean(tn, axis=2)", big)],
        ),
    ]
    tiny_cases = [
        ("add", "a + b", "an + bn"),
        ("scalar", "a + 1.5", "an + 1.5"),
        ("bcast", "a * k", "an * kn[None, None, :]"),
        ("unary", "np.sqrt(a)", "np.sqrt(an)"),
        ("inplace", "x = a; x += 0.0", "x = an; x += 0.0"),
        ("reduce", "np.sum(a, axis=2)", "np.sum(an, axis=2)"),
        ("index", "a[1, 2, :]", "an[1, 2, :]"),
        ("assign", "a[:, :, 0] = s", "an[:, :, 0] = sn"),
        ("transpose", 'a.transpose("K", "J", "I")', "an.transpose(2, 1, 0)"),
    ]
    for key, field_stmt, numpy_stmt in tiny_cases:
        rows.append(
            Row(
                f"tiny_{key}",
                f"tiny {TINY}: `{field_stmt}`",
                field_stmt,
                "us",
                [c("gridbuf", field_stmt, tiny), c("numpy", numpy_stmt, tiny)],
            )
        )
    return rows


def sanity_check() -> None:
    """Checks (not timings) that the compared statements compute the same values."""
    ns = large_namespace()
    got = (ns["t"] + ns["p"] * ns["s"]).to_numpy()
    want = ns["tn"] + ns["pn"][None, None, :] * ns["sn"][:, :, None]
    if not np.array_equal(got, want):
        raise SystemExit("t + p * s differs from the NumPy computation")
    if not np.allclose(np.mean(ns["t"], axis=2).to_numpy(), np.mean(ns["tn"], axis=2)):
        raise SystemExit("np.mean(t, axis=2) differs from the NumPy computation")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7, help="repeats per statement (median reported)")
    parser.add_argument("--repeat-seconds", type=float, default=0.15, help="target duration of one repeat")
    _plot.add_argument(parser)
    args = parser.parse_args()
    plot_dir = _plot.prepare(args.plot)

    start = time.perf_counter()
    sanity_check()
    print("# gridbuf Field arithmetic benchmark\n")
    print_machine_info()
    print(f"- repeats: {args.repeats} (median), about {args.repeat_seconds} s per repeat\n")

    results: dict[str, list[Result]] = {}
    table = []
    rows = build_rows()
    for row in rows:
        res = compare(row.candidates, repeats=args.repeats, repeat_seconds=args.repeat_seconds)
        results[row.key] = res
        base = next(r for r in res if r.label.startswith("numpy:"))
        for i, r in enumerate(res):
            table.append(
                [
                    row.title if i == 0 else "",
                    r.label,
                    f"{fmt_time(r.median, row.unit)} {row.unit}",
                    f"{r.median / base.median:.2f}x",
                    f"{(r.median - base.median) * 1e6:+.2f} us" if row.unit == "us" else "",
                ]
            )
        print(f"measured: {row.title}", file=sys.stderr, flush=True)
    print(markdown_table(["case", "library: statement", "median", "time / NumPy", "overhead"], table))
    print()
    print_targets(results)
    print(f"\n(total run time {time.perf_counter() - start:.0f} s)")
    if plot_dir:
        plot(plot_dir, rows, results, args.repeats)


def plot(directory: str, rows: list[Row], results: dict[str, list[Result]], repeats: int) -> None:
    """The table's medians as a bar chart: large arrays (ms) and tiny fields (us) side by side."""
    large = {(row.short, r.label.partition(": ")[0]): r.median for row in rows if row.unit == "ms" for r in results[row.key]}
    tiny = {(row.short, r.label.partition(": ")[0]): r.median for row in rows if row.unit == "us" for r in results[row.key]}
    _plot.bar_chart(
        _plot.path(directory, __file__),
        benchmark="bench_field",
        title="labelled Field arithmetic against hand-broadcast NumPy",
        shape=f"large {'x'.join(map(str, LARGE))} float64 (t: gt:cpu_ifirst; p, s: C), tiny {'x'.join(map(str, TINY))}",
        panels=[
            _plot.Panel(large, title=f"{'x'.join(map(str, LARGE))} float64"),
            _plot.Panel(tiny, title=f"tiny {'x'.join(map(str, TINY))} fields (per-operation overhead)"),
        ],
        repeats=repeats,
        note="round-robin over the statements of a case; NumPy on the same arrays unless said otherwise",
    )


def print_targets(results: dict[str, list[Result]]) -> None:
    expr = {r.label.split(":")[0]: r.median for r in results["expr"]}
    ratio = expr["gridbuf"] / expr["numpy"]
    overheads = {
        key: (res[0].median - res[1].median) * 1e6 for key, res in results.items() if key.startswith("tiny_")
    }
    worst_key = max(overheads, key=overheads.get)
    targets = [
        ("`t + p * s` 256x256x80: gridbuf <= 1.3x NumPy on the same arrays", f"{ratio:.2f}x", "yes" if ratio <= 1.3 else "NO"),
        (
            f"per-operation overhead on tiny fields <= 5 us (worst: {worst_key[5:]})",
            f"{overheads[worst_key]:.2f} us",
            "yes" if overheads[worst_key] <= 5.0 else "NO",
        ),
    ]
    print("## Targets (ratios of the medians above, this run)\n")
    print(markdown_table(["target", "measured", "met"], targets))


if __name__ == "__main__":
    main()
