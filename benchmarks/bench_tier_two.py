"""Tier two (C from the same schedule, compiled by the system's C compiler) against tier one
(Cranelift) and GT4Py's compiled backends.

The stencils of ``bench_gtscript.py``: its four kernels (copy, laplacian, hdiff, tridiag), its
typed stencils (land mask, saturation, column integral) and its production-model stencils
(corners, PPM flux, vertical remap), on N x N x NZ float64 (default 256 x 256 x 80).

1. Time per call: tier one and tier two on gt:cpu_ifirst and gt:cpu_kfirst arrays, GT4Py's
   gt:cpu_ifirst and gt:cpu_kfirst on arrays of their own layout. Medians of several repeats,
   measured round-robin in one run; every output is checked against NumPy first, and tier two's
   against tier one's bit for bit. For laplacian and hdiff, the memory-bandwidth floor measured
   in the same run: the native copy kernel's time scaled by the arrays each stencil moves; and,
   where a C compiler with OpenMP is found, the same stencil written by hand in C with its rows
   fused (``_hand_kernels.c``, on the gt:cpu_ifirst arrays), as a witness of what C reaches
   against that floor on the machine.
   "tier one's bits" says whether tier two's outputs are tier one's bit for bit (they differ
   only where vector math computes a function, within a few ulps).
2. Time until tier two is in place: in a fresh process, from the definition to
   ``wait_tier_two()`` returning ready (the first call made in between, as a model would), with
   an empty cache and again with the cache the first process filled; against GT4Py's
   gt:cpu_kfirst build (definition to first result, fresh cache).

3. With ``--math`` (instead of 1 and 2): per math function tier two computes on vectors and per
   float type, the largest error in ulps against NumPy over ``--math-samples`` inputs spread
   over its domain (``_math_functions.py``) on tier one and on tier two, and the time per call
   of ``out = f(a)``: tier one, tier two with ``GRIDBUF_VECTOR_MATH=0`` and with vector math,
   and NumPy's function.

Usage: ``python benchmarks/bench_tier_two.py [--n 256] [--nz 80] [--repeats 5]
[--stencils copy,hdiff,...] [--gt4py-backends gt:cpu_ifirst,gt:cpu_kfirst] [--plot DIR]
[--math [--math-samples 1048576]]``; ``--plot DIR`` draws the time per call as
``bench_tier_two.png``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _env import define_env, scratch_dir  # noqa: E402

_GT_CACHE = scratch_dir("gridbuf_bench_tier_two_")
os.environ["GT_CACHE_ROOT"] = _GT_CACHE

import numpy as np  # noqa: E402

import gridbuf as gb  # noqa: E402
import _plot  # noqa: E402
from _timing import Candidate, compare, fmt_time, markdown_table, print_machine_info  # noqa: E402
import _hand_c  # noqa: E402

try:
    import gt4py.storage as gs  # noqa: E402
except ImportError:  # pragma: no cover
    gs = None

KERNELS = ("copy", "laplacian", "hdiff", "tridiag")
TYPED = ("landmask", "saturation", "column")
PRODUCTION = ("corners", "ppm", "remap")
LAYOUTS = ("gt:cpu_ifirst", "gt:cpu_kfirst")
GT4PY_BACKENDS = ("gt:cpu_ifirst", "gt:cpu_kfirst")
#: Arrays of the domain's size each stencil reads or writes once (for the bandwidth floor).
ARRAYS_MOVED = {"laplacian": 2, "hdiff": 3}
_SCRIPT = os.path.abspath(__file__)
_GRIDBUF_PATH = os.path.dirname(os.path.dirname(os.path.abspath(gb.__file__)))


def group_of(name: str) -> str:
    return "kernels" if name in KERNELS else "typed" if name in TYPED else "production"


def setup(name: str, n: int, nz: int):
    """(definition, externals, data, output specs, origin, domain, NumPy reference, tolerance) of
    stencil `name`; output specs are (dtype, dims) per output."""
    import bench_gtscript as bg

    group = group_of(name)
    if group == "kernels":
        from bench_stencil import NUMPY_REFS, kernel_inputs

        shape = (n + 2 * bg.HALO, n + 2 * bg.HALO, nz)
        data = kernel_inputs(name, shape, np.random.default_rng(0))
        ref = np.zeros(shape)
        NUMPY_REFS[name](*data, ref)
        defs = bg.gridbuf_definitions()
        origin, domain = (bg.HALO,) * 2 + (0,), (n, n, nz)
        return defs.DEFINITIONS[name], {}, data, [(np.float64, "IJK", shape)], origin, domain, [ref], 1e-10
    if group == "typed":
        import _typed_stencils as ts

        shape = (n, n, nz)
        data = ts.inputs(name, shape, np.random.default_rng(0))
        defs = bg.gridbuf_definitions("_typed_stencils")
        outs = [(dtype, dims, shape[: len(dims)]) for _, dtype, dims in ts.SIGNATURES[name][1]]
        return defs.DEFINITIONS[name], {}, data, outs, (0, 0, 0), shape, ts.reference(name, data), 1e-12
    import _production_stencils as rs
    from gridbuf import gtscript

    h = rs.HALO
    shape = (n + 2 * h, n + 2 * h, nz)
    ins, outs_, where, _ = rs.SIGNATURES[name]
    origin, domain = ((0, 0, 0), shape) if where == "whole" else ((h, h, 0), (n, n, nz))
    data = rs.inputs(name, shape, np.random.default_rng(0))
    defs = bg.gridbuf_definitions("_production_stencils")
    outs = [(np.float64, "IJK", shape) for _ in outs_]
    return defs.DEFINITIONS[name], rs.externals(name, gtscript), data, outs, origin, domain, rs.reference(name, data), rs.TOLERANCE[name]


def gb_args(data, outs, layout):
    args = [gb.from_array(d, backend=layout) for d in data]
    for dtype, dims, shape in outs:
        args.append(gb.zeros(shape, dtype, backend=layout, dimensions=dims))
    for a in args:  # written once, as a model's fields are
        v = np.asarray(a)
        v[...] = v.copy()
    return args


def gt_args(data, outs, backend, origin):
    args = [gs.from_array(d, d.dtype, backend=backend, aligned_index=origin) for d in data]
    for dtype, dims, shape in outs:
        args.append(gs.zeros(shape, dtype, backend=backend, aligned_index=origin[: len(dims)], dimensions=dims))
    return args


def define(definition, externals, tier: str):
    from gridbuf import gtscript

    return define_env(lambda: gtscript.stencil(backend="gt:cpu_ifirst", definition=definition, externals=externals), {"GRIDBUF_TIER2": tier})


def build_gt4py(name: str, backend: str):
    group = group_of(name)
    if group == "kernels":
        import _gt4py_stencils as m
    elif group == "typed":
        import _typed_stencils as m
    else:
        import _production_stencils as m
    return m.build(name, backend)


def per_call(names, n, nz, repeats, repeat_seconds, backends, plot_dir=None):
    rows, builds, chart = [], {}, {}
    copy_time = None
    hand_lib = _hand_c.compile_kernels(scratch_dir("gridbuf_bench_hand_c_")) if any(n in _hand_c.KERNELS for n in names) else None
    for name in names:
        definition, ext, data, outs, origin, domain, want, tol = setup(name, n, nz)
        n_in = len(data)
        tier1 = define(definition, ext, "0")
        tier2 = define(definition, ext, "define")
        state = tier2.tier_two
        cands, results = [], {}
        for layout in LAYOUTS:
            for label, st in (("tier one", tier1), ("tier two", tier2)):
                a = gb_args(data, outs, layout)
                st(*a, origin=origin, domain=domain)
                results[f"{label} {layout}"] = [np.asarray(x) for x in a[n_in:]]
                cands.append(Candidate(f"{label} {layout}", lambda a=a, st=st: st(*a, origin=origin, domain=domain)))
        hand = None
        if hand_lib is not None:
            hand_args = gb_args(data, outs, "gt:cpu_ifirst")
            hand = _hand_c.kernel(hand_lib, name, hand_args, origin, domain)
        if hand is not None:
            hand()
            results["hand-written C"] = [np.asarray(x) for x in hand_args[n_in:]]
            cands.append(Candidate("hand-written C", hand))
        for backend in backends:
            print(f"building gt4py {backend} {name} ...", file=sys.stderr, flush=True)
            g = gt_args(data, outs, backend, origin)
            t0 = time.perf_counter()
            gst = build_gt4py(name, backend)
            gst(*g, origin=origin, domain=domain)
            builds[name, backend] = time.perf_counter() - t0
            results[f"gt4py {backend}"] = [np.asarray(x) for x in g[n_in:]]
            cands.append(Candidate(f"gt4py {backend}", lambda g=g, s=gst: s(*g, origin=origin, domain=domain)))
        for label, got in results.items():
            for x, w in zip(got, want):
                err = float(np.max(np.abs(x.astype(np.float64) - w.astype(np.float64)))) if x.size else 0.0
                if not err <= tol * max(1.0, float(np.max(np.abs(w)))):
                    raise SystemExit(f"{name}: {label} differs from NumPy by {err:g}")
        # Tier two gives tier one's bits, but where vector math computes a function (within
        # a few ulps, checked against NumPy above).
        same_bits = all(
            np.array_equal(x.view(f"u{x.dtype.itemsize}"), y.view(f"u{y.dtype.itemsize}"))
            for layout in LAYOUTS
            for x, y in zip(results[f"tier two {layout}"], results[f"tier one {layout}"])
        )
        if hand is not None and not all(np.array_equal(x, y) for x, y in zip(results["hand-written C"], results["tier one gt:cpu_ifirst"])):
            raise SystemExit(f"{name}: the hand-written C kernel's outputs are not tier one's bits")
        if name in ARRAYS_MOVED and copy_time is None:
            a = gb_args([data[0]], [(np.float64, "IJK", data[0].shape)], "gt:cpu_ifirst")
            cands.append(Candidate("copy", lambda a=a: gb.kernels.copy(*a, origin=origin, domain=domain)))
        times = {r.label: r.median for r in compare(cands, repeats=repeats, repeat_seconds=repeat_seconds)}
        for label, t in times.items():
            if label not in ("copy", "hand-written C"):
                chart[name, label] = t
        copy_time = times.get("copy", copy_time)
        t1 = min(times[f"tier one {lay}"] for lay in LAYOUTS)
        t2 = min(times[f"tier two {lay}"] for lay in LAYOUTS)
        compiled = [times[f"gt4py {b}"] for b in backends]
        floor = copy_time * ARRAYS_MOVED[name] / 2 if name in ARRAYS_MOVED and copy_time else None
        row = [name, state, "yes" if same_bits else "no"]
        row += [fmt_time(times[f"{t} {lay}"], "ms") for lay in LAYOUTS for t in ("tier one", "tier two")]
        row += [fmt_time(c, "ms") for c in compiled]
        row += [f"{t2 / t1:.2f}", f"{t2 / min(compiled):.2f}" if compiled else "-"]
        row += [f"{fmt_time(floor, 'ms')} ({min(t2, t1) / floor:.2f}x)" if floor else "-"]
        hand_t = times.get("hand-written C")
        row += [f"{fmt_time(hand_t, 'ms')} ({hand_t / floor:.2f}x)" if hand_t and floor else "-"]
        rows.append(row)
        print(f"{name}: timed", file=sys.stderr, flush=True)
    cols = [f"{t} {lay}" for lay in LAYOUTS for t in ("tier one", "tier two")] + [f"gt4py {b}" for b in backends]
    print(f"\n### Time per call, ms (median of {repeats}), {n}x{n}x{nz}\n")
    print(markdown_table(["stencil", "tier two", "tier one's bits", *cols, "best tier two / best tier one", "best tier two / best gt4py", "bandwidth floor (best gridbuf / floor)", "hand-written C (/ floor)"], rows))
    if plot_dir:
        out = _plot.bar_chart(
            _plot.path(plot_dir, "bench_tier_two"),
            benchmark="bench_tier_two.py",
            title="Tier two (C) against tier one (Cranelift) and GT4Py's compiled backends",
            shape=f"{n}x{n}x{nz}",
            panels=[_plot.Panel(chart, title="time per call", series=cols)],
            repeats=repeats,
        )
        print(f"chart: {out}", file=sys.stderr)
    return builds


MATH_TIERS = {
    "tier one": {"GRIDBUF_TIER2": "0"},
    "tier two, scalar math": {"GRIDBUF_TIER2": "define", "GRIDBUF_VECTOR_MATH": "0"},
    "tier two": {"GRIDBUF_TIER2": "define", "GRIDBUF_VECTOR_MATH": None},
}


def math_functions(n, nz, repeats, repeat_seconds, samples):
    """Per function tier two computes with vector math and per float type: the largest error
    in ulps against NumPy over `samples` inputs spread over its domain (`_math_functions`), on
    tier one and tier two; and the time per call of ``out = f(a)`` on n x n x nz, on tier one,
    tier two with and without vector math, and NumPy's function (``out=``)."""
    import _math_functions as mf

    rows = []
    for dtype in (np.float64, np.float32):
        for name in mf.NAMES:
            _, sampler, arity = mf.FUNCTIONS[name]
            st = {t: define_env(lambda: mf.stencil(name, dtype), env) for t, env in MATH_TIERS.items()}

            def draw(count):
                drawn = sampler(np.random.default_rng(0), count, dtype)
                args = drawn if isinstance(drawn, tuple) else (drawn,)
                return args + (np.ones(count, dtype),) * (2 - len(args))

            shape = (64, 64, max(1, samples // 4096))
            a, b = (x.reshape(shape) for x in draw(int(np.prod(shape))))
            want = mf.reference(name, (a, b)[:arity])
            errs = {}
            for t in ("tier one", "tier two"):
                out = np.full(shape, np.nan, dtype)
                st[t](a, b, out)
                errs[t] = float(mf.ulps(out, want).max())
            shape = (n, n, nz)
            a, b = (x.reshape(shape) for x in draw(n * n * nz))
            cands = []
            for t, s_ in st.items():
                out = np.empty(shape, dtype)
                cands.append(Candidate(t, lambda s_=s_, a=a, b=b, out=out: s_(a, b, out)))
            ufunc = mf.FUNCTIONS[name][0]
            if isinstance(ufunc, np.ufunc):
                out = np.empty(shape, dtype)
                args = (a, b)[:arity]
                cands.append(Candidate("numpy", lambda f=ufunc, args=args, out=out: f(*args, out=out)))
            with np.errstate(all="ignore"):
                times = {r.label: r.median for r in compare(cands, repeats=repeats, repeat_seconds=repeat_seconds)}
            rows.append(
                [name, np.dtype(dtype).name, f"{errs['tier one']:g}", f"{errs['tier two']:g}"]
                + [fmt_time(times[t], "ms") for t in MATH_TIERS]
                + [fmt_time(times["numpy"], "ms") if "numpy" in times else "-", f"{times['tier one'] / times['tier two']:.1f}"]
            )
            print(f"{name} {np.dtype(dtype).name}: timed", file=sys.stderr, flush=True)
    print(f"\n### Vector math: largest error in ulps against NumPy ({samples} inputs), time per call of out = f(a), ms (median of {repeats}), {n}x{n}x{nz}\n")
    print(markdown_table(["function", "dtype", "ulps tier one", "ulps tier two", *MATH_TIERS, "numpy", "tier one / tier two"], rows))


def time_to_tier_two(names, n, nz, builds):
    rows = []
    for name in names:
        cache = scratch_dir("gridbuf_tier2_cache_")
        cold, warm = (child_time(name, n, nz, cache) for _ in range(2))
        gt = builds.get((name, "gt:cpu_kfirst"))
        rows.append([name, cold[1], fmt_time(cold[0], "ms"), fmt_time(warm[0], "ms"), fmt_time(gt, "ms") if gt else "-"])
    print("\n### Time until tier two is in place, ms (fresh process: definition, first call, wait until ready)\n")
    print(markdown_table(["stencil", "state", "empty cache", "cache filled", "gt4py gt:cpu_kfirst build + first call"], rows))


def child_time(name, n, nz, cache):
    env = {**os.environ, "GT_CACHE_ROOT": _GT_CACHE, "GRIDBUF_TIER2_CACHE": cache, "PYTHONPATH": os.pathsep.join([_GRIDBUF_PATH, os.environ.get("PYTHONPATH", "")])}
    env.pop("GRIDBUF_TIER2", None)
    out = subprocess.run([sys.executable, _SCRIPT, "--child", name, str(n), str(nz)], check=True, capture_output=True, text=True, env=env)
    t, state = out.stdout.strip().splitlines()[-1].split(" ", 1)
    return float(t), state


def child(name, n, nz):
    definition, ext, data, outs, origin, domain, _, _ = setup(name, n, nz)
    args = gb_args(data, outs, "gt:cpu_ifirst")
    from gridbuf import gtscript

    t0 = time.perf_counter()
    st = gtscript.stencil(backend="gt:cpu_ifirst", definition=definition, externals=ext)
    st(*args, origin=origin, domain=domain)
    state = st.wait_tier_two(600.0)
    print(time.perf_counter() - t0, state)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--nz", type=int, default=80)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--repeat-seconds", type=float, default=0.3)
    ap.add_argument("--stencils", default=",".join(KERNELS + TYPED + PRODUCTION))
    ap.add_argument("--gt4py-backends", default=",".join(GT4PY_BACKENDS))
    _plot.add_argument(ap)
    ap.add_argument("--math", action="store_true", help="only the vector math table (accuracy and time per function)")
    ap.add_argument("--math-samples", type=int, default=1 << 20)
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        name, n, nz = args.child
        os.chdir(_GT_CACHE)
        child(name, int(n), int(nz))
        return
    plot_dir = _plot.prepare(os.path.abspath(args.plot) if args.plot else None)
    names = [s for s in args.stencils.split(",") if s]
    backends = [b for b in args.gt4py_backends.split(",") if b] if gs is not None else []
    print_machine_info()
    if args.math:
        math_functions(args.n, args.nz, args.repeats, args.repeat_seconds, args.math_samples)
        return
    os.chdir(_GT_CACHE)  # GT4Py's build runs setuptools in the working directory
    builds = per_call(names, args.n, args.nz, args.repeats, args.repeat_seconds, backends, plot_dir)
    time_to_tier_two(names, args.n, args.nz, builds)


if __name__ == "__main__":
    main()
