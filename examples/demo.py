"""gridbuf demo: allocate fields for several presets, look at their memory, time them against NumPy.

Run it with ``.venv/bin/python examples/demo.py`` (or ``bash scripts/demo.sh``, which builds first).
Part 3 runs a horizontal-diffusion time loop through the stencil binder; part 4 defines a
gtscript stencil and times it from definition to first result, beside GT4Py's build of the same
definition when GT4Py is installed; part 5 runs a halo exchange on 2 MPI ranks
(``examples/halo_exchange_demo.py`` under the venv's ``mpiexec``) and checks it against the
global array. It takes about a minute, half of it GT4Py's C++ build when GT4Py is installed.
benchmarks/bench_allocation.py, bench_stencil.py and bench_gtscript.py do the thorough measurements.
"""

from __future__ import annotations

import importlib.util
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
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


def numpy_hdiff(inp: np.ndarray, coeff: np.ndarray, out: np.ndarray, h: int = 2) -> None:
    """What gb.kernels.hdiff computes, vectorised with NumPy, on the interior of fields with an
    h-point halo in I and J (h >= 2)."""
    ni, nj = inp.shape[0] - 2 * h, inp.shape[1] - 2 * h

    def at(di: int, dj: int, pad: int = 0) -> np.ndarray:  # inp shifted by (di, dj), interior widened by pad
        return inp[h + di - pad : h + di + ni + pad, h + dj - pad : h + dj + nj + pad]

    lap = 4.0 * at(0, 0, 1) - (at(-1, 0, 1) + at(1, 0, 1) + at(0, -1, 1) + at(0, 1, 1))
    flx = lap[1:, 1:-1] - lap[:-1, 1:-1]  # flux between i and i+1, for i = -1 .. ni-1
    flx[flx * (inp[h : h + ni + 1, h : h + nj] - inp[h - 1 : h + ni, h : h + nj]) > 0] = 0.0
    fly = lap[1:-1, 1:] - lap[1:-1, :-1]
    fly[fly * (inp[h : h + ni, h : h + nj + 1] - inp[h : h + ni, h - 1 : h + nj]) > 0] = 0.0
    out[h : h + ni, h : h + nj] = at(0, 0) - coeff[h : h + ni, h : h + nj] * (flx[1:] - flx[:-1] + fly[:, 1:] - fly[:, :-1])


def time_loop(step_ab, step_ba, steps: int) -> float:
    """Median seconds per step of ``steps`` steps that alternate a -> b and b -> a."""
    step_ab(), step_ba()  # warm-up: first touch, thread pools
    times = []
    for s in range(steps):
        t0 = time.perf_counter()
        (step_ab if s % 2 == 0 else step_ba)()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def part3_hdiff_loop(steps: int = 10) -> None:
    n, nk, h = 256, 80, 2
    shape, origin, domain = (n + 2 * h, n + 2 * h, nk), (h, h, 0), (n, n, nk)
    x = np.linspace(-1.0, 1.0, shape[0])[:, None, None]
    y = np.linspace(-1.0, 1.0, shape[1])[None, :, None]
    rng = np.random.default_rng(3)
    init = np.exp(-8 * (x**2 + y**2)) * np.ones(nk) + 0.01 * rng.random(shape)
    print(
        f"\n3) Horizontal diffusion, {n}x{n}x{nk} float64 domain with a {h}-point halo in I and J "
        f"(fields {shape}),\n   {steps} time steps (median time per step); halos stay fixed\n"
    )
    # NumPy: the same loop on C-ordered arrays.
    a_np, b_np, coeff_np = init.copy(), init.copy(), np.full(shape, 0.025)
    t_np = time_loop(lambda: numpy_hdiff(a_np, coeff_np, b_np), lambda: numpy_hdiff(b_np, coeff_np, a_np), steps)
    rows = [["NumPy (C order)", "vectorised slices", f"{t_np * 1e3:.2f} ms", "1.00x", "-"]]
    for backend in ["C", "gt:cpu_ifirst", "gt:cpu_kfirst"]:
        a = gb.from_array(init, backend=backend, halo=(h, h, 0))
        b = gb.from_array(init, backend=backend, halo=(h, h, 0))
        coeff = gb.full(shape, 0.025, backend=backend)
        # Checked once here; each step reruns the kernel with no per-call checks.
        step_ab = gb.kernels.hdiff.bind(a, coeff, b, origin=origin, domain=domain)
        step_ba = gb.kernels.hdiff.bind(b, coeff, a, origin=origin, domain=domain)
        t = time_loop(step_ab, step_ba, steps)
        diff = max(np.max(np.abs(a - a_np)), np.max(np.abs(b - b_np)))  # same number of steps taken
        rows.append([f"gridbuf {backend}", "gb.kernels.hdiff, bound", f"{t * 1e3:.2f} ms", f"{t_np / t:.1f}x", f"{diff:.1e}"])
    print_table(["storage", "how", "time / step", "speed-up", "max |gridbuf - NumPy|"], rows)
    print("\n  (gb.kernels.* use GRIDBUF_NUM_THREADS threads, default all cores; benchmarks/bench_stencil.py compares with GT4Py)")


# A gtscript definition, written once and loaded twice: with gridbuf's gtscript and with GT4Py's.
STENCIL_SOURCE = """
from {frontend} import gtscript
from {frontend}.gtscript import PARALLEL, Field, computation, interval


@gtscript.function
def lap(phi):
    return -4.0 * phi + phi[1, 0, 0] + phi[-1, 0, 0] + phi[0, 1, 0] + phi[0, -1, 0]


def smooth(inp: Field[float], out: Field[float], *, w: float):
    with computation(PARALLEL), interval(...):
        tmp = lap(inp)
        out = inp - w * lap(tmp) if inp > 0.0 else inp
"""


def load_definition(frontend: str, where: str):
    """The module of STENCIL_SOURCE for ``frontend`` ("gridbuf" or "gt4py.cartesian"), from a file
    (GT4Py reads a definition's source)."""
    name = "demo_stencil_" + frontend.replace(".", "_")
    path = os.path.join(where, name + ".py")
    with open(path, "w") as fh:
        fh.write(STENCIL_SOURCE.format(frontend=frontend))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def definition_to_first_result(gtscript, definition, backend: str, inp, out, **call) -> float:
    """Seconds from ``gtscript.stencil(...)`` of ``definition`` to its first result in ``out``."""
    t0 = time.perf_counter()
    stencil = gtscript.stencil(backend=backend, definition=definition)
    stencil(inp, out, **call)
    return time.perf_counter() - t0


def part4_gtscript(where: str) -> None:
    n, nk, h = 128, 64, 2
    shape, call = (n + 2 * h, n + 2 * h, nk), {"w": 0.05, "origin": (h, h, 0), "domain": (n, n, nk)}
    init = np.random.default_rng(5).random(shape) - 0.3
    print(f"\n4) A gtscript stencil (a smoothing with a temporary), {n}x{n}x{nk} float64, from definition to first result\n")
    mod = load_definition("gridbuf", where)
    rows, results = [], {}
    for backend in ["gt:cpu_ifirst", "gt:cpu_kfirst"]:
        times = []
        for _ in range(5):  # a fresh definition each time: parse, plan, machine code, call
            inp, out = gb.from_array(init, backend=backend), gb.zeros(shape, backend=backend)
            times.append(definition_to_first_result(mod.gtscript, mod.smooth, backend, inp, out, **call))
        results[("gridbuf", backend)] = np.array(out)
        rows.append([f"gridbuf.gtscript, {backend}", f"{statistics.median(times) * 1e3:.1f} ms", "median of 5", "-"])
    if importlib.util.find_spec("gt4py") is None:
        rows.append(["GT4Py", "-", "not installed (pip install -r requirements-dev.txt)", "-"])
    else:
        os.environ.setdefault("GT_CACHE_ROOT", os.path.join(where, "gt_cache"))  # a fresh build cache
        backends = os.environ.get("GRIDBUF_DEMO_GT4PY_BACKENDS", "numpy,gt:cpu_ifirst").split(",")
        try:
            gt_mod = load_definition("gt4py.cartesian", where)
        except Exception as exc:  # noqa: BLE001 - an incompatible GT4Py: say so, go on
            gt_mod, backends = None, []
            rows.append(["GT4Py", "-", f"cannot load the definition: {type(exc).__name__}: {exc}"[:90], "-"])
        for backend in backends:
            inp = gb.from_array(init, backend=backend if backend != "numpy" else "numpy")
            out = gb.zeros(shape, backend=backend if backend != "numpy" else "numpy")
            # GT4Py's C++ builds run setuptools in the working directory, which refuses this
            # repository's layout (several top-level folders): build from the scratch folder.
            cwd = os.getcwd()
            os.chdir(where)
            try:
                t = definition_to_first_result(gt_mod.gtscript, gt_mod.smooth, backend, inp, out, **call)
            except (Exception, SystemExit) as exc:  # noqa: BLE001 - e.g. no C++ compiler (setuptools exits): report and go on
                rows.append([f"GT4Py {backend}", "-", f"failed: {type(exc).__name__}: {exc}"[:90], "-"])
                continue
            finally:
                os.chdir(cwd)
            ref = results[("gridbuf", "gt:cpu_ifirst")]
            diff = float(np.max(np.abs(np.array(out) - ref)))
            rows.append([f"GT4Py {backend}", f"{t * 1e3:.0f} ms", "one build, fresh cache", f"{diff:.1e}"])
    print_table(["stencil", "definition to first result", "", "max |GT4Py - gridbuf|"], rows)
    print("\n  (same source for both; benchmarks/bench_gtscript.py times more stencils and the calls after the first)")


def part5_halo_exchange() -> None:
    print("\n5) A halo exchange on 2 MPI ranks (examples/halo_exchange_demo.py), checked against the global array\n")
    if importlib.util.find_spec("mpi4py") is None:
        print("  skipped: mpi4py is not installed (pip install -r requirements.txt installs mpi4py and mpich)")
        return
    venv_mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    mpiexec = venv_mpiexec if os.path.exists(venv_mpiexec) else shutil.which("mpiexec")
    if mpiexec is None:
        print("  skipped: no mpiexec (pip install mpich puts one in the virtual environment)")
        return
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "halo_exchange_demo.py")
    proc = subprocess.run([mpiexec, "-n", "2", sys.executable, script], capture_output=True, text=True, timeout=300)
    print(proc.stdout.rstrip() or proc.stderr[-3000:])
    if proc.returncode != 0:
        raise SystemExit(f"the halo exchange on 2 ranks failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")


if __name__ == "__main__":
    print(f"gridbuf {gb.__version__}, NumPy {np.__version__}\n")
    part1_presets()
    part2_timings()
    part3_hdiff_loop()
    with tempfile.TemporaryDirectory(prefix="gridbuf_demo_") as tmp:
        part4_gtscript(tmp)
    part5_halo_exchange()
