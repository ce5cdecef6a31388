"""gridbuf demo: allocate fields for several presets, look at their memory, time them against NumPy.

Run it with ``.venv/bin/python examples/demo.py`` (or ``bash scripts/demo.sh``, which builds first).
It takes about 10 seconds. benchmarks/bench_allocation.py does the thorough measurement.
"""

from __future__ import annotations

import math
import statistics
import timeit

import numpy as np

import gridbuf as gb

# A 64 x 64 x 40 domain with a halo of 3 cells on both sides of I and J (none along K): the
# shape includes the halo. We ask for the first interior element (3, 3, 0) to be aligned, which
# is also the default when a halo is given.
SHAPE = (70, 70, 40)
HALO = (3, 3, 0)
ALIGNED_INDEX = (3, 3, 0)
DTYPE = np.float64


def aligned_offset(strides: tuple[int, ...], index: tuple[int, ...]) -> int:
    """Byte offset of element ``index`` from element 0."""
    return sum(i * s for i, s in zip(index, strides))


def unit_stride_axis(strides: tuple[int, ...], itemsize: int) -> str:
    """Which of I, J, K is contiguous in memory."""
    return "IJK"[strides.index(itemsize)] if itemsize in strides else "-"


def describe(label: str, plan: gb.Plan, aligned_address: int | None) -> list[str]:
    """One table row: where the array's elements live and how they are aligned and padded."""
    if aligned_address is None:
        # A plan only: element 0 sits byte_offset bytes after an `alignment`-aligned base.
        aligned_address = plan.byte_offset + aligned_offset(plan.strides, plan.aligned_index)
    is_aligned = aligned_address % plan.alignment == 0
    padding = plan.nbytes - math.prod(plan.shape) * plan.itemsize
    return [
        label,
        str(plan.strides),
        str(plan.layout),
        unit_stride_axis(plan.strides, plan.itemsize),
        f"{plan.alignment} B",
        "yes" if is_aligned else "NO",
        str(plan.padded_shape),
        f"{padding} B ({100 * padding / plan.nbytes:.1f}%)",
    ]


def print_table(headers: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    for cells in [headers, ["-" * w for w in widths], *rows]:
        print("  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip())


def part1_presets() -> None:
    print(f"1) Fields of shape {SHAPE} {np.dtype(DTYPE).name}, halo {HALO}, aligned index {ALIGNED_INDEX}\n")
    rows = []
    for backend in ["C", "F", "numpy", "gt:cpu_ifirst", "gt:cpu_kfirst", "dace:cpu"]:
        field = gb.zeros(SHAPE, dtype=DTYPE, backend=backend, halo=HALO, aligned_index=ALIGNED_INDEX)
        plan = field.base.plan  # field.base is the gridbuf.Allocation that owns the memory
        address = field.ctypes.data + aligned_offset(field.strides, plan.aligned_index)
        rows.append(describe(backend, plan, address))

    # An explicit alignment pads every row along the unit-stride axis (here I) to 64 bytes.
    field = gb.zeros(SHAPE, dtype=DTYPE, backend="gt:cpu_ifirst", halo=HALO, alignment=64)
    plan = field.base.plan
    rows.append(describe("gt:cpu_ifirst + alignment=64", plan, field.ctypes.data + aligned_offset(field.strides, plan.aligned_index)))

    # GPU presets cannot allocate on this machine, but gb.plan computes the same layout.
    plan = gb.plan(SHAPE, DTYPE, backend="gt:gpu", halo=HALO, aligned_index=ALIGNED_INDEX)
    rows.append(describe("gt:gpu (plan only)", plan, None))

    print_table(
        ["preset", "strides (bytes)", "layout", "unit stride", "alignment", "aligned?", "padded shape", "padding"],
        rows,
    )

    # The result is an ordinary, writeable numpy.ndarray: slice the interior, compute, write.
    field = gb.from_array(np.random.default_rng(0).random(SHAPE), backend="gt:cpu_ifirst", halo=HALO)
    interior = field[3:-3, 3:-3, :]
    interior *= 2.0
    print(
        f"\n  type: {type(field).__name__}, base: {field.base!r}\n"
        f"  interior view {interior.shape}, F-contiguous field: {field.flags.f_contiguous}\n"
    )


def median_per_call(stmt: str, namespace: dict, repeats: int = 5, repeat_seconds: float = 0.1) -> float:
    """Median time of one call of ``stmt`` in seconds (each repeat runs ~repeat_seconds)."""
    timer = timeit.Timer(stmt, globals=namespace)
    number, took = timer.autorange()  # calls that take at least 0.2 s
    number = max(1, round(number * repeat_seconds / took))
    return statistics.median(timer.timeit(number) / number for _ in range(repeats))


def part2_timings() -> None:
    small, large = (10, 11, 12), (256, 256, 80)
    src = np.random.default_rng(0).random(large)  # C-ordered, 40 MiB
    ns = {"gb": gb, "np": np, "small": small, "large": large, "src": src}
    # (what, gridbuf statement, NumPy statement, unit)
    cases = [
        ("zeros (10, 11, 12)", "gb.zeros(small, aligned_index=(1, 1, 0))", "np.zeros(small)", "us"),
        ("zeros (256, 256, 80)", "gb.zeros(large)", "np.zeros(large)", "ms"),
        ("ones (256, 256, 80)", "gb.ones(large)", "np.full(large, 1.0)", "ms"),
        ("C array -> F layout", 'gb.from_array(src, backend="F")', "np.asfortranarray(src)", "ms"),
    ]
    print("2) Time per call, gridbuf vs NumPy (median of 5 repeats; arrays are freed after each call)\n")
    rows = []
    for what, gb_stmt, np_stmt, unit in cases:
        scale = 1e6 if unit == "us" else 1e3
        t_gb, t_np = median_per_call(gb_stmt, ns), median_per_call(np_stmt, ns)
        rows.append(
            [what, gb_stmt, f"{t_gb * scale:.3g} {unit}", np_stmt, f"{t_np * scale:.3g} {unit}", f"{t_gb / t_np:.2f}x"]
        )
    print_table(["case", "gridbuf", "time", "NumPy", "time", "gridbuf / NumPy"], rows)
    print("\n  (below 1x gridbuf is faster; benchmarks/bench_allocation.py measures more, incl. gt4py)")


if __name__ == "__main__":
    print(f"gridbuf {gb.__version__}, NumPy {np.__version__}\n")
    part1_presets()
    part2_timings()
