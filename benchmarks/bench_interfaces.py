"""Interface benchmark: the cost per call of gridbuf.array_info and gridbuf.as_numpy against
numpy.asarray, on a NumPy array, a gridbuf.Field and an xarray DataArray (plus, for reference, a
memoryview, an object with only __array_interface__ and a DLPack-only producer).

Prints markdown tables of what it measured in this run and how it compares with the project's
targets. It never asserts anything about timings.

    .venv/bin/python benchmarks/bench_interfaces.py [--repeats 7] [--repeat-seconds 0.15] [--plot DIR]

``--plot DIR`` draws the table's medians as a bar chart, DIR/bench_interfaces.png (needs matplotlib).

Each number is the median over the repeats of the time per call; the statements of one row are
timed round-robin in the same run (see _timing.py).
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
    import xarray as xr
except ImportError:  # xarray is optional: its row is left out
    xr = None

SHAPE = (10, 11, 12)


class ArrayInterfaceOnly:
    """Exposes an array through ``__array_interface__`` only."""

    def __init__(self, array: np.ndarray) -> None:
        self.array = array
        self.__array_interface__ = array.__array_interface__


class DLPackOnly:
    """Exposes an array through DLPack only."""

    def __init__(self, array: np.ndarray) -> None:
        self.array = array

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


@dataclass
class Row:
    """One source object, timed through every function."""

    key: str
    title: str
    short: str  # the row's name in the chart
    obj: object
    baseline: str  # the NumPy statement the others are compared with
    target: str  # the project's target for this row, in words ("" for reference rows)


def build_rows() -> list[Row]:
    a = gb.zeros(SHAPE, backend="gt:cpu_ifirst")
    rows = [
        Row("numpy", f"numpy.ndarray {SHAPE} float64", "numpy.ndarray", a, "np.asarray(x)", "array_info <= 0.5 us"),
        Row("field", "gridbuf.Field of it", "gridbuf.Field", gb.Field(a), "np.asarray(x)", "<= 2x numpy.asarray"),
    ]
    if xr is not None:
        rows.append(
            Row("xarray", "xarray.DataArray of it, dims I, J, K", "DataArray, dims I, J, K", xr.DataArray(a, dims=("I", "J", "K")), "np.asarray(x)", "<= 2x numpy.asarray")
        )
        rows.append(Row("xarray_other", "xarray.DataArray of it, dims x, y, z", "DataArray, dims x, y, z", xr.DataArray(a, dims=("x", "y", "z")), "np.asarray(x)", "<= 2x numpy.asarray"))
    rows += [
        Row("memoryview", "memoryview of it (reference)", "memoryview", memoryview(a), "np.asarray(x)", ""),
        Row("array_interface", "object with __array_interface__ only (reference)", "__array_interface__ only", ArrayInterfaceOnly(a), "np.asarray(x)", ""),
        Row("dlpack", "DLPack-only producer (reference)", "DLPack only", DLPackOnly(a), "np.from_dlpack(x)", ""),
    ]
    return rows


def candidates(row: Row) -> list[Candidate]:
    ns = {"gb": gb, "np": np, "x": row.obj}
    stmts = ["gb.array_info(x)", "gb.as_numpy(x)", row.baseline]
    return [Candidate(s, s, ns) for s in stmts]


def sanity_check(rows: list[Row]) -> None:
    """Checks (not timings) that the compared statements see the same memory."""
    for row in rows:
        ref = np.from_dlpack(row.obj) if row.baseline.startswith("np.from_dlpack") else np.asarray(row.obj)
        view = gb.as_numpy(row.obj)
        info = gb.array_info(row.obj)
        if not (np.shares_memory(view, ref) and view.shape == ref.shape and info.ptr == ref.__array_interface__["data"][0]):
            raise SystemExit(f"{row.title}: gridbuf and NumPy disagree on the memory")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7, help="repeats per statement (median reported)")
    parser.add_argument("--repeat-seconds", type=float, default=0.15, help="target duration of one repeat")
    _plot.add_argument(parser)
    args = parser.parse_args()
    plot_dir = _plot.prepare(args.plot)

    start = time.perf_counter()
    rows = build_rows()
    sanity_check(rows)
    print("# gridbuf interface benchmark\n")
    print_machine_info()
    print(f"- xarray: {xr.__version__ if xr is not None else 'not installed (its rows are left out)'}")
    print(f"- repeats: {args.repeats} (median), about {args.repeat_seconds} s per repeat")
    print()

    results: dict[str, list[Result]] = {}
    table = []
    for row in rows:
        res = compare(candidates(row), repeats=args.repeats, repeat_seconds=args.repeat_seconds)
        results[row.key] = res
        base = res[-1]
        for i, r in enumerate(res):
            table.append(
                [
                    row.title if i == 0 else "",
                    f"`{r.label}`",
                    f"{fmt_time(r.median, 'us')} us",
                    f"{fmt_time(r.best, 'us')} us",
                    f"{r.median / base.median:.2f}x",
                ]
            )
        print(f"measured: {row.title}", file=sys.stderr, flush=True)
    print(markdown_table(["source", "statement", "median", "best", f"time / {rows[0].baseline.split('(')[0]} (or from_dlpack)"], table))
    print()
    print_targets(rows, results)
    print(f"\n(total run time {time.perf_counter() - start:.0f} s)")
    if plot_dir:
        plot(plot_dir, rows, results, args.repeats)


def plot(directory: str, rows: list[Row], results: dict[str, list[Result]], repeats: int) -> None:
    """The table's medians as a bar chart: a group per source object, a bar per function."""
    values = {(row.short, r.label): r.median for row in rows for r in results[row.key]}
    _plot.bar_chart(
        _plot.path(directory, __file__),
        benchmark="bench_interfaces",
        title="array_info / as_numpy against numpy.asarray",
        shape=f"{'x'.join(map(str, SHAPE))} float64, gt:cpu_ifirst",
        panels=[_plot.Panel(values, xlabel="source object x")],
        repeats=repeats,
        note="round-robin over the statements of a source",
    )


def print_targets(rows: list[Row], results: dict[str, list[Result]]) -> None:
    out = []
    for row in rows:
        if not row.target:
            continue
        info, as_np, base = (r.median for r in results[row.key])
        if row.key == "numpy":
            for name, t in (("array_info", info), ("as_numpy", as_np)):
                out.append([f"{row.title}: {name} <= 0.5 us", f"{fmt_time(t, 'us')} us", "yes" if t <= 0.5e-6 else "NO"])
        else:
            for name, t in (("array_info", info), ("as_numpy", as_np)):
                ratio = t / base
                out.append([f"{row.title}: {name} <= 2x numpy.asarray", f"{ratio:.2f}x", "yes" if ratio <= 2.0 else "NO"])
    print("## Targets (this run)\n")
    print(markdown_table(["target", "measured", "met"], out))


if __name__ == "__main__":
    main()
