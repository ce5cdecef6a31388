"""gridbuf.gtscript against the native gridbuf kernels and GT4Py's backends.

The four stencils of ``_gt4py_stencils.py`` (copy, laplacian, hdiff, tridiag) run through
``gridbuf.gtscript``: the very same source file, with only its two gt4py import lines replaced by
``from gridbuf import gtscript`` ones. Three tables:

1. Time per call on an N x N x NZ float64 domain (default 256 x 256 x 80; halo 2): gridbuf.gtscript
   and the native ``gb.kernels`` on gt:cpu_ifirst and gt:cpu_kfirst arrays, GT4Py's gt:cpu_ifirst,
   gt:cpu_kfirst and numpy backends on arrays of their own layout. Medians of several repeats,
   measured round-robin in one run; every output is checked against a NumPy reference first.
2. Time from definition to first result: building the stencil object from the definition and
   its first call, on each layout; for gridbuf each run in a fresh Python process (gridbuf
   imported and the arguments allocated and written before the clock starts). GT4Py's backends build in a
   fresh cache directory made for this run, so the compiled backends pay their full C++ build.

3. The typed stencils of ``_typed_stencils.py`` (a land mask of bool and int fields, a
   saturation formula heavy in exp/log, a column integral in a 2-D temporary written to an IJ
   field): time per call and definition to first result, against GT4Py's backends.

4. The production-model stencils of ``_production_stencils.py`` (cubed-sphere corner filling
   with 36 regions, a PPM flux with regions at the tile's edges, a vertical remap with ``while``
   loops and variable K offsets): time per call and definition to first result (each in a fresh
   process, on each layout), against GT4Py's backends.

Usage: ``python benchmarks/bench_gtscript.py [--n 256] [--nz 80] [--repeats 5]
[--kernels copy,hdiff] [--gt4py-backends gt:cpu_ifirst,numpy] [--typed landmask,column]
[--production corners,ppm,remap] [--plot DIR]``. gridbuf uses ``GRIDBUF_NUM_THREADS`` threads
(default all cores).

``--plot DIR`` draws two charts per part that ran, from the results the tables print: definition to
first result on a log axis (``bench_gtscript_first_result.png``, ``..._typed_first_result.png``,
``..._production_first_result.png``) and time per call (``bench_gtscript_per_call.png``,
``..._typed_per_call.png``, ``..._production_per_call.png``).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import time

# GT4Py reads its cache location when imported: a fresh one for this run.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _env, _timing, bench_stencil
from _env import scratch_dir  # noqa: E402

_GT_CACHE = scratch_dir("gridbuf_bench_gtscript_")
os.environ["GT_CACHE_ROOT"] = _GT_CACHE

import numpy as np  # noqa: E402

import gridbuf as gb  # noqa: E402
import _plot  # noqa: E402
from _timing import Candidate, compare, fmt_time, markdown_table, print_machine_info  # noqa: E402
from bench_stencil import NUMPY_REFS, kernel_inputs  # noqa: E402

try:
    import gt4py.storage as gs  # noqa: E402
except ImportError:  # pragma: no cover
    gs = None

# This script and the gridbuf it imports, for the fresh processes of `first_result_gridbuf` (which
# run after the working directory has changed).
_SCRIPT = os.path.abspath(__file__)
_GRIDBUF_PATH = os.path.dirname(os.path.dirname(os.path.abspath(gb.__file__)))

KERNELS = ("copy", "laplacian", "hdiff", "tridiag")
LAYOUTS = ("gt:cpu_ifirst", "gt:cpu_kfirst")
GT4PY_BACKENDS = ("gt:cpu_ifirst", "gt:cpu_kfirst", "numpy")
HALO = 2
#: Fresh processes (kernels, production stencils) or in-process runs (typed stencils) whose median
#: is gridbuf's definition to first result.
FIRST_RUNS = 5

#: The colour of each competitor in the charts (the same in every figure of this script).
COLORS = {
    "gtscript gt:cpu_ifirst": "#1f77b4",
    "gtscript gt:cpu_kfirst": "#aec7e8",
    "gridbuf.gtscript": "#1f77b4",
    "native gt:cpu_ifirst": "#2ca02c",
    "native gt:cpu_kfirst": "#98df8a",
    "gt4py gt:cpu_ifirst": "#ff7f0e",
    "gt4py gt:cpu_kfirst": "#ffbb78",
    "gt4py numpy": "#9467bd",
}


def gridbuf_definitions(module: str = "_gt4py_stencils"):
    """The module ``module`` (GT4Py definitions) with its gt4py imports replaced by gridbuf's."""
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, f"{module}.py")) as fh:
        src = fh.read()
    src = src.replace("from gt4py.cartesian import gtscript", "from gridbuf import gtscript")
    src = src.replace("from gt4py.cartesian.gtscript import", "from gridbuf.gtscript import")
    assert "gt4py" not in src.split('"""', 2)[2].split("def build")[0], "an import was not replaced"
    path = os.path.join(_GT_CACHE, f"_gridbuf{module}.py")
    with open(path, "w") as fh:
        fh.write(src)
    spec = importlib.util.spec_from_file_location(f"_gridbuf{module}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _dom(a, n, nz):
    return np.asarray(a)[HALO : HALO + n, HALO : HALO + n, :nz]


def first_result_gridbuf(name, layout, n, nz, runs=FIRST_RUNS, module="_gt4py_stencils"):
    """Median seconds from gtscript.stencil(definition) to the end of its first call, each run
    in a fresh Python process (as a new user meets it: nothing defined or compiled before;
    gridbuf imported and the arguments allocated and written before the clock starts). ``module`` is the
    definitions' module: ``_gt4py_stencils`` (the kernels) or ``_production_stencils``."""
    times = []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, _SCRIPT, "--first-result-child", module, name, layout, str(n), str(nz)],
            check=True,
            capture_output=True,
            text=True,
            env={**os.environ, "GT_CACHE_ROOT": _GT_CACHE, "PYTHONPATH": os.pathsep.join([_GRIDBUF_PATH, os.environ.get("PYTHONPATH", "")])},
        )
        times.append(float(out.stdout.split()[-1]))
    return statistics.median(times)


def first_result_child(module, name, layout, n, nz):
    """The child of `first_result_gridbuf`: prints the seconds of one definition and call."""
    from gridbuf import gtscript

    defs = gridbuf_definitions(module)
    if module == "_production_stencils":
        import _production_stencils as rs

        h = rs.HALO
        shape = (n + 2 * h, n + 2 * h, nz)
        ins, outs, where, _ = rs.SIGNATURES[name]
        origin, domain = ((0, 0, 0), shape) if where == "whole" else ((h, h, 0), (n, n, nz))
        data = rs.inputs(name, shape, np.random.default_rng(0))
        args = [gb.from_array(d, backend=layout) for d in data] + [gb.zeros(shape, backend=layout) for _ in outs]
        ext = rs.externals(name, gtscript)
    else:
        shape = (n + 2 * HALO, n + 2 * HALO, nz)
        origin, domain = (HALO, HALO, 0), (n, n, nz)
        data = kernel_inputs(name, shape, np.random.default_rng(0))
        args = [gb.from_array(d, backend=layout) for d in data] + [gb.zeros(shape, backend=layout)]
        ext = {}

    # Fresh zeroed pages are zeroed by the OS on their first write (here that write would be
    # the stencil's, with two threads faulting pages concurrently: up to 50 ms for 44 MB on
    # this VM); written once before the clock, as a model's fields are.
    for x in args:
        view = np.asarray(x)
        view[...] = view.copy()
    t0 = time.perf_counter()
    st = gtscript.stencil(backend=layout, definition=defs.DEFINITIONS[name], externals=ext)
    st(*args, origin=origin, domain=domain)
    print(time.perf_counter() - t0)


def first_result_gt4py(name, backend, data, shape, origin, domain):
    import _gt4py_stencils

    g_args = [gs.from_array(d, backend=backend, aligned_index=origin) for d in data]
    g_args.append(gs.zeros(shape, np.float64, backend=backend, aligned_index=origin))
    t0 = time.perf_counter()
    st = _gt4py_stencils.build(name, backend)
    st(*g_args, origin=origin, domain=domain)
    return time.perf_counter() - t0, st


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--nz", type=int, default=80)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--repeat-seconds", type=float, default=0.3)
    ap.add_argument("--kernels", default=",".join(KERNELS))
    ap.add_argument("--gt4py-backends", default=",".join(GT4PY_BACKENDS))
    ap.add_argument("--typed", default="landmask,saturation,column", help="typed stencils to time after the kernels ('' for none)")
    ap.add_argument("--production", default="corners,ppm,remap", help="production-model stencils (regions, loops, vertical indexing) to time last ('' for none)")
    _plot.add_argument(ap)
    ap.add_argument("--first-result-child", nargs=5, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.first_result_child:
        module, name, layout, n, nz = args.first_result_child
        first_result_child(module, name, layout, int(n), int(nz))
        return
    plot_dir = _plot.prepare(os.path.abspath(args.plot) if args.plot else None)  # before the chdir below
    kernels_ = [k for k in args.kernels.split(",") if k]
    backends = [b for b in args.gt4py_backends.split(",") if b] if gs is not None else []
    print_machine_info()
    n, nz = args.n, args.nz
    shape = (n + 2 * HALO, n + 2 * HALO, nz)
    origin, domain = (HALO, HALO, 0), (n, n, nz)
    defs = gridbuf_definitions()
    # GT4Py's build runs setuptools in the working directory, which must not be the repository.
    os.chdir(_GT_CACHE)
    from gridbuf import gtscript

    times: dict[tuple[str, str], float] = {}
    first: dict[tuple[str, str], float] = {}
    for name in kernels_:
        data = kernel_inputs(name, shape, np.random.default_rng(0))
        ref_out = np.zeros(shape)
        NUMPY_REFS[name](*data, ref_out)
        want = _dom(ref_out, n, nz)
        for layout in LAYOUTS:
            first[name, f"gtscript {layout}"] = first_result_gridbuf(name, layout, n, nz)
        cands, outs = [], {}
        st = gtscript.stencil(backend="numpy", definition=defs.DEFINITIONS[name])
        kernel = getattr(gb.kernels, name)
        for layout in LAYOUTS:
            a = [gb.from_array(d, backend=layout) for d in data] + [gb.zeros(shape, backend=layout)]
            st(*a, origin=origin, domain=domain)
            outs[f"gtscript {layout}"] = a[-1]
            cands.append(Candidate(f"gtscript {layout}", lambda a=a: st(*a, origin=origin, domain=domain)))
            b = [gb.from_array(d, backend=layout) for d in data] + [gb.zeros(shape, backend=layout)]
            kernel(*b, origin=origin, domain=domain)
            outs[f"native {layout}"] = b[-1]
            cands.append(Candidate(f"native {layout}", lambda b=b: kernel(*b, origin=origin, domain=domain)))
        for backend in backends:
            print(f"building gt4py {backend} {name} ...", file=sys.stderr, flush=True)
            t, gst = first_result_gt4py(name, backend, data, shape, origin, domain)
            first[name, f"gt4py {backend}"] = t
            print(f"  ready in {t:.1f} s", file=sys.stderr, flush=True)
            g = [gs.from_array(d, backend=backend, aligned_index=origin) for d in data]
            g.append(gs.zeros(shape, np.float64, backend=backend, aligned_index=origin))
            gst(*g, origin=origin, domain=domain)
            outs[f"gt4py {backend}"] = g[-1]
            cands.append(Candidate(f"gt4py {backend}", lambda g=g, s=gst: s(*g, origin=origin, domain=domain)))
        for label, o in outs.items():
            err = float(np.max(np.abs(_dom(o, n, nz) - want)))
            if not err <= 1e-10 * max(1.0, float(np.max(np.abs(want)))):
                raise SystemExit(f"{name}: {label} differs from the NumPy reference by {err:g}")
        for r in compare(cands, repeats=args.repeats, repeat_seconds=args.repeat_seconds):
            times[name, r.label] = r.median
        print(f"{name}: timed", file=sys.stderr, flush=True)

    if kernels_:
        cols = [f"gtscript {lay}" for lay in LAYOUTS] + [f"native {lay}" for lay in LAYOUTS] + [f"gt4py {b}" for b in backends]
        rows = []
        for name in kernels_:
            gts = min(times[name, f"gtscript {lay}"] for lay in LAYOUTS)
            nat = min(times[name, f"native {lay}"] for lay in LAYOUTS)
            compiled = [times[name, f"gt4py {b}"] for b in backends if b != "numpy"]
            row = [name] + [fmt_time(times[name, c], "ms") for c in cols]
            row.append(f"{gts / nat:.2f}")
            row.append(f"{gts / min(compiled):.2f}" if compiled else "-")
            rows.append(row)
        print(f"\n### Time per call, ms (median of {args.repeats}), {n}x{n}x{nz} float64\n")
        print(markdown_table(["stencil", *cols, "gtscript / native", "gtscript / best gt4py compiled"], rows))
        fcols = [f"gtscript {lay}" for lay in LAYOUTS] + [f"gt4py {b}" for b in backends]
        frows = []
        for name in kernels_:
            frows.append([name] + [fmt_time(first[name, c], "ms") if (name, c) in first else "-" for c in fcols])
        print(f"\n### Definition to first result, ms (gridbuf: median of {FIRST_RUNS}, each in a fresh process; gt4py: one build in a fresh cache)\n")
        print(markdown_table(["stencil", *fcols], frows))
        if plot_dir:
            plot_part(
                plot_dir, "", "kernels", kernels_, times, first, cols, fcols, f"{n}x{n}x{nz} float64, halo {HALO}", args.repeats,
                f"gtscript: median of {FIRST_RUNS} repeats, each in a fresh Python process (gridbuf imported, arguments written before the clock starts)",
            )
    typed = [t for t in args.typed.split(",") if t]
    if typed:
        if gs is None:
            raise SystemExit("the typed rows need gt4py (their definitions import it)")
        typed_rows(typed, n, nz, args.repeats, args.repeat_seconds, backends, plot_dir)
    production = [r for r in args.production.split(",") if r]
    if production:
        if gs is None:
            raise SystemExit("the production rows need gt4py (their definitions import it)")
        production_rows(production, n, nz, args.repeats, args.repeat_seconds, backends, plot_dir)


def check_against_numpy(name, outs, want, tolerance):
    """Stops the run where an output of any candidate (`outs`: label -> output arrays) differs
    from NumPy's `want` by more than `tolerance` relative to the largest value."""
    for label, o in outs.items():
        for got, w in zip(o, want):
            err = float(np.max(np.abs(np.asarray(got) - w)))
            if not err <= tolerance * max(1.0, float(np.max(np.abs(w)))):
                raise SystemExit(f"{name}: {label} differs from the NumPy reference by {err:g}")


def plot_part(directory, what, label, names, times, first, time_cols, first_cols, shape, repeats, gridbuf_first):
    """The two charts of one part (``what``: "" for the kernels, "typed", "production"), from the
    results its tables print: definition to first result (log axis) and time per call.
    ``gridbuf_first`` says how gridbuf's first results were measured (the caption)."""
    prefix = f"{what}_" if what else ""
    gt4py_first = "gt4py: one build and first call in a fresh cache (the compiled backends' C++ build included), not a median"
    _plot.bar_chart(
        _plot.path(directory, __file__, prefix + "first_result"),
        benchmark="bench_gtscript",
        title=f"{label}, definition to first result",
        shape=shape,
        panels=[
            _plot.Panel(
                {(s, c): first[s, c] for s in names for c in first_cols if (s, c) in first},
                groups=names,
                series=first_cols,
                ylabel="definition to first result",
                unit="ms",  # as in the table
                log=True,
            )
        ],
        repeats=None,
        note=f"{gridbuf_first}; {gt4py_first}",
        colors=COLORS,
    )
    _plot.bar_chart(
        _plot.path(directory, __file__, prefix + "per_call"),
        benchmark="bench_gtscript",
        title=f"{label}, time per call",
        shape=shape,
        panels=[
            _plot.Panel(
                {(s, c): times[s, c] for s in names for c in time_cols if (s, c) in times},
                groups=names,
                series=time_cols,
                ylabel="time per call",
                unit="ms",  # as in the table
            )
        ],
        repeats=repeats,
        note="round-robin in one run; every output checked against NumPy first",
        colors=COLORS,
    )


def print_tables(names, times, first, first_cols, backends, time_title, first_title):
    """The time-per-call table (gridbuf on each layout, GT4Py's backends, and gridbuf's best
    against GT4Py's best compiled time) and the definition-to-first-result table; returns the
    columns of both (for the charts)."""
    cols = [f"gtscript {lay}" for lay in LAYOUTS] + [f"gt4py {b}" for b in backends]
    rows = []
    for name in names:
        gts = min(times[name, f"gtscript {lay}"] for lay in LAYOUTS)
        compiled = [times[name, f"gt4py {b}"] for b in backends if b != "numpy"]
        rows.append([name] + [fmt_time(times[name, c], "ms") for c in cols] + [f"{gts / min(compiled):.2f}" if compiled else "-"])
    print(f"\n### {time_title}\n")
    print(markdown_table(["stencil", *cols, "gtscript / best gt4py compiled"], rows))
    fcols = first_cols + [f"gt4py {b}" for b in backends]
    frows = [[name] + [fmt_time(first[name, c], "ms") if (name, c) in first else "-" for c in fcols] for name in names]
    print(f"\n### {first_title}\n")
    print(markdown_table(["stencil", *fcols], frows))
    return cols, fcols


def production_rows(names, n, nz, repeats, repeat_seconds, backends, plot_dir=None):
    """The stencils of ``_production_stencils`` (horizontal regions): gridbuf.gtscript on both
    layouts against GT4Py's backends; time per call and definition to first result. Every
    output is checked against NumPy first."""
    import _production_stencils as rs
    from gridbuf import gtscript

    defs = gridbuf_definitions("_production_stencils")
    h = rs.HALO
    shape = (n + 2 * h, n + 2 * h, nz)
    times: dict[tuple[str, str], float] = {}
    first: dict[tuple[str, str], float] = {}
    for name in names:
        ins, outs_, where, _ = rs.SIGNATURES[name]
        origin, domain = ((0, 0, 0), shape) if where == "whole" else ((h, h, 0), (n, n, nz))
        data = rs.inputs(name, shape, np.random.default_rng(0))
        want = rs.reference(name, data)
        ext = rs.externals(name, gtscript)

        def make(layout, gt4py=False):
            if gt4py:
                return [gs.from_array(d, backend=layout, aligned_index=origin) for d in data] + [gs.zeros(shape, np.float64, backend=layout, aligned_index=origin) for _ in outs_]
            return [gb.from_array(d, backend=layout) for d in data] + [gb.zeros(shape, backend=layout) for _ in outs_]

        for layout in LAYOUTS:
            first[name, f"gtscript {layout}"] = first_result_gridbuf(name, layout, n, nz, module="_production_stencils")
        st = gtscript.stencil(backend="gt:cpu_ifirst", definition=defs.DEFINITIONS[name], externals=ext)
        cands, outs = [], {}
        for layout in LAYOUTS:
            a = make(layout)
            st(*a, origin=origin, domain=domain)
            outs[f"gtscript {layout}"] = a[len(ins):]
            cands.append(Candidate(f"gtscript {layout}", lambda a=a, st=st: st(*a, origin=origin, domain=domain)))
        for backend in backends:
            print(f"building gt4py {backend} {name} ...", file=sys.stderr, flush=True)
            g = make(backend, gt4py=True)
            t0 = time.perf_counter()
            gst = rs.build(name, backend)
            gst(*g, origin=origin, domain=domain)
            first[name, f"gt4py {backend}"] = time.perf_counter() - t0
            outs[f"gt4py {backend}"] = g[len(ins):]
            cands.append(Candidate(f"gt4py {backend}", lambda g=g, s=gst: s(*g, origin=origin, domain=domain)))
        check_against_numpy(name, outs, want, rs.TOLERANCE[name])
        for r in compare(cands, repeats=repeats, repeat_seconds=repeat_seconds):
            times[name, r.label] = r.median
        print(f"{name}: timed", file=sys.stderr, flush=True)
    cols, fcols = print_tables(
        names,
        times,
        first,
        [f"gtscript {lay}" for lay in LAYOUTS],
        backends,
        f"Production-model stencils: time per call, ms (median of {repeats}), {n}x{n}x{nz} float64, halo {h}",
        f"Production-model stencils: definition to first result, ms (gridbuf: median of {FIRST_RUNS}, each in a fresh process; gt4py: one build in a fresh cache)",
    )
    if plot_dir:
        plot_part(
            plot_dir, "production", "production-model stencils", names, times, first, cols, fcols, f"{n}x{n}x{nz} float64, halo {h}", repeats,
            f"gtscript: median of {FIRST_RUNS} repeats, each in a fresh Python process (gridbuf imported, arguments written before the clock starts)",
        )


def typed_rows(names, n, nz, repeats, repeat_seconds, backends, plot_dir=None):
    """The typed stencils of ``_typed_stencils`` (mixed dtypes, exp/log, a 2-D temporary):
    gridbuf.gtscript on both layouts against GT4Py's backends; time per call and definition to
    first result. Every output is checked against NumPy first."""
    import _typed_stencils as ts
    from gridbuf import gtscript

    defs = gridbuf_definitions("_typed_stencils")
    shape = (n, n, nz)
    origin, domain = (0, 0, 0), (n, n, nz)
    times: dict[tuple[str, str], float] = {}
    first: dict[tuple[str, str], float] = {}

    def make(mod, name, data, layout):
        outs = [
            mod.zeros(shape[: len(dims)], dtype, backend=layout, dimensions=dims)
            if mod is gb
            else mod.zeros(shape[: len(dims)], dtype, backend=layout, aligned_index=origin[: len(dims)], dimensions=dims)
            for _, dtype, dims in ts.SIGNATURES[name][1]
        ]
        ins = [gb.from_array(d, backend=layout) if mod is gb else gs.from_array(d, d.dtype, backend=layout, aligned_index=origin) for d in data]
        return ins + outs

    for name in names:
        data = ts.inputs(name, shape, np.random.default_rng(0))
        want = ts.reference(name, data)
        n_in = len(data)
        cands, outs = [], {}
        t_first = []
        for _ in range(FIRST_RUNS):
            args = make(gb, name, data, LAYOUTS[0])
            t0 = time.perf_counter()
            st = gtscript.stencil(backend="gt:cpu_ifirst", definition=defs.DEFINITIONS[name])
            st(*args, origin=origin, domain=domain)
            t_first.append(time.perf_counter() - t0)
        first[name, "gridbuf.gtscript"] = statistics.median(t_first)
        for layout in LAYOUTS:
            a = make(gb, name, data, layout)
            st(*a, origin=origin, domain=domain)
            outs[f"gtscript {layout}"] = a[n_in:]
            cands.append(Candidate(f"gtscript {layout}", lambda a=a: st(*a, origin=origin, domain=domain)))
        for backend in backends:
            print(f"building gt4py {backend} {name} ...", file=sys.stderr, flush=True)
            g = make(gs, name, data, backend)
            t0 = time.perf_counter()
            gst = ts.build(name, backend)
            gst(*g, origin=origin, domain=domain)
            first[name, f"gt4py {backend}"] = time.perf_counter() - t0
            outs[f"gt4py {backend}"] = g[n_in:]
            cands.append(Candidate(f"gt4py {backend}", lambda g=g, s=gst: s(*g, origin=origin, domain=domain)))
        check_against_numpy(name, outs, want, 1e-12)
        for r in compare(cands, repeats=repeats, repeat_seconds=repeat_seconds):
            times[name, r.label] = r.median
        print(f"{name}: timed", file=sys.stderr, flush=True)
    cols, fcols = print_tables(
        names,
        times,
        first,
        ["gridbuf.gtscript"],
        backends,
        f"Typed stencils: time per call, ms (median of {repeats}), {n}x{n}x{nz}",
        f"Typed stencils: definition to first result, ms (gridbuf: median of {FIRST_RUNS}; gt4py: one build in a fresh cache)",
    )
    if plot_dir:
        plot_part(
            plot_dir, "typed", "typed stencils", names, times, first, cols, fcols, f"{n}x{n}x{nz}, mixed dtypes", repeats,
            f"gridbuf.gtscript (gt:cpu_ifirst): median of {FIRST_RUNS} repeats in this process",
        )


if __name__ == "__main__":
    main()
