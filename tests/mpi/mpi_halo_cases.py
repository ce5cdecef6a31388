"""Halo exchange and decomposition checks run on every rank under ``mpiexec -n N``.

Not collected by the plain test run (the name does not start with ``test_``):
tests/test_distributed.py launches ``mpiexec -n N python -m pytest`` on this file for N = 1..4.
Every test is collective; the outcome of each check is agreed on by all ranks (allreduce), so a
failure on one rank fails the test on every rank instead of leaving the others waiting.

Every field is filled so that each interior value encodes its global index; after an exchange
every halo point must hold the value of the point it mirrors (wrapped around periodic dims) or,
where nothing is exchanged (non-periodic edges, beyond the widths, corners switched off), the
sentinel it was allocated with.
"""

from __future__ import annotations

import itertools
import tracemalloc

import numpy as np
import pytest
from mpi4py import MPI

import gridbuf as gb
from gridbuf.distributed import Decomposition, HaloExchange
from gridbuf.errors import GridbufError, GridbufValueError

COMM = MPI.COMM_WORLD
RANK, SIZE = COMM.Get_rank(), COMM.Get_size()
SENTINEL = -7


def agree(ok: bool, what: str) -> None:
    """Fail on every rank when the check failed on any."""
    oks = COMM.allgather((bool(ok), what if not ok else ""))
    bad = [(r, w) for r, (o, w) in enumerate(oks) if not o]
    assert not bad, f"failed on ranks {bad}"


def global_values(dec: Decomposition, f: gb.Field) -> np.ndarray:
    """The global array of ``f``'s interior, each value encoding its (wrapped) global index."""
    shape = dec._global_shape(f)
    grids = np.indices(shape)
    code = np.zeros(shape, dtype=np.int64)
    for a, d in enumerate(f.dims):
        g = grids[a]
        if d in dec.split and dec.periodic[dec.split.index(d)]:
            g = g % dec.shape[dec.dims.index(d)]
        code = code * (shape[a] + 1) + g
    return (code % 1_000_003 + 1).astype(f.dtype)


def expected_local(dec: Decomposition, f: gb.Field, widths: list[tuple[int, int]], corners: bool) -> np.ndarray:
    """What ``f``'s local array must hold after the exchange."""
    glob = global_values(dec, f)
    keys, offs, valid = [], [], []
    start = dict(zip(dec.dims, dec.start))
    for a, (d, n, (lo, hi)) in enumerate(zip(f.dims, f.shape, f.halo)):
        i = np.arange(n)
        interior = n - lo - hi
        if d in dec.split:
            s = dec.split.index(d)
            wl, wh = widths[s]
            g = start[d] + i - lo
            off = np.where(i < lo, -1, np.where(i >= lo + interior, 1, 0))
            ok = (i >= lo - wl) & (i < lo + interior + wh)
            gmax = glob.shape[a]
            if dec.periodic[s]:
                g = g % dec.shape[dec.dims.index(d)]
            ok &= (g >= 0) & (g < gmax)
            keys.append(np.clip(g, 0, gmax - 1))
            offs.append(off)
        else:
            g = i - lo
            ok = (g >= 0) & (g < interior)
            keys.append(np.clip(g, 0, max(interior - 1, 0)))
            offs.append(np.zeros(n, dtype=int))
        valid.append(ok)
    grids = np.ix_(*[np.arange(n) for n in f.shape])
    mask = np.ones(f.shape, dtype=bool)
    for a in range(len(f.shape)):
        mask &= valid[a][grids[a]]
    split_axes = [f.dims.index(d) if d in f.dims else None for d in dec.split]
    for offset in itertools.product((-1, 0, 1), repeat=len(dec.split)):
        if any(o != 0 and a is None for o, a in zip(offset, split_axes)):
            continue
        sel = np.ones(f.shape, dtype=bool)
        for o, a in zip(offset, split_axes):
            if a is not None:
                sel &= offs[a][grids[a]] == o
        nonzero = sum(o != 0 for o in offset)
        if nonzero and (dec.neighbour(offset) is None or (nonzero > 1 and not corners)):
            mask &= ~sel
    value = glob[np.ix_(*keys)]
    return np.where(mask, value, np.array(SENTINEL, dtype=f.dtype))


def fill(dec: Decomposition, f: gb.Field) -> None:
    """Interior from the global values (scattered from rank 0), halos the sentinel."""
    np.asarray(f.array)[...] = SENTINEL
    dec.scatter(global_values(dec, f) if dec.rank == 0 else None, f)


def check_exchange(dec, fields, widths=None, corners=True, threads=False) -> HaloExchange:
    for f in fields:
        fill(dec, f)
    ex = HaloExchange(dec, fields, widths=widths, corners=corners, threads=threads)
    ex.exchange()
    for k, f in enumerate(fields):
        want = expected_local(dec, f, ex.widths[k], corners)
        got = np.asarray(f.array)
        bad = np.argwhere(got != want)
        agree(bad.size == 0, f"field {k} dims {f.dims}: {len(bad)} wrong points, first {bad[:3].tolist()}")
    return ex


# ---------------------------------------------------------------------------------------------
# Decomposition arithmetic
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape,split", [((11, 7, 5), "IJ"), ((13, 6, 5), "I"), ((7, 5, 9), "IJK")])
def test_blocks_cover_the_domain_and_index_helpers_invert(shape, split):
    if split == "IJK" and SIZE > 1 and any(n < p for n, p in zip(shape, MPI.Compute_dims(SIZE, 3))):
        pytest.skip("too many ranks")
    dec = Decomposition(COMM, shape, split=split, periodic=True)
    allb = COMM.allgather(dec.bounds())
    covered = np.zeros(shape, dtype=int)
    for b in allb:
        covered[tuple(slice(s, e) for s, e in b)] += 1
    agree(bool(np.all(covered == 1)), f"blocks {allb} do not tile {shape}")
    sizes = [[e - s for s, e in (b[dec.dims.index(d)] for b in allb)] for d in split]
    agree(all(max(x) - min(x) <= 1 for x in sizes), f"uneven beyond one point: {sizes}")
    g = tuple(s for s in dec.start)
    f = dec.zeros(halo=(2, 1, 0))
    agree(dec.to_local(g) == (0,) * 3 and dec.to_local(g, f) == (2, 1, 0), "to_local")
    agree(dec.to_global(dec.to_local(g, f), f) == g and dec.owner(g) == RANK, "to_global/owner")
    nb = dec.neighbours()
    agree(all(dec.neighbour(o) == r for o, r in nb.items()), "neighbour table")


def test_cartesian_communicator_fixes_grid_and_periodicity():
    dims = MPI.Compute_dims(SIZE, 2)
    cart = COMM.Create_cart(dims, periods=[True, False], reorder=False)
    dec = Decomposition(cart, (9, 8, 3))
    agree(dec.procs == tuple(dims) and dec.periodic == (True, False), "procs/periodic from the cart")
    agree(dec.coords == tuple(cart.Get_coords(cart.Get_rank())), "coords as the cart's")
    check_exchange(dec, [dec.zeros(halo=(2, 2, 0))])
    cart.Free()


# ---------------------------------------------------------------------------------------------
# Exchanges: process grids, periodicity, uneven splits, corners, widths
# ---------------------------------------------------------------------------------------------
GRIDS = [
    # (global shape, split, periodic)
    ((12, 9, 4), "I", True),
    ((11, 9, 4), "I", False),
    ((11, 10, 3), "IJ", (True, False)),
    ((10, 7, 3), "IJ", True),
    ((9, 7, 5), "IJ", False),
    ((7, 6, 6), "IJK", (True, False, True)),
    ((6, 5, 7), "IJK", True),
]


@pytest.mark.parametrize("corners", [True, False])
@pytest.mark.parametrize("shape,split,periodic", GRIDS)
def test_exchange_fills_halos_from_neighbours(shape, split, periodic, corners):
    dec = Decomposition(COMM, shape, split=split, periodic=periodic)
    halo = tuple(2 if d in split else 0 for d in "IJK")
    if min(dec.local_shape[dec.dims.index(d)] for d in split) < 2:
        halo = tuple(min(h, 1) for h in halo)
    check_exchange(dec, [dec.zeros(np.float64, halo=halo, backend="gt:cpu_ifirst")], corners=corners)


def test_gathered_array_padded_with_wrap_matches_every_halo():
    """The halo as np.pad(mode="wrap") of the gathered global array says it should be."""
    dec = Decomposition(COMM, (10, 9, 3), periodic=True)
    f = dec.full(SENTINEL, np.float64, halo=((2, 1), (1, 2), (0, 0)), backend="gt:cpu_kfirst")
    rng = np.random.default_rng(5)
    g = rng.random(dec.shape)
    dec.scatter(g if RANK == 0 else None, f)
    HaloExchange(dec, [f]).exchange()
    gathered = dec.gather(f)
    gathered = COMM.bcast(gathered, root=0)
    padded = np.pad(gathered, ((2, 1), (1, 2), (0, 0)), mode="wrap")
    (i0, i1), (j0, j1), _ = dec.bounds()
    agree(np.array_equal(np.asarray(f.array), padded[i0 : i1 + 3, j0 : j1 + 3, :]), "halo != np.pad wrap")


def test_asymmetric_and_narrower_widths_including_zero():
    dec = Decomposition(COMM, (11, 9, 3), periodic=(True, False))
    f = dec.zeros(np.float64, halo=((3, 2), (2, 3), (0, 0)), backend="gt:cpu_kfirst")
    g = dec.zeros(np.int32, halo=((2, 2), (2, 2), (1, 1)), backend="F")
    check_exchange(dec, [f, g], widths=[{"I": (0, 2), "J": (1, 0)}, {"I": (1, 2), "J": 1}])
    # Widths narrower than the halo everywhere: the outer halo rows keep the sentinel.
    check_exchange(dec, [f], widths=1, corners=False)


def test_many_fields_dtypes_layouts_data_dim_and_stagger_in_one_message():
    dec = Decomposition(COMM, (9, 8, 4), periodic=(True, True))
    fields = []
    for dtype, backend in itertools.product((np.float64, np.float32, np.int32), ("C", "F", "gt:cpu_ifirst", "gt:cpu_kfirst")):
        fields.append(dec.zeros(dtype, halo=(2, 1, 0), backend=backend))
    fields.append(dec.zeros(np.float64, halo=(1, 2, 0, 0), data_shape=(3,), backend="gt:cpu_kfirst"))
    fields.append(dec.zeros(np.float32, halo=(2, 2, 0), stagger="I", backend="gt:cpu_ifirst"))
    fields.append(dec.zeros(np.int32, dims="IJ", halo=(1, 1), backend="C"))
    ex = check_exchange(dec, fields)
    # One message per neighbour rank, whatever the number of fields.
    agree(len(ex.peers) == len(set(dec.neighbours().values())), f"peers {ex.peers}")


def test_non_split_halo_and_non_periodic_edges_keep_the_sentinel():
    dec = Decomposition(COMM, (8, 8, 4), periodic=False)
    check_exchange(dec, [dec.zeros(np.float64, halo=(1, 1, 2), backend="gt:cpu_ifirst")])


def test_one_periodic_rank_is_its_own_neighbour_and_two_ranks_merge_left_and_right():
    dec = Decomposition(COMM, (12, 5, 3), split="I", periodic=True)
    f = dec.zeros(np.float64, halo=(3, 0, 0))
    ex = check_exchange(dec, [f])
    if SIZE == 1:
        agree(ex.peers == [0], f"self peer {ex.peers}")
    elif SIZE == 2:
        # Left and right neighbour are the same rank: one message each way carries both sides.
        agree(ex.peers == [1 - RANK] and len(ex.plan.send_bytes) == 1, f"peers {ex.peers}")


def test_threads_pack_and_unpack_a_mebibyte_or_more_in_one_pass():
    """threads=True: the remote messages (over a mebibyte in all with two or more ranks) are
    packed and unpacked on the thread pool, the I-sides of every row in one sweep."""
    dec = Decomposition(COMM, (40, 128, 160), periodic=True)
    fields = [dec.zeros(np.float64, halo=(3, 3, 0), backend=b) for b in ("gt:cpu_ifirst", "gt:cpu_kfirst")]
    ex = check_exchange(dec, fields, threads=True)
    remote = sum(n for p, n in zip(ex.plan.peers, ex.plan.send_bytes) if p != RANK)
    agree(SIZE == 1 or remote >= 1 << 20, f"{remote} bytes to other ranks")
    ex.exchange()  # again, on halos that are already right
    check_exchange(dec, fields, threads=True).free()
    ex.free()


# ---------------------------------------------------------------------------------------------
# Overlap, reuse
# ---------------------------------------------------------------------------------------------
def test_overlap_halos_carry_the_interior_as_it_was_at_start():
    dec = Decomposition(COMM, (10, 8, 3), periodic=True)
    f = dec.zeros(np.float64, halo=(2, 2, 0))
    fill(dec, f)
    ex = HaloExchange(dec, [f])
    want = expected_local(dec, f, ex.widths[0], True)
    ex.start()
    region = ex.interior(f)
    arr = np.asarray(f.array)
    arr[region.slices] = -1.0  # "compute" on the part that does not read the halo
    for r in ex.rim(f):
        agree(r.domain and all(n > 0 for n in r.domain), "empty rim box")
    done = False
    for _ in range(3):
        done = ex.progress() or done
    ex.wait()
    arr[region.slices] = want[region.slices]
    # Halos hold the values packed at start; the changed interior of others was not sent late.
    dom = tuple(slice(lo, n - hi) for n, (lo, hi) in zip(f.shape, f.halo))
    halo_mask = np.ones(f.shape, dtype=bool)
    halo_mask[dom] = False
    agree(np.array_equal(arr[halo_mask], want[halo_mask]), "halo after overlap")
    # interior + rim tile the compute domain exactly.
    cover = np.zeros(f.shape, dtype=int)
    for r in [region, *ex.rim(f)]:
        cover[r.slices] += 1
    agree(np.all(cover[dom] == 1) and cover.sum() == cover[dom].sum(), "interior + rim tile the domain")


def test_repeated_exchanges_allocate_nothing_new():
    dec = Decomposition(COMM, (10, 10, 6), periodic=True)
    fields = [dec.zeros(np.float64, halo=(2, 2, 0), backend=b) for b in ("gt:cpu_ifirst", "gt:cpu_kfirst")]
    ex = HaloExchange(dec, fields)
    bufs = [id(b) for b in ex.plan.send_buffers]
    for _ in range(3):
        ex.exchange()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for _ in range(20):
        ex.exchange()
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    agree(grown < 4096 and [id(b) for b in ex.plan.send_buffers] == bufs, f"grew by {grown} bytes")


# ---------------------------------------------------------------------------------------------
# Bad input: every rank raises the same error, nothing is written, nothing hangs
# ---------------------------------------------------------------------------------------------
def raises_everywhere(build) -> str:
    with pytest.raises(GridbufValueError) as info:
        build()
    messages = COMM.allgather(str(info.value))
    agree(len(set(messages)) == 1, f"different messages {messages}")
    return messages[0]


def test_bad_inputs_raise_the_same_error_on_every_rank():
    dec = Decomposition(COMM, (10, 8, 3), periodic=True)
    f = dec.zeros(np.float64, halo=(2, 2, 0))
    fill(dec, f)
    before = np.asarray(f.array).copy()
    last = SIZE - 1
    # Widths larger than the halo, on one rank only.
    m = raises_everywhere(lambda: HaloExchange(dec, [f], widths=3 if RANK == last else None))
    agree("exceed the field's halo" in m and f"rank {last}" in m, m)
    # A dtype that differs on one rank.
    if SIZE > 1:
        g = dec.zeros(np.float32 if RANK == last else np.float64, halo=(2, 2, 0))
        m = raises_everywhere(lambda: HaloExchange(dec, [g]))
        agree("dtype" in m and "fields[0]" in m, m)
    # A layout that differs on one rank.
    g = dec.zeros(np.float64, halo=(2, 2, 0), backend="F" if RANK == last else "C")
    if SIZE > 1:
        agree("memory order" in raises_everywhere(lambda: HaloExchange(dec, [g])), "layout mismatch")
    # A shape that does not fit this rank's block.
    bad = gb.Field.zeros((5, 5, 3), np.float64, halo=(2, 2, 0)) if RANK == last else dec.zeros(np.float64, halo=(2, 2, 0))
    agree("interior has" in raises_everywhere(lambda: HaloExchange(dec, [bad])), "shape vs decomposition")
    # A different number of fields.
    if SIZE > 1:
        extra = [f, dec.zeros(halo=(1, 1, 0))] if RANK == last else [f]
        agree("fields" in raises_everywhere(lambda: HaloExchange(dec, extra)), "field count")
    # Widths wider than the neighbour's interior.
    thin = Decomposition(COMM, (SIZE * 2, 3, 2), split="I", periodic=True)
    h = thin.zeros(np.float64, halo=(3, 0, 0))
    agree("interior points of the neighbour" in raises_everywhere(lambda: HaloExchange(thin, [h])), "thin neighbour")
    # Mismatched corners.
    if SIZE > 1:
        agree("corners" in raises_everywhere(lambda: HaloExchange(dec, [f], corners=RANK != last)), "corners")
    agree(np.array_equal(np.asarray(f.array), before), "a failed build wrote into a field")
    # Communication still works after every failure.
    check_exchange(dec, [f])


def test_misuse_is_a_clear_error_and_decomposition_rejects_bad_grids():
    dec = Decomposition(COMM, (8, 8, 2), periodic=True)
    ex = HaloExchange(dec, [dec.zeros(halo=(1, 1, 0))])
    with pytest.raises(GridbufError, match="without start"):
        ex.wait()
    with pytest.raises(GridbufError, match="without start"):
        ex.progress()
    ex.start()
    with pytest.raises(GridbufError, match="in flight"):
        ex.start()
    ex.wait()
    ex.free()
    with pytest.raises(GridbufValueError, match="procs"):
        Decomposition(COMM, (8, 8), procs=(SIZE + 1, 1))
    with pytest.raises(GridbufValueError, match="split"):
        Decomposition(COMM, (8, 8), split="IK")
    # Arguments that differ between ranks: every rank raises, none waits in a collective.
    if SIZE > 1:
        m = raises_everywhere(lambda: Decomposition(COMM, (8 + (RANK == SIZE - 1), 8)))
        agree("every rank passes the same" in m, m)
        # More processes than points along I.
        with pytest.raises(GridbufValueError, match="every process owns at least one point"):
            Decomposition(COMM, (1, 8), procs=(SIZE, 1))


def test_scatter_gather_round_trip_with_data_dim_and_stagger():
    dec = Decomposition(COMM, (7, 9, 3), periodic=(False, True))
    for kw in ({"data_shape": (2,), "halo": (1, 1, 0, 0)}, {"stagger": "I", "halo": (2, 1, 1)}):
        f = dec.zeros(np.float64, backend="gt:cpu_kfirst", **kw)
        g = np.random.default_rng(1).random(dec._global_shape(f))
        dec.scatter(g if RANK == 0 else None, f)
        back = dec.gather(f)
        if RANK == 0:
            agree(np.array_equal(back, g), "round trip")
        else:
            agree(back is None, "gather returns None off root")
    with pytest.raises(GridbufValueError, match="global shape"):
        dec.scatter(np.zeros((1, 1, 1)) if RANK == 0 else None, f)
