"""Halo exchange benchmark: gridbuf.distributed.HaloExchange against the mpi4py code a user would
write, MPI subarray datatypes, and raw contiguous messages of the same byte count (the floor).

Run under MPI (2 and 4 ranks on this machine):

    .venv/bin/mpiexec -n 2 .venv/bin/python benchmarks/bench_halo.py
    .venv/bin/mpiexec -n 4 .venv/bin/python benchmarks/bench_halo.py [--reps 40] [--plot halo.png]

Every rank owns three float64 fields of 256 x 256 x 80 points with a halo of 3 in I and J; the
domain is periodic in I and J, so every rank exchanges with all eight directions (on two ranks
the J neighbours are the rank itself, and left and right are the same rank). Corners included.
Layouts: gt:cpu_ifirst (I unit stride: each halo row is a run of 3 elements) and gt:cpu_kfirst
(K unit stride). Methods, timed round-robin in the same run:

- gridbuf: ``HaloExchange.exchange()`` (one message per neighbour rank, packed in Rust).
- numpy: for each direction and field, ``np.copyto`` of the NumPy slice into a preallocated
  contiguous buffer, ``Isend``/``Irecv``, ``Waitall``, then slice assignment back.
- subarray: one committed ``Create_subarray`` datatype per direction and field, ``Isend``/``Irecv``
  straight from the field memory.
- raw: ``Isend``/``Irecv`` of preallocated contiguous buffers with the byte count gridbuf sends to
  each peer, no packing (the floor).

The time of one exchange is the slowest rank's, after a barrier; the first table shows the median over
``--reps`` exchanges (after warm-up), the second the fastest; the methods run in a shuffled order
in every repetition. Widths 1, 2 and 3 are measured for the plot (exchange time
against halo bytes per rank); the table is for width 3. Plan build is the median time of
constructing a HaloExchange (validation allgather, plan, buffers, persistent requests).
Nothing here asserts anything about timings.
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys
import time

import numpy as np
from mpi4py import MPI

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import gridbuf as gb  # noqa: E402,F401
from _timing import fmt_time, markdown_table  # noqa: E402
from gridbuf.distributed import Decomposition, HaloExchange  # noqa: E402

COMM = MPI.COMM_WORLD
RANK, SIZE = COMM.Get_rank(), COMM.Get_size()
N, NK, H, NFIELDS = 256, 80, 3, 3
LAYOUTS = ("gt:cpu_ifirst", "gt:cpu_kfirst")
DIRECTIONS = [o for o in itertools.product((-1, 0, 1), repeat=2) if o != (0, 0)]


def boxes(shape, w, o, send):
    """Slices of the box a field sends towards (or receives from) direction ``o``."""
    out = []
    for a in range(2):
        n = shape[a] - 2 * H
        if o[a] == 0:
            out.append(slice(H, H + n))
        elif send:
            out.append(slice(H, H + w) if o[a] < 0 else slice(H + n - w, H + n))
        else:
            out.append(slice(H - w, H) if o[a] < 0 else slice(H + n, H + n + w))
    out.append(slice(None))
    return tuple(out)


class NumpyExchange:
    """What a user writes with mpi4py: NumPy slices copied to buffers, one message per field and
    direction."""

    def __init__(self, dec, fields, w):
        self.fields = [np.asarray(f.array) for f in fields]
        self.items = []
        for d, o in enumerate(DIRECTIONS):
            peer = dec.neighbour(o)
            back = DIRECTIONS.index((-o[0], -o[1]))
            for k, f in enumerate(self.fields):
                ss, rs = boxes(f.shape, w, o, True), boxes(f.shape, w, o, False)
                sbuf = np.empty(f[ss].shape, f.dtype)
                rbuf = np.empty(f[rs].shape, f.dtype)
                self.items.append((peer, d * NFIELDS + k, back * NFIELDS + k, f, ss, rs, sbuf, rbuf))
        self.comm = dec.comm

    def exchange(self):
        reqs = []
        for peer, stag, rtag, f, ss, rs, sbuf, rbuf in self.items:
            reqs.append(self.comm.Irecv(rbuf, source=peer, tag=rtag))
        for peer, stag, rtag, f, ss, rs, sbuf, rbuf in self.items:
            np.copyto(sbuf, f[ss])
            reqs.append(self.comm.Isend(sbuf, dest=peer, tag=stag))
        MPI.Request.Waitall(reqs)
        for peer, stag, rtag, f, ss, rs, sbuf, rbuf in self.items:
            f[rs] = rbuf


def memory_view(a):
    """The field's memory from element 0 as a byte buffer, and its shape/strides in memory order."""
    order = sorted(range(a.ndim), key=lambda ax: -a.strides[ax])
    sizes = [a.shape[order[0]]] + [a.strides[order[i - 1]] // a.strides[order[i]] for i in range(1, a.ndim)]
    # The subarray type spans the whole padded array; MPI only touches the elements of the box.
    span = int(np.prod(sizes)) * a.itemsize
    return MPI.buffer.fromaddress(a.ctypes.data, span), order, sizes


class SubarrayExchange:
    """MPI derived datatypes: one subarray type per field and direction, no packing by the user."""

    def __init__(self, dec, fields, w):
        self.items, self.types = [], []
        for d, o in enumerate(DIRECTIONS):
            peer = dec.neighbour(o)
            back = DIRECTIONS.index((-o[0], -o[1]))
            for k, f in enumerate(fields):
                a = np.asarray(f.array)
                buf, order, sizes = memory_view(a)
                for send in (True, False):
                    box = boxes(a.shape, w, o, send)
                    starts = [box[ax].indices(a.shape[ax])[0] for ax in order]
                    subs = [len(range(*box[ax].indices(a.shape[ax]))) for ax in order]
                    t = MPI.DOUBLE.Create_subarray(sizes, subs, starts).Commit()
                    self.types.append(t)
                    self.items.append((send, peer, (d if send else back) * NFIELDS + k, buf, t))
        self.comm = dec.comm

    def exchange(self):
        reqs = []
        for send, peer, tag, buf, t in self.items:
            if not send:
                reqs.append(self.comm.Irecv([buf, 1, t], source=peer, tag=tag))
        for send, peer, tag, buf, t in self.items:
            if send:
                reqs.append(self.comm.Isend([buf, 1, t], dest=peer, tag=tag))
        MPI.Request.Waitall(reqs)


class RawExchange:
    """Contiguous buffers of the byte counts gridbuf sends, one message per peer, no packing."""

    def __init__(self, dec, ex):
        self.items = []
        for peer, ns, nr in zip(ex.plan.peers, ex.plan.send_bytes, ex.plan.recv_bytes):
            self.items.append((peer, np.empty(ns, np.uint8), np.empty(nr, np.uint8)))
        self.comm = dec.comm

    def exchange(self):
        reqs = [self.comm.Irecv(r, source=p, tag=9) for p, s, r in self.items]
        reqs += [self.comm.Isend(s, dest=p, tag=9) for p, s, r in self.items]
        MPI.Request.Waitall(reqs)


def timed(fn) -> float:
    """Seconds of one call on the slowest rank."""
    COMM.Barrier()
    t0 = time.perf_counter()
    fn()
    dt = time.perf_counter() - t0
    return COMM.allreduce(dt, op=MPI.MAX)


def check_same(dec, fields, ex, numpy_ex, sub_ex) -> bool:
    """The three exchanges leave identical arrays (sanity check, not a timing)."""
    outs = []
    for run in (ex.exchange, numpy_ex.exchange, sub_ex.exchange):
        for k, f in enumerate(fields):
            a = np.asarray(f.array)
            a[...] = -1.0
            a[H:-H, H:-H, :] = RANK * 1000 + k + np.arange(a[H:-H, H:-H, :].size).reshape(a[H:-H, H:-H, :].shape) % 977
        run()
        outs.append([np.asarray(f.array).copy() for f in fields])
    ok = all(np.array_equal(x, y) for o in outs[1:] for x, y in zip(outs[0], o))
    return bool(COMM.allreduce(ok, op=MPI.LAND))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=40)
    parser.add_argument("--widths", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--plot", default="benchmarks/bench_halo.png")
    args = parser.parse_args()
    procs = MPI.Compute_dims(SIZE, 2)
    dec = Decomposition(COMM, (N * procs[0], N * procs[1], NK), procs=procs, periodic=True)
    results = {}  # (layout, width, method) -> median seconds
    nbytes = {}
    build = {}
    best = {}  # (layout, width, method) -> fastest exchange
    ok_all = True
    for layout in LAYOUTS:
        fields = [dec.zeros(np.float64, halo=(H, H, 0), backend=layout) for _ in range(NFIELDS)]
        for f in fields:  # real values everywhere: untouched zero pages would make reads free
            np.asarray(f.array)[...] = np.random.default_rng(RANK).random(f.shape)
        for w in sorted(args.widths):
            t_build = []
            for _ in range(5):
                t = timed(lambda: HaloExchange(dec, fields, widths=w).free())
                t_build.append(t)
            ex = HaloExchange(dec, fields, widths=w)
            build[(layout, w)] = statistics.median(t_build)
            methods = {
                "gridbuf": ex.exchange,
                "numpy": NumpyExchange(dec, fields, w).exchange,
                "subarray": SubarrayExchange(dec, fields, w).exchange,
                "raw": RawExchange(dec, ex).exchange,
            }
            if w == max(args.widths):
                ok_all &= check_same(dec, fields, ex, NumpyExchange(dec, fields, w), SubarrayExchange(dec, fields, w))
            samples = {m: [] for m in methods}
            for _ in range(5):  # warm-up
                for fn in methods.values():
                    fn()
            order = list(methods)
            rng = np.random.default_rng(w)  # the same shuffled order on every rank
            for _ in range(args.reps):
                rng.shuffle(order)
                for m in order:
                    samples[m].append(timed(methods[m]))
            for m in methods:
                results[(layout, w, m)] = statistics.median(samples[m])
                best[(layout, w, m)] = min(samples[m])
            nbytes[(layout, w)] = ex.nbytes
            ex.free()
    if RANK != 0:
        return
    w = max(args.widths)
    print(f"Halo exchange, {SIZE} ranks (process grid {procs[0]}x{procs[1]}, periodic), {NFIELDS} float64 fields "
          f"{N}x{N}x{NK} per rank, halo {H} in I and J, width {w}, corners; median of {args.reps} exchanges "
          f"(slowest rank each); results identical across methods: {ok_all}\n")
    rows = []
    for layout in LAYOUTS:
        r = {m: results[(layout, w, m)] for m in ("gridbuf", "numpy", "subarray", "raw")}
        b = build[(layout, w)]
        rows.append([
            layout,
            f"{nbytes[(layout, w)] / 2**20:.2f} MiB",
            fmt_time(r["gridbuf"], "ms"),
            fmt_time(r["numpy"], "ms"),
            fmt_time(r["subarray"], "ms"),
            fmt_time(r["raw"], "ms"),
            f"{r['gridbuf'] / r['raw']:.2f}x",
            f"{r['numpy'] / r['gridbuf']:.2f}x",
            f"{fmt_time(b, 'ms')} ({b / r['gridbuf']:.1f} exch.)",
        ])
    print(markdown_table(
        ["layout", "sent/rank", "gridbuf ms", "numpy ms", "subarray ms", "raw ms", "gridbuf/raw",
         "numpy/gridbuf", "plan build"],
        rows,
    ))
    print("\nFastest of the exchanges (less sensitive to other load on the machine):\n")
    rows = []
    for layout in LAYOUTS:
        r = {m: best[(layout, w, m)] for m in ("gridbuf", "numpy", "subarray", "raw")}
        rows.append([layout] + [fmt_time(r[m], "ms") for m in r] + [f"{r['gridbuf'] / r['raw']:.2f}x",
                                                                    f"{r['numpy'] / r['gridbuf']:.2f}x"])
    print(markdown_table(["layout", "gridbuf ms", "numpy ms", "subarray ms", "raw ms", "gridbuf/raw", "numpy/gridbuf"], rows))
    ki, kk = LAYOUTS
    targets = [
        ("K-unit: gridbuf <= 2x raw", results[(kk, w, "gridbuf")] <= 2 * results[(kk, w, "raw")]),
        ("I-unit: gridbuf <= 3x raw", results[(ki, w, "gridbuf")] <= 3 * results[(ki, w, "raw")]),
        ("I-unit: gridbuf >= 2x faster than numpy", results[(ki, w, "numpy")] >= 2 * results[(ki, w, "gridbuf")]),
        ("K-unit: gridbuf no slower than numpy", results[(kk, w, "gridbuf")] <= results[(kk, w, "numpy")]),
        ("plan build < 10 exchanges", all(build[(lay, w)] < 10 * results[(lay, w, "gridbuf")] for lay in LAYOUTS)),
    ]
    print("\nTargets (medians of this run): " + "; ".join(f"{name}: {'met' if ok else 'NOT met'}" for name, ok in targets))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib not installed: no plot)")
        return
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, layout in zip(axes, LAYOUTS):
        ws = sorted(args.widths)
        xs = [nbytes[(layout, x)] / 2**20 for x in ws]
        for m, style in (("gridbuf", "o-"), ("numpy", "s--"), ("subarray", "^--"), ("raw", "k:")):
            ax.plot(xs, [results[(layout, x, m)] * 1e3 for x in ws], style, label=m)
        ax.set_title(f"{layout}, {SIZE} ranks")
        ax.set_xlabel("halo bytes sent per rank (MiB), widths " + ",".join(map(str, ws)))
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("exchange time (ms, median)")
    axes[0].legend()
    fig.tight_layout()
    path = args.plot.replace(".png", f"_n{SIZE}.png")
    fig.savefig(path, dpi=110)
    print(f"\nPlot: {path}")


if __name__ == "__main__":
    main()
