"""Device benchmark: GPU allocation and transfers through gridbuf against plain CuPy, and the
cost of a mirrored field's sync against a plain copy of the same bytes.

    .venv/bin/python benchmarks/bench_device.py [--repeats 7] [--repeat-seconds 0.15] [--plot DIR]

Two parts:

- stand-in (runs everywhere): a mirrored field whose device side is a second host buffer
  (``device="host"``). ``sync`` after a host write copies the whole buffer once; it is compared
  with ``numpy.copyto`` of the same bytes, and with a sync that finds nothing to copy.
- GPU (needs CuPy and a GPU, else skipped with a note): ``gb.zeros`` of a GPU preset against
  ``cupy.zeros``, ``gb.from_array`` from host memory against ``cupy.asarray``, and the sync of a
  mirrored GPU field against ``cupy.ndarray.set`` of the same bytes. Every GPU statement ends
  with a device synchronisation, so the time includes the work on the device.

Each number is the median over the repeats of the time per call; the statements of one table
row are timed round-robin in the same run (see _timing.py). Nothing is asserted about timings.

``--plot DIR`` draws the tables' medians as bar charts (needs matplotlib):
DIR/bench_device_standin.png, and DIR/bench_device_gpu.png where the GPU rows ran.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import gridbuf as gb  # noqa: E402
import _plot  # noqa: E402
from _timing import Candidate, compare, fmt_time, markdown_table, print_machine_info  # noqa: E402

SHAPES = [(10, 11, 12), (128, 128, 80)]


def _unit(seconds: float) -> str:
    return "us" if seconds < 1e-3 else "ms"


def _cell(seconds: float) -> str:
    u = _unit(seconds)
    return f"{fmt_time(seconds, u)} {u}"


def _label(shape: tuple[int, ...]) -> str:
    return "x".join(map(str, shape))


def standin_results(repeats: int, repeat_seconds: float) -> dict[str, dict[str, float]]:
    """{shape label: {"bytes", "sync", "copy", "clean", "access"}}: byte count and medians (s)."""
    out = {}
    for shape in SHAPES:
        m = gb.mirrored.zeros(shape, device="host", backend="gt:cpu_ifirst")
        pair = m._pair
        src = pair._host_span
        dst = pair._device_span

        def sync_after_write() -> None:
            m.mark_modified("host")
            m.sync()

        def sync_clean() -> None:
            m.sync()

        def copy_bytes() -> None:
            np.copyto(dst, src)

        def access_round_trip() -> None:
            with m.access("host", write=False):
                pass

        res = compare(
            [
                Candidate("sync (1 copy)", sync_after_write),
                Candidate("np.copyto same bytes", copy_bytes),
                Candidate("sync, nothing to copy", sync_clean),
                Candidate("access host, current", access_round_trip),
            ],
            repeats,
            repeat_seconds,
        )
        sync, copy, clean, access = (r.median for r in res)
        out[_label(shape)] = {"bytes": src.nbytes, "sync": sync, "copy": copy, "clean": clean, "access": access}
    return out


def standin_rows(results: dict[str, dict[str, float]]) -> list[list[str]]:
    return [
        [
            label,
            f"{r['bytes'] / 2**20:.2f} MiB",
            _cell(r["sync"]),
            _cell(r["copy"]),
            f"{r['sync'] / r['copy']:.2f}",
            _cell(r["clean"]),
            _cell(r["access"]),
        ]
        for label, r in results.items()
    ]


def gpu_results(repeats: int, repeat_seconds: float) -> tuple[dict[str, dict[str, float]] | None, str]:
    """({shape label: {"zeros", "cupy_zeros", "from_array", "cupy_asarray", "bytes", "sync",
    "set"}} or None, and the note saying why the GPU rows were skipped)."""
    if importlib.util.find_spec("cupy") is None:
        return None, "GPU rows skipped: CuPy is not installed (device zeros, from_array and sync on a GPU were not measured)."
    import cupy as cp

    try:
        if cp.cuda.runtime.getDeviceCount() == 0:
            return None, "GPU rows skipped: no GPU is visible."
    except Exception as exc:  # noqa: BLE001 - no usable CUDA runtime
        return None, f"GPU rows skipped: the CUDA runtime reports no usable GPU ({exc})."
    sync = cp.cuda.Device().synchronize
    out = {}
    for shape in SHAPES:
        label = _label(shape)
        host = np.random.default_rng(0).random(shape)

        def gb_zeros() -> None:
            gb.zeros(shape, backend="gt:gpu")
            sync()

        def cp_zeros() -> None:
            cp.zeros(shape)
            sync()

        def gb_from_array() -> None:
            gb.from_array(host, backend="gt:gpu")
            sync()

        def cp_asarray() -> None:
            cp.asarray(host)
            sync()

        res = compare(
            [
                Candidate("gb.zeros gt:gpu", gb_zeros),
                Candidate("cupy.zeros", cp_zeros),
                Candidate("gb.from_array gt:gpu", gb_from_array),
                Candidate("cupy.asarray", cp_asarray),
            ],
            repeats,
            repeat_seconds,
        )
        z, cz, fa, ca = (r.median for r in res)

        m = gb.mirrored.zeros(shape, backend="gt:gpu")
        pair = m._pair

        def mirrored_sync() -> None:
            m.mark_modified("host")
            m.sync()
            sync()

        def plain_set() -> None:
            pair._device_span.set(pair._host_span)
            sync()

        res = compare([Candidate("sync", mirrored_sync), Candidate("set", plain_set)], repeats, repeat_seconds)
        s, p = (r.median for r in res)
        out[label] = {
            "zeros": z, "cupy_zeros": cz, "from_array": fa, "cupy_asarray": ca,
            "bytes": pair._host_span.nbytes, "sync": s, "set": p,
        }
    return out, ""


def gpu_tables(results: dict[str, dict[str, float]]) -> str:
    alloc_rows, copy_rows = [], []
    for label, r in results.items():
        z, cz, fa, ca, s, p = (r[k] for k in ("zeros", "cupy_zeros", "from_array", "cupy_asarray", "sync", "set"))
        alloc_rows.append([label, _cell(z), _cell(cz), f"{z / cz:.2f}", _cell(fa), _cell(ca), f"{fa / ca:.2f}"])
        copy_rows.append([label, f"{r['bytes'] / 2**20:.2f} MiB", _cell(s), _cell(p), f"{s / p:.2f}"])
    return "\n\n".join(
        [
            markdown_table(
                [
                    "shape (f8)",
                    "gb.zeros gt:gpu",
                    "cupy.zeros",
                    "ratio",
                    "gb.from_array gt:gpu (host src)",
                    "cupy.asarray",
                    "ratio",
                ],
                alloc_rows,
            ),
            markdown_table(
                ["shape (f8)", "bytes", "mirrored sync (H2D)", "cupy set same bytes", "ratio"],
                copy_rows,
            ),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--repeat-seconds", type=float, default=0.15)
    _plot.add_argument(parser)
    args = parser.parse_args()
    plot_dir = _plot.prepare(args.plot)
    print("## Machine")
    print_machine_info()
    print()
    print("## Mirrored field sync, host stand-in device (median per call)")
    print()
    print(
        markdown_table(
            ["shape (f8)", "bytes", "sync (1 copy)", "np.copyto same bytes", "ratio", "sync, nothing to copy", "access host, current"],
            standin_rows(standin := standin_results(args.repeats, args.repeat_seconds)),
        )
    )
    print()
    print("## GPU (median per call, device synchronised)")
    print()
    gpu, skipped = gpu_results(args.repeats, args.repeat_seconds)
    print(gpu_tables(gpu) if gpu is not None else skipped)
    if plot_dir:
        plot_standin(plot_dir, standin, args.repeats)
        if gpu is not None:
            plot_gpu(plot_dir, gpu, args.repeats)
        else:
            print("(no GPU chart: the GPU rows did not run)", file=sys.stderr)


def plot_standin(directory: str, results: dict[str, dict[str, float]], repeats: int) -> str:
    """The stand-in table's medians: a group per shape, a bar per statement."""
    names = {"sync": "sync (1 copy)", "copy": "np.copyto same bytes", "clean": "sync, nothing to copy", "access": "access host, current"}
    values = {(f"{label} ({r['bytes'] / 2**20:.2f} MiB)", name): r[key] for label, r in results.items() for key, name in names.items()}
    return _plot.bar_chart(
        _plot.path(directory, __file__, "standin"),
        benchmark="bench_device",
        title="mirrored field sync, host stand-in device",
        shape=", ".join(results) + " float64, gt:cpu_ifirst",
        panels=[_plot.Panel(values, xlabel="shape (bytes)")],
        repeats=repeats,
        note="round-robin over the statements of a shape",
    )


def plot_gpu(directory: str, results: dict[str, dict[str, float]], repeats: int) -> str:
    """The GPU tables' medians: a group per operation and shape, gridbuf's bar beside CuPy's."""
    ops = (("zeros", "zeros", "cupy_zeros"), ("from_array (host source)", "from_array", "cupy_asarray"), ("mirrored sync (H2D)", "sync", "set"))
    values = {}
    for title, ours, theirs in ops:
        for label, r in results.items():
            values[(f"{title}\n{label}", "gridbuf (gt:gpu)")] = r[ours]
            values[(f"{title}\n{label}", "CuPy")] = r[theirs]
    return _plot.bar_chart(
        _plot.path(directory, __file__, "gpu"),
        benchmark="bench_device",
        title="GPU allocation and transfers against CuPy",
        shape=", ".join(results) + " float64",
        panels=[_plot.Panel(values)],
        repeats=repeats,
        note="every statement ends with a device synchronisation; CuPy: cupy.zeros, cupy.asarray, ndarray.set of the same bytes",
    )


if __name__ == "__main__":
    main()
