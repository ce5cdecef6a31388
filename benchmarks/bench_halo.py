"""Halo exchange benchmark: gridbuf.distributed.HaloExchange against GHEX (when installed), the
mpi4py code a user would write, MPI subarray datatypes, and raw contiguous messages of the same
byte count (the floor).

Run under MPI (2 and 4 ranks on this machine):

    .venv/bin/mpiexec -n 2 .venv/bin/python benchmarks/bench_halo.py
    .venv/bin/mpiexec -n 4 .venv/bin/python benchmarks/bench_halo.py [--reps 40] [--plot DIR]

With GHEX: install gridbuf (and requirements.txt) into the venv where ghex is built, and run that
venv's mpiexec and python the same way.

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
- ghex (optional): GHEX, GridTools' C++ halo-exchange library, through its Python bindings: one
  pattern (``HaloGenerator`` with the same widths, periodic, corners included) and one
  communication object built once, the three fields wrapped by ``make_field_descriptor`` with
  their strides (GHEX reads the layout from them and refuses a mismatch), and one
  ``co.exchange([pattern(f) for f in fields]).wait()`` per exchange. Needs ``import ghex``
  (``ghex==0.9.0`` is a C++ build of several minutes: ``pip install ghex==0.9.0 --no-binary ghex``
  with Boost headers, libnuma, cmake and ninja); without it the column shows "-".

Before timing, every method is checked on values that encode each point's global index: after one
exchange the arrays must equal the expected ones exactly (halos hold the periodic neighbours'
values, corners included), else the benchmark stops with an error.

The time of one exchange is the slowest rank's, after a barrier; the first table shows the median over
``--reps`` exchanges (after warm-up), the second the fastest; the methods run in a shuffled order
in every repetition. Widths 1, 2 and 3 are measured for the chart (exchange time of each width,
with the halo bytes sent per rank); the table is for width 3. Plan build is the median time of
constructing a HaloExchange (validation allgather, plan, buffers, persistent requests).
Nothing here asserts anything about timings.

``--plot DIR`` draws the medians of every width as a bar chart, one panel per layout,
DIR/bench_halo_nN.png for N ranks (rank 0 draws it; needs matplotlib).
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

import _plot  # noqa: E402
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


_GHEX = None  # (ghex modules) once imported, False when ``import ghex`` failed


def ghex_modules():
    """GHEX's modules, or None when it is not installed (imported on first use only)."""
    global _GHEX
    if _GHEX is None:
        try:
            from ghex.context import make_context
            from ghex.structured.cartesian_sets import ProductSet, UnitRange
            from ghex.structured import regular
        except ImportError:
            _GHEX = False
        else:
            _GHEX = (make_context, ProductSet, UnitRange, regular)
    return _GHEX or None


class GhexExchange:
    """GHEX (GridTools): one pattern and communication object, all fields in one exchange.

    GHEX's regular halo generator produces every box of the extended subdomain minus the
    subdomain itself, so corners (diagonal neighbours) are always exchanged, as with
    ``HaloExchange(corners=True)``. Its domains are this decomposition's blocks (domain id = rank),
    so both libraries exchange between the same ranks.
    """

    _ctx = None

    def __init__(self, dec, fields, w):
        make_context, ProductSet, UnitRange, regular = ghex_modules()
        if GhexExchange._ctx is None:  # one context per run: it duplicates the communicator
            cart = COMM.Create_cart(dims=list(dec.procs), periods=list(dec.periodic), reorder=False)
            GhexExchange._ctx = make_context(cart, False)
        ctx = GhexExchange._ctx
        assert ctx.rank() == RANK
        (i0, i1), (j0, j1), (k0, k1) = dec.bounds()
        owned = ProductSet(UnitRange(i0, i1), UnitRange(j0, j1), UnitRange(k0, k1))
        whole = ProductSet(*(UnitRange(0, n) for n in dec.shape))
        domain = regular.DomainDescriptor(RANK, owned)
        halos = ((w, w), (w, w), (0, 0))
        gen = regular.HaloGenerator(whole, halos, (*dec.periodic, False))
        self.pattern = regular.make_pattern(ctx, gen, [domain])
        self.co = regular.make_communication_object(ctx)
        self.arrays = [np.asarray(f.array) for f in fields]
        # make_field_descriptor reads the layout map from the array's strides (largest stride ->
        # 0, unit stride -> 2) and passes the byte strides on, so padded rows are walked right;
        # offsets: memory index of the first interior point, extents: the whole array.
        self.descriptors = [
            regular.make_field_descriptor(domain, a, tuple(f.origin), a.shape) for f, a in zip(fields, self.arrays)
        ]
        self.infos = [self.pattern(d) for d in self.descriptors]

    def exchange(self):
        self.co.exchange(self.infos).wait()


def timed(fn) -> float:
    """Seconds of one call on the slowest rank."""
    COMM.Barrier()
    t0 = time.perf_counter()
    fn()
    dt = time.perf_counter() - t0
    return COMM.allreduce(dt, op=MPI.MAX)


def encoded(dec, fields, w):
    """Each field as it must be after an exchange of width ``w``: every interior point and every
    halo point within ``w`` (corners included, wrapped periodically) holds
    ``((field * 1024 + i) * 1024 + j) * 128 + k`` of its global index (exact in float64);
    the rest of the halo keeps -1."""
    out = []
    for k, f in enumerate(fields):
        a = np.asarray(f.array)
        o = tuple(f.origin)
        gi = (np.arange(a.shape[0]) - o[0] + dec.start[0]) % dec.shape[0]
        gj = (np.arange(a.shape[1]) - o[1] + dec.start[1]) % dec.shape[1]
        gk = np.arange(a.shape[2]) - o[2] + dec.start[2]
        e = ((k * 1024 + gi[:, None, None]) * 1024 + gj[None, :, None]) * 128.0 + gk[None, None, :]
        n = dec.local_shape
        e[: o[0] - w] = e[o[0] + n[0] + w:] = -1.0
        e[:, : o[1] - w] = e[:, o[1] + n[1] + w:] = -1.0
        out.append(e)
    return out


def check_exchanges(dec, fields, w, runs) -> dict:
    """Runs each exchange once on fields whose interior encodes the global index and halos hold
    -1, and compares every array with the expected one (``encoded``) exactly. Returns method ->
    True when every rank got the expected arrays."""
    expected = encoded(dec, fields, w)
    interior = tuple(slice(o, o + n) for o, n in zip(fields[0].origin, dec.local_shape))
    ok = {}
    for name, run in runs.items():
        for f, e in zip(fields, expected):
            a = np.asarray(f.array)
            a[...] = -1.0
            a[interior] = e[interior]
        run()
        good = all(np.array_equal(np.asarray(f.array), e) for f, e in zip(fields, expected))
        ok[name] = bool(COMM.allreduce(good, op=MPI.LAND))
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=40)
    parser.add_argument("--widths", type=int, nargs="+", default=[1, 2, 3])
    _plot.add_argument(parser)
    args = parser.parse_args()
    plot_dir = _plot.prepare(args.plot)  # on every rank, so that a missing matplotlib stops them all
    procs = MPI.Compute_dims(SIZE, 2)
    dec = Decomposition(COMM, (N * procs[0], N * procs[1], NK), procs=procs, periodic=True)
    results = {}  # (layout, width, method) -> median seconds
    nbytes = {}
    build = {}
    best = {}  # (layout, width, method) -> fastest exchange
    ok_all = True
    have_ghex = ghex_modules() is not None
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
            if have_ghex:
                methods["ghex"] = GhexExchange(dec, fields, w).exchange
            # Correctness first: every method but raw must leave exactly the expected arrays.
            ok = check_exchanges(dec, fields, w, {m: fn for m, fn in methods.items() if m != "raw"})
            if not all(ok.values()):
                bad = [m for m, good in ok.items() if not good]
                if RANK == 0:
                    print(f"ERROR: {layout}, width {w}: wrong halos after {', '.join(bad)}", file=sys.stderr)
                COMM.Abort(1)
            ok_all &= all(ok.values())
            for f in fields:  # back to the random values the timings run on
                np.asarray(f.array)[...] = np.random.default_rng(RANK).random(f.shape)
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
          f"(slowest rank each); every method's halos checked against the global index: {ok_all}\n")

    def ms(table, layout, m):
        return fmt_time(table[(layout, w, m)], "ms") if (layout, w, m) in table else "-"

    def ghex_ratio(table, layout):
        if (layout, w, "ghex") not in table:
            return "-"
        return f"{table[(layout, w, 'ghex')] / table[(layout, w, 'gridbuf')]:.2f}x"

    rows = []
    for layout in LAYOUTS:
        r = {m: results[(layout, w, m)] for m in ("gridbuf", "numpy", "subarray", "raw")}
        b = build[(layout, w)]
        rows.append([
            layout,
            f"{nbytes[(layout, w)] / 2**20:.2f} MiB",
            *(ms(results, layout, m) for m in ("gridbuf", "ghex", "numpy", "subarray", "raw")),
            f"{r['gridbuf'] / r['raw']:.2f}x",
            ghex_ratio(results, layout),
            f"{r['numpy'] / r['gridbuf']:.2f}x",
            f"{fmt_time(b, 'ms')} ({b / r['gridbuf']:.1f} exch.)",
        ])
    print(markdown_table(
        ["layout", "sent/rank", "gridbuf ms", "ghex ms", "numpy ms", "subarray ms", "raw ms", "gridbuf/raw",
         "ghex / gridbuf", "numpy/gridbuf", "plan build"],
        rows,
    ))
    print("\nFastest of the exchanges (less sensitive to other load on the machine):\n")
    rows = []
    for layout in LAYOUTS:
        r = {m: best[(layout, w, m)] for m in ("gridbuf", "numpy", "subarray", "raw")}
        rows.append([layout] + [ms(best, layout, m) for m in ("gridbuf", "ghex", "numpy", "subarray", "raw")]
                    + [f"{r['gridbuf'] / r['raw']:.2f}x", ghex_ratio(best, layout), f"{r['numpy'] / r['gridbuf']:.2f}x"])
    print(markdown_table(["layout", "gridbuf ms", "ghex ms", "numpy ms", "subarray ms", "raw ms", "gridbuf/raw",
                          "ghex / gridbuf", "numpy/gridbuf"], rows))
    if not have_ghex:
        print("\nghex: not installed (\"-\"). `pip install ghex==0.9.0 --no-binary ghex` builds it (C++, several "
              "minutes; needs Boost headers, libnuma, cmake, ninja and the MPI mpi4py uses), then run this again.")
    ki, kk = LAYOUTS
    targets = [
        ("K-unit: gridbuf <= 2x raw", results[(kk, w, "gridbuf")] <= 2 * results[(kk, w, "raw")]),
        ("I-unit: gridbuf <= 3x raw", results[(ki, w, "gridbuf")] <= 3 * results[(ki, w, "raw")]),
        ("I-unit: gridbuf >= 2x faster than numpy", results[(ki, w, "numpy")] >= 2 * results[(ki, w, "gridbuf")]),
        ("K-unit: gridbuf no slower than numpy", results[(kk, w, "gridbuf")] <= results[(kk, w, "numpy")]),
        ("plan build < 10 exchanges", all(build[(lay, w)] < 10 * results[(lay, w, "gridbuf")] for lay in LAYOUTS)),
    ]
    print("\nTargets (medians of this run): " + "; ".join(f"{name}: {'met' if ok else 'NOT met'}" for name, ok in targets))
    if plot_dir:
        plot(plot_dir, results, nbytes, sorted(args.widths), procs, args.reps)


#: The methods in the chart's order, and their colours (raw, the floor, in grey).
METHODS = {"gridbuf": "#1f77b4", "ghex": "#2ca02c", "numpy": "#ff7f0e", "subarray": "#9467bd", "raw": "#7f7f7f"}


def plot(directory, results, nbytes, widths, procs, reps) -> str:
    """The medians of every width as a bar chart: a panel per layout, a group per width (with the
    bytes each rank sends), a bar per method."""
    panels = []
    for layout in LAYOUTS:
        groups = [f"width {w}\n{nbytes[(layout, w)] / 2**20:.2f} MiB/rank" for w in widths]
        values = {
            (g, m): results[(layout, w, m)] for g, w in zip(groups, widths) for m in METHODS if (layout, w, m) in results
        }
        panels.append(_plot.Panel(values, title=layout, groups=groups, series=list(METHODS), ylabel="time of one exchange",
                                  xlabel="halo width (bytes sent per rank)"))
    return _plot.bar_chart(
        _plot.path(directory, __file__, f"n{SIZE}"),
        benchmark="bench_halo",
        title=f"halo exchange, {SIZE} ranks (process grid {procs[0]}x{procs[1]}, periodic, corners)",
        shape=f"{NFIELDS} float64 fields of {N}x{N}x{NK} per rank, halo {H} in I and J",
        panels=panels,
        repeats=reps,
        note="each exchange timed on the slowest rank after a barrier, methods in a shuffled order per repetition",
        colors=METHODS,
    )


if __name__ == "__main__":
    main()
