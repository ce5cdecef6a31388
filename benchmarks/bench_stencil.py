"""Stencil-call benchmark: gridbuf's binder and native kernels against NumPy and, when importable,
GT4Py's stencils (its numpy, gt:cpu_ifirst and gt:cpu_kfirst backends).

Prints markdown tables of what it measured in this run and how the ratios compare with the
project's targets. It never asserts anything about timings; it does check that every library
computed the same values before it times them.

    .venv/bin/python benchmarks/bench_stencil.py [--repeats 7] [--repeat-seconds 0.15] [--sizes 128 256] [--plot DIR]

Two parts:

- Per-call overhead on a 16x16x16 float64 copy (arrays on the gt:cpu_kfirst layout): a normal
  gridbuf call, a bound call, plain NumPy ``b[...] = a``, GT4Py's stencils called normally, and
  gridbuf's ``noop`` kernel (the same signature as copy, does nothing), which times the binder
  alone.
- Throughput of copy, laplacian, hdiff and tridiag on an N x N x 80 domain (fields carry a
  two-point halo in I and J, origin (2, 2, 0)) for gridbuf on the C, gt:cpu_ifirst and
  gt:cpu_kfirst layouts, a NumPy-vectorised reference (C order), and GT4Py's two CPU backends on
  the layouts they allocate. Copy's bandwidth is also compared with ``numpy.copyto``.

GT4Py compiles its stencils on first use (about 15 s each) into ``.gt_cache`` under a work
directory in the system's temporary directory, so later runs only load them. Threads: gridbuf
uses ``GRIDBUF_NUM_THREADS`` (default all cores), GT4Py's backends use OpenMP
(``OMP_NUM_THREADS``, default all cores).

``--plot DIR`` draws the tables' medians as bar charts (needs matplotlib): DIR/bench_stencil_overhead.png
and DIR/bench_stencil_throughput.png (each where its part ran).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import gridbuf as gb  # noqa: E402
import _plot  # noqa: E402
from _timing import Candidate, Result, compare, fmt_time, markdown_table, print_machine_info  # noqa: E402
from gridbuf import kernels  # noqa: E402

try:
    import gt4py.storage as gs
except ImportError:  # gt4py is optional: its columns are left out
    gs = None

LAYOUTS = ("C", "gt:cpu_ifirst", "gt:cpu_kfirst")
GT4PY_BACKENDS = ("gt:cpu_ifirst", "gt:cpu_kfirst")
KERNELS = ("copy", "laplacian", "hdiff", "tridiag")
HALO = 2
NZ = 80
SMALL = (16, 16, 16)


# ---------------------------------------------------------------- NumPy references
# Each writes the domain of `out` (origin (HALO, HALO, 0)) from fields with a HALO-point halo.
def _dom(a: np.ndarray, di: int = 0, dj: int = 0) -> np.ndarray:
    ni, nj = a.shape[0] - 2 * HALO, a.shape[1] - 2 * HALO
    return a[HALO + di : HALO + di + ni, HALO + dj : HALO + dj + nj]


def np_copy(inp: np.ndarray, out: np.ndarray) -> None:
    _dom(out)[...] = _dom(inp)


def np_laplacian(inp: np.ndarray, out: np.ndarray) -> None:
    _dom(out)[...] = -4.0 * _dom(inp) + _dom(inp, -1) + _dom(inp, 1) + _dom(inp, 0, -1) + _dom(inp, 0, 1)


def np_hdiff(inp: np.ndarray, coeff: np.ndarray, out: np.ndarray) -> None:
    # lap on the domain widened by one point in I and J
    ni, nj = inp.shape[0] - 2 * HALO, inp.shape[1] - 2 * HALO
    c = inp[1 : ni + 3, 1 : nj + 3]
    lap = 4.0 * c - (inp[0 : ni + 2, 1 : nj + 3] + inp[2 : ni + 4, 1 : nj + 3] + inp[1 : ni + 3, 0 : nj + 2] + inp[1 : ni + 3, 2 : nj + 4])
    flx = lap[1:, 1:-1] - lap[:-1, 1:-1]  # at i in [-1, ni), j in [0, nj)
    flx[flx * (inp[2 : ni + 3, 2 : nj + 2] - inp[1 : ni + 2, 2 : nj + 2]) > 0] = 0.0
    fly = lap[1:-1, 1:] - lap[1:-1, :-1]
    fly[fly * (inp[2 : ni + 2, 2 : nj + 3] - inp[2 : ni + 2, 1 : nj + 2]) > 0] = 0.0
    _dom(out)[...] = _dom(inp) - _dom(coeff) * (flx[1:] - flx[:-1] + fly[:, 1:] - fly[:, :-1])


def np_tridiag(a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray, x: np.ndarray) -> None:
    a, b, c, d, xo = _dom(a), _dom(b), _dom(c), _dom(d), _dom(x)
    nk = b.shape[2]
    cp = np.empty_like(b)
    dp = np.empty_like(b)
    cp[:, :, 0] = c[:, :, 0] / b[:, :, 0]
    dp[:, :, 0] = d[:, :, 0] / b[:, :, 0]
    for k in range(1, nk):
        m = b[:, :, k] - a[:, :, k] * cp[:, :, k - 1]
        cp[:, :, k] = c[:, :, k] / m
        dp[:, :, k] = (d[:, :, k] - a[:, :, k] * dp[:, :, k - 1]) / m
    xo[:, :, nk - 1] = dp[:, :, nk - 1]
    for k in range(nk - 2, -1, -1):
        xo[:, :, k] = dp[:, :, k] - cp[:, :, k] * xo[:, :, k + 1]


NUMPY_REFS: dict[str, Callable[..., None]] = {
    "copy": np_copy,
    "laplacian": np_laplacian,
    "hdiff": np_hdiff,
    "tridiag": np_tridiag,
}


def kernel_inputs(name: str, shape: tuple[int, ...], rng: np.random.Generator) -> list[np.ndarray]:
    """C-ordered random inputs of kernel ``name`` (tridiag's system is diagonally dominant)."""
    n_in = {"copy": 1, "laplacian": 1, "hdiff": 2, "tridiag": 4}[name]
    data = [rng.random(shape) for _ in range(n_in)]
    if name == "hdiff":
        data[1] *= 0.025  # coeff
    if name == "tridiag":
        data[1] += 4.0
    return data


# ---------------------------------------------------------------- GT4Py
def gt4py_workdir() -> str:
    """Where GT4Py builds and caches its stencils; chdir'ed into before building (GT4Py's build
    runs setuptools in the working directory, which must not be the repository root)."""
    path = os.path.join(tempfile.gettempdir(), "gridbuf_bench_gt4py")
    os.makedirs(path, exist_ok=True)
    return path


def gt4py_stencils(backends: tuple[str, ...]) -> dict[tuple[str, str], Any]:
    """{(kernel, backend): compiled GT4Py stencil}; empty without gt4py."""
    if gs is None:
        return {}
    import _gt4py_stencils

    out = {}
    for backend in backends:
        for name in KERNELS:
            t0 = time.perf_counter()
            out[(name, backend)] = _gt4py_stencils.build(name, backend)
            print(f"gt4py {backend} {name}: ready in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    return out


# ---------------------------------------------------------------- part 1: per-call overhead
def overhead_candidates(stencils: dict[tuple[str, str], Any]) -> list[Candidate]:
    rng = np.random.default_rng(0)
    src = rng.random(SMALL)
    a = gb.from_array(src, backend="gt:cpu_kfirst")
    b = gb.zeros(SMALL, backend="gt:cpu_kfirst")
    fa, fb = gb.Field.from_array(src, backend="gt:cpu_kfirst"), gb.Field.zeros(SMALL, backend="gt:cpu_kfirst")
    ns: dict[str, Any] = {"kernels": kernels, "a": a, "b": b, "fa": fa, "fb": fb}
    ns["run_copy"] = kernels.copy.bind(a, b)
    ns["run_noop"] = kernels.noop.bind(a, b)
    cands = [
        Candidate("gridbuf: `kernels.copy(a, b)`", "kernels.copy(a, b)", ns),
        Candidate("gridbuf: bound `run_copy()`", "run_copy()", ns),
        Candidate("gridbuf: `kernels.copy(fa, fb)` on gb.Field", "kernels.copy(fa, fb)", ns),
        Candidate("gridbuf binding alone: `kernels.noop(a, b)`", "kernels.noop(a, b)", ns),
        Candidate("gridbuf binding alone: bound `run_noop()`", "run_noop()", ns),
        Candidate("numpy: `b[...] = a`", "b[...] = a", ns),
    ]
    for backend in ("numpy", "gt:cpu_kfirst"):
        st = stencils.get(("copy", backend))
        if st is None:
            continue
        key = backend.replace(":", "_")
        ns[f"st_{key}"] = st
        ns[f"ga_{key}"] = gs.from_array(src, backend=backend)
        ns[f"gb_{key}"] = gs.zeros(SMALL, np.float64, backend=backend)
        cands.append(Candidate(f"gt4py {backend}: `st(a, b)`", f"st_{key}(ga_{key}, gb_{key})", ns))
    # every candidate copies correctly (noop excepted) before it is timed
    for stmt in ("kernels.copy(a, b)", "run_copy()", "kernels.copy(fa, fb)"):
        b[...] = 0
        fb[...] = 0
        exec(stmt, ns)
        if not (np.array_equal(b, src) or np.array_equal(np.asarray(fb), src)):
            raise SystemExit(f"{stmt} did not copy")
    for backend in ("numpy", "gt:cpu_kfirst"):
        key = backend.replace(":", "_")
        if f"st_{key}" in ns:
            ns[f"st_{key}"](ns[f"ga_{key}"], ns[f"gb_{key}"])
            if not np.array_equal(np.asarray(ns[f"gb_{key}"]), src):
                raise SystemExit(f"gt4py {backend} copy did not copy")
    return cands


def run_overhead(stencils: dict, repeats: int, repeat_seconds: float) -> dict[str, float]:
    res = compare(overhead_candidates(stencils), repeats=repeats, repeat_seconds=repeat_seconds)
    base = next(r for r in res if r.label.startswith("numpy"))
    rows = [[r.label, f"{fmt_time(r.median, 'us')} us", f"{fmt_time(r.best, 'us')} us", f"{r.median / base.median:.2f}x"] for r in res]
    print(f"## Per-call overhead: copy of {SMALL[0]}x{SMALL[1]}x{SMALL[2]} float64 (gt:cpu_kfirst layout)\n")
    print(markdown_table(["library: statement", "median", "best", "time / NumPy"], rows))
    print()
    return {r.label: r.median for r in res}


# ---------------------------------------------------------------- part 2: throughput
def throughput_row(
    name: str, n: int, stencils: dict, repeats: int, repeat_seconds: float
) -> tuple[dict[str, float], dict[str, float]]:
    """Times kernel ``name`` on an n x n x NZ domain; returns ({column: median}, {column: max |error|})."""
    shape = (n + 2 * HALO, n + 2 * HALO, NZ)
    origin, domain = (HALO, HALO, 0), (n, n, NZ)
    data = kernel_inputs(name, shape, np.random.default_rng(n))
    ref_out = np.zeros(shape)
    NUMPY_REFS[name](*data, ref_out)
    want = _dom(ref_out)

    cands: list[Candidate] = []
    outs: dict[str, Any] = {}
    kernel = getattr(kernels, name)
    for layout in LAYOUTS:
        args = [gb.from_array(d, backend=layout) for d in data] + [gb.zeros(shape, backend=layout)]
        call = kernel.bind(*args, origin=origin, domain=domain)  # one checked call, rerun below
        call()
        outs[f"gridbuf {layout}"] = args[-1]
        cands.append(Candidate(f"gridbuf {layout}", lambda a=args: kernel(*a, origin=origin, domain=domain)))
    c_args = [np.ascontiguousarray(d) for d in data] + [np.zeros(shape)]
    ref = NUMPY_REFS[name]
    ref(*c_args)
    outs["numpy (C)"] = c_args[-1]
    cands.append(Candidate("numpy (C)", lambda a=c_args: ref(*a)))
    for backend in GT4PY_BACKENDS:
        st = stencils.get((name, backend))
        if st is None:
            continue
        g_args = [gs.from_array(d, backend=backend, aligned_index=origin) for d in data]
        g_args.append(gs.zeros(shape, np.float64, backend=backend, aligned_index=origin))
        st(*g_args, origin=origin, domain=domain)
        outs[f"gt4py {backend}"] = g_args[-1]
        cands.append(Candidate(f"gt4py {backend}", lambda a=g_args, s=st: s(*a, origin=origin, domain=domain)))
    errors = {label: float(np.max(np.abs(_dom(np.asarray(o)) - want))) for label, o in outs.items()}
    for label, err in errors.items():
        if not err <= 1e-10 * max(1.0, float(np.max(np.abs(want)))):
            raise SystemExit(f"{name} {n}: {label} differs from the NumPy reference by {err:g}")
    res = compare(cands, repeats=repeats, repeat_seconds=repeat_seconds)
    return {r.label: r.median for r in res}, errors


def copy_bandwidth(n: int, repeats: int, repeat_seconds: float) -> dict[str, float]:
    """GB/s (bytes read + bytes written per second) of full-array copies of n x n x NZ float64."""
    shape = (n, n, NZ)
    src = np.random.default_rng(1).random(shape)
    a, b = gb.from_array(src, backend="C"), gb.zeros(shape, backend="C")
    ai, bi = gb.from_array(src, backend="gt:cpu_ifirst"), gb.zeros(shape, backend="gt:cpu_ifirst")
    bc = np.empty_like(src)
    cands = [
        Candidate("numpy.copyto (C)", lambda: np.copyto(bc, src)),
        Candidate("gridbuf copy (C)", lambda: kernels.copy(a, b)),
        Candidate("gridbuf copy (gt:cpu_ifirst)", lambda: kernels.copy(ai, bi)),
    ]
    res = compare(cands, repeats=repeats, repeat_seconds=repeat_seconds)
    return {r.label: 2 * src.nbytes / r.median / 1e9 for r in res}


def run_throughput(stencils: dict, sizes: list[int], repeats: int, repeat_seconds: float) -> dict:
    columns = [f"gridbuf {lay}" for lay in LAYOUTS] + ["numpy (C)"] + [f"gt4py {b}" for b in GT4PY_BACKENDS if gs is not None]
    table, results = [], {}
    for n in sizes:
        for name in KERNELS:
            med, err = throughput_row(name, n, stencils, repeats, repeat_seconds)
            results[(name, n)] = med
            best_gb = min(v for k, v in med.items() if k.startswith("gridbuf"))
            gt = [v for k, v in med.items() if k.startswith("gt4py")]
            cells = [f"{fmt_time(med[c], 'ms')}" if c in med else "-" for c in columns]
            vs = f"{min(gt) / best_gb:.2f}x" if gt else "-"
            table.append([f"{n}x{n}x{NZ}", name, *cells, vs, f"{max(err.values()):.1e}"])
            print(f"measured: {name} {n}", file=sys.stderr, flush=True)
    print(f"## Throughput: ms per call, N x N x {NZ} float64 domain, origin (2, 2, 0)\n")
    print(markdown_table(["domain", "kernel", *columns, "best GT4Py / best gridbuf", "max abs error"], table))
    print()
    bw = copy_bandwidth(max(sizes), repeats, repeat_seconds)
    print(f"## Copy bandwidth, {max(sizes)}x{max(sizes)}x{NZ} float64, whole arrays (read + write bytes per second)\n")
    print(markdown_table(["copy", "GB/s", "of numpy.copyto"], [[k, f"{v:.2f}", f"{v / bw['numpy.copyto (C)']:.0%}"] for k, v in bw.items()]))
    print()
    return {"kernels": results, "bandwidth": bw}


def print_targets(overhead: dict[str, float], thr: dict) -> None:
    rows = []
    if overhead:
        noop = overhead["gridbuf binding alone: `kernels.noop(a, b)`"]
        rows.append(("binding alone (noop kernel, normal call) <= 1 us", f"{noop * 1e6:.2f} us", "yes" if noop <= 1e-6 else "NO"))
        call = overhead["gridbuf: `kernels.copy(a, b)`"]
        gt_kf = overhead.get("gt4py gt:cpu_kfirst: `st(a, b)`")
        if gt_kf is not None:
            r = gt_kf / call
            rows.append(("16x16x16 copy call >= 4x faster than GT4Py gt:cpu_kfirst (gt4py / gridbuf)", f"{r:.1f}x", "yes" if r >= 4 else "NO"))
    if not thr:
        print("## Targets (ratios of the medians above, this run)\n")
        print(markdown_table(["target", "measured", "met"], rows))
        return
    per_layout = []
    for (name, n), med in thr["kernels"].items():
        gt = {k: v for k, v in med.items() if k.startswith("gt4py")}
        if not gt:
            continue
        best_gt = min(gt.values())
        best_gb = min(v for k, v in med.items() if k.startswith("gridbuf"))
        r = best_gt / best_gb
        rows.append((f"{name} {n}x{n}x{NZ}: gridbuf at least as fast as GT4Py's faster CPU backend (gt4py / gridbuf, best of each)", f"{r:.2f}x", "yes" if r >= 1.0 else "NO"))
        per_layout.append(
            [f"{name} {n}x{n}x{NZ}"]
            + [f"{best_gt / med[f'gridbuf {layout}']:.2f}x" for layout in LAYOUTS]
            + [f"{gt[f'gt4py {layout}'] / med[f'gridbuf {layout}']:.2f}x" for layout in GT4PY_BACKENDS if f"gt4py {layout}" in gt]
        )
    bw = thr["bandwidth"]
    r = bw["gridbuf copy (C)"] / bw["numpy.copyto (C)"]
    rows.append(("copy bandwidth >= 80% of numpy.copyto (C layout)", f"{r:.0%}", "yes" if r >= 0.8 else "NO"))
    print("## Targets (ratios of the medians above, this run)\n")
    print(markdown_table(["target", "measured", "met"], rows))
    if per_layout:
        print("\n## Per layout (information): GT4Py time / gridbuf time\n")
        headers = ["kernel"] + [f"vs GT4Py's faster backend, gridbuf {lay}" for lay in LAYOUTS]
        headers += [f"same layout: GT4Py {b} vs gridbuf {b}" for b in GT4PY_BACKENDS]
        print(markdown_table(headers[: len(per_layout[0])], per_layout))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7, help="repeats per statement (median reported)")
    parser.add_argument("--repeat-seconds", type=float, default=0.15, help="target duration of one repeat")
    parser.add_argument("--sizes", type=int, nargs="+", default=[128, 256], help="horizontal domain sizes N")
    parser.add_argument("--part", choices=["all", "overhead", "throughput"], default="all", help="which part to run")
    _plot.add_argument(parser)
    args = parser.parse_args()
    plot_dir = _plot.prepare(os.path.abspath(args.plot) if args.plot else None)  # before the chdir below

    start = time.perf_counter()
    if gs is not None:
        os.chdir(gt4py_workdir())
    stencils = gt4py_stencils(("numpy", *GT4PY_BACKENDS))
    print("# gridbuf stencil-call benchmark\n")
    print_machine_info()
    print(f"- OMP_NUM_THREADS (GT4Py): {os.environ.get('OMP_NUM_THREADS', 'not set')}")
    print(f"- repeats: {args.repeats} (median), about {args.repeat_seconds} s per repeat\n")
    overhead = run_overhead(stencils, args.repeats, args.repeat_seconds) if args.part != "throughput" else {}
    thr = run_throughput(stencils, args.sizes, args.repeats, args.repeat_seconds) if args.part != "overhead" else {}
    print_targets(overhead, thr)
    print(f"\n(total run time {time.perf_counter() - start:.0f} s)")
    if plot_dir:
        plot(plot_dir, overhead, thr, args.repeats)


def plot(directory: str, overhead: dict[str, float], thr: dict, repeats: int) -> None:
    """The tables' medians as bar charts: the per-call overhead (a bar per statement, coloured by
    library) and the kernels' time per call (a panel per domain size, a bar per library/layout)."""
    note = "round-robin over the statements of a table row; GT4Py's stencils built beforehand (build not timed)"
    if overhead:
        values = {}
        for label, t in overhead.items():
            lib, _, stmt = label.partition(": ")
            values[(stmt.replace("`", ""), lib)] = t
        _plot.bar_chart(
            _plot.path(directory, __file__, "overhead"),
            benchmark="bench_stencil",
            title="per-call overhead of a stencil call (copy; noop: the binder alone)",
            shape=f"{'x'.join(map(str, SMALL))} float64, gt:cpu_kfirst layout",
            panels=[_plot.Panel(values)],
            repeats=repeats,
            note=note,
        )
    if thr:
        sizes = sorted({n for _, n in thr["kernels"]})
        panels = [
            _plot.Panel(
                {(name, col): t for (name, m), med in thr["kernels"].items() if m == n for col, t in med.items()},
                title=f"{n}x{n}x{NZ}",
            )
            for n in sizes
        ]
        _plot.bar_chart(
            _plot.path(directory, __file__, "throughput"),
            benchmark="bench_stencil",
            title="native kernels against NumPy and GT4Py, time per call",
            shape=f"N x N x {NZ} float64 domains, two-point halo in I and J",
            panels=panels,
            repeats=repeats,
            note=note,
        )


if __name__ == "__main__":
    main()
