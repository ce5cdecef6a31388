"""Device benchmark: GPU allocation and transfers through gridbuf against plain CuPy, and the
cost of a mirrored field's sync against a plain copy of the same bytes.

    .venv/bin/python benchmarks/bench_device.py [--repeats 7] [--repeat-seconds 0.15]

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
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import gridbuf as gb  # noqa: E402
from _timing import Candidate, compare, fmt_time, markdown_table, print_machine_info  # noqa: E402

SHAPES = [(10, 11, 12), (128, 128, 80)]


def _unit(seconds: float) -> str:
    return "us" if seconds < 1e-3 else "ms"


def _cell(seconds: float) -> str:
    u = _unit(seconds)
    return f"{fmt_time(seconds, u)} {u}"


def standin_rows(repeats: int, repeat_seconds: float) -> list[list[str]]:
    rows = []
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
        rows.append(
            [
                "x".join(map(str, shape)),
                f"{src.size / 2**20:.2f} MiB",
                _cell(sync),
                _cell(copy),
                f"{sync / copy:.2f}",
                _cell(clean),
                _cell(access),
            ]
        )
    return rows


def gpu_tables(repeats: int, repeat_seconds: float) -> str | None:
    if importlib.util.find_spec("cupy") is None:
        return "GPU rows skipped: CuPy is not installed (device zeros, from_array and sync on a GPU were not measured)."
    import cupy as cp

    try:
        if cp.cuda.runtime.getDeviceCount() == 0:
            return "GPU rows skipped: no GPU is visible."
    except Exception as exc:  # noqa: BLE001 - no usable CUDA runtime
        return f"GPU rows skipped: the CUDA runtime reports no usable GPU ({exc})."
    sync = cp.cuda.Device().synchronize
    alloc_rows, copy_rows = [], []
    for shape in SHAPES:
        label = "x".join(map(str, shape))
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
        alloc_rows.append([label, _cell(z), _cell(cz), f"{z / cz:.2f}", _cell(fa), _cell(ca), f"{fa / ca:.2f}"])

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
        copy_rows.append([label, f"{pair._host_span.size / 2**20:.2f} MiB", _cell(s), _cell(p), f"{s / p:.2f}"])
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
    args = parser.parse_args()
    print("## Machine")
    print_machine_info()
    print()
    print("## Mirrored field sync, host stand-in device (median per call)")
    print()
    print(
        markdown_table(
            ["shape (f8)", "bytes", "sync (1 copy)", "np.copyto same bytes", "ratio", "sync, nothing to copy", "access host, current"],
            standin_rows(args.repeats, args.repeat_seconds),
        )
    )
    print()
    print("## GPU (median per call, device synchronised)")
    print()
    print(gpu_tables(args.repeats, args.repeat_seconds))


if __name__ == "__main__":
    main()
