"""Distributed fields: a block decomposition over MPI and the halo exchange of gridbuf fields.

Each process owns a block of the global grid plus halos. :class:`Decomposition` splits the
global index space over an mpi4py communicator and allocates the local blocks as
:class:`gridbuf.Field` objects whose origin is the halo; :class:`HaloExchange` refreshes the
halos of a list of fields from the neighbours' interiors, one message per neighbour rank that
carries every field, with a plan built once and reused.

mpi4py is an optional dependency (``pip install gridbuf[mpi]``) imported only when a function
here needs it; ``import gridbuf`` does not import it. The block arithmetic, the exchange plan
and the packing of strided regions live in the Rust core; this module moves the bytes with MPI.

Run under an MPI launcher: ``mpiexec -n 4 python my_model.py``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from . import _gridbuf
from .errors import GridbufError, GridbufTypeError, GridbufValueError
from .field import Field

if TYPE_CHECKING:  # pragma: no cover
    from mpi4py import MPI

__all__ = ["Decomposition", "HaloExchange", "Region"]

_SPATIAL = ("I", "J", "K")


def _mpi() -> Any:
    """The mpi4py ``MPI`` module, imported on first use."""
    try:
        from mpi4py import MPI
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise GridbufError(
            "gridbuf.distributed needs mpi4py: pip install 'gridbuf[mpi]' (on a cluster, build mpi4py "
            "against the site MPI)"
        ) from exc
    return MPI


class Region(NamedTuple):
    """A box of a field: ``origin`` (first index per axis) and ``domain`` (length per axis), the
    arguments a stencil takes."""

    origin: tuple[int, ...]
    domain: tuple[int, ...]

    @property
    def slices(self) -> tuple[slice, ...]:
        """The box as slices, to index the field's array."""
        return tuple(slice(o, o + n) for o, n in zip(self.origin, self.domain))


def _describe(exc: BaseException) -> str:
    """The message of an error, with its class unless it is a gridbuf error."""
    return str(exc) if isinstance(exc, GridbufError) else f"{type(exc).__name__}: {exc}"


def _as_dims(value: Any, param: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(value)
    try:
        return tuple(str(v) for v in value)
    except TypeError:
        raise GridbufTypeError(f"invalid type for {param} ({type(value).__name__}): expected a str such as 'IJ'") from None


class Decomposition:
    """A global index space split into blocks over the processes of an MPI communicator.

    Parameters
    ----------
    comm : mpi4py.MPI.Intracomm
        The processes. A Cartesian communicator (``comm.Create_cart``) fixes the process grid
        and periodicity; any other communicator is laid out as a row-major process grid.
    shape : sequence of int
        Global number of points per dim (interior, without halos).
    dims : str, optional
        Names of the dims of ``shape``, from ``"IJK"``. Default ``"IJK"[:len(shape)]``.
    split : str, optional
        Dims split over processes. Default: those of ``"IJ"`` that are in ``dims``.
    procs : sequence of int, optional
        Processes per split dim; their product is the communicator's size. Default
        ``MPI.Compute_dims(size, len(split))``.
    periodic : bool or sequence of bool, optional
        Whether each split dim wraps around. Default ``False``.

    Raises
    ------
    GridbufValueError
        Dims, split, procs or periodic that do not fit, or more processes than points.

    Notes
    -----
    Block sizes differ by at most one point when a global size does not divide evenly: the
    first ``shape % procs`` blocks get one more. The decomposition keeps a duplicate of ``comm``
    for :meth:`scatter` and :meth:`gather`, so their messages never meet the caller's.
    """

    def __init__(
        self,
        comm: MPI.Intracomm,
        shape: Sequence[int],
        *,
        dims: str | Sequence[str] | None = None,
        split: str | Sequence[str] | None = None,
        procs: Sequence[int] | None = None,
        periodic: bool | Sequence[bool] = False,
    ) -> None:
        MPI = _mpi()
        error = None
        try:
            self._setup(MPI, comm, shape, dims, split, procs, periodic)
            params = (self.shape, self.dims, self.split, self.procs, self.periodic)
        except Exception as exc:  # every rank must reach the allgather below
            error, params = _describe(exc), None
        # Collective: every rank raises the same error, or none does (nothing is left waiting).
        everyone = comm.allgather((error, params))
        for rank, (err, _) in enumerate(everyone):
            if err is not None:
                raise GridbufValueError(f"on rank {rank}: {err}")
        for rank, (_, p) in enumerate(everyone):
            if p != everyone[0][1]:
                raise GridbufValueError(
                    f"invalid decomposition: rank 0 has (shape, dims, split, procs, periodic) = {everyone[0][1]} but "
                    f"rank {rank} has {p}; every rank passes the same"
                )
        self.comm = comm.Dup()

    def _setup(self, MPI: Any, comm: Any, shape: Any, dims: Any, split: Any, procs: Any, periodic: Any) -> None:
        """Checks the arguments on this rank and sets the attributes (no communication)."""
        shape = tuple(int(n) for n in shape)
        dims = _SPATIAL[: len(shape)] if dims is None else _as_dims(dims, "dims")
        if len(dims) != len(shape) or len(set(dims)) != len(dims) or not set(dims) <= set(_SPATIAL):
            raise GridbufValueError(
                f"invalid dims {''.join(dims)!r}: expected {len(shape)} distinct names from 'IJK', one per entry of shape {shape}"
            )
        if any(n < 1 for n in shape):
            raise GridbufValueError(f"invalid shape {shape}: every dim needs at least one point")
        is_cart = comm.Get_topology() == MPI.CART
        if split is None:
            split = tuple(d for d in "IJ" if d in dims)
            if is_cart and comm.Get_dim() != len(split):
                split = tuple(dims[: comm.Get_dim()])
        split = _as_dims(split, "split")
        if not split or len(set(split)) != len(split) or not set(split) <= set(dims):
            raise GridbufValueError(f"invalid split {''.join(split)!r}: expected distinct dims of {''.join(dims)!r}")
        size = comm.Get_size()
        if isinstance(periodic, (bool, np.bool_)):
            periodic = (bool(periodic),) * len(split)
        periodic = tuple(bool(p) for p in periodic)
        if is_cart:
            if comm.Get_dim() != len(split):
                raise GridbufValueError(
                    f"invalid split {''.join(split)!r}: the Cartesian communicator has {comm.Get_dim()} dims"
                )
            cart_procs = tuple(int(p) for p in comm.dims)
            if procs is not None and tuple(procs) != cart_procs:
                raise GridbufValueError(f"invalid procs {tuple(procs)}: the Cartesian communicator has {cart_procs}")
            procs = cart_procs
            periodic = tuple(bool(p) for p in comm.periods)
        elif procs is None:
            procs = tuple(MPI.Compute_dims(size, len(split)))
        procs = tuple(int(p) for p in procs)
        if len(periodic) != len(split):
            raise GridbufValueError(f"invalid periodic {periodic}: expected one bool per split dim {''.join(split)!r}")
        if len(procs) != len(split) or math.prod(procs) != size:
            raise GridbufValueError(
                f"invalid procs {procs}: expected one count per split dim {''.join(split)!r} whose product is the "
                f"communicator's size {size}"
            )
        self.dims: tuple[str, ...] = dims
        self.split: tuple[str, ...] = split
        self.shape: tuple[int, ...] = shape
        self.procs: tuple[int, ...] = procs
        self.periodic: tuple[bool, ...] = periodic
        self._core = _gridbuf.BlockDecomposition(
            list(split), [shape[dims.index(d)] for d in split], list(procs), list(periodic)
        )
        self.rank: int = comm.Get_rank()
        self.size: int = size
        self.coords: tuple[int, ...] = tuple(self._core.coords(self.rank))
        if is_cart and tuple(comm.Get_coords(self.rank)) != self.coords:  # pragma: no cover
            raise GridbufValueError("the Cartesian communicator does not number its ranks in row-major order")


    # -- blocks --------------------------------------------------------------------------------
    def _split_index(self, dim: str) -> int | None:
        return self.split.index(dim) if dim in self.split else None

    def bounds(self, rank: int | None = None) -> tuple[tuple[int, int], ...]:
        """Global ``(start, stop)`` per dim of the block of ``rank`` (default: this process)."""
        coords = self.coords if rank is None else tuple(self._core.coords(rank))
        out = []
        for d, n in zip(self.dims, self.shape):
            s = self._split_index(d)
            out.append((0, n) if s is None else self._core.block(s, coords[s]))
        return tuple(out)

    @property
    def start(self) -> tuple[int, ...]:
        """Global index of this process's first point per dim."""
        return tuple(b[0] for b in self.bounds())

    @property
    def stop(self) -> tuple[int, ...]:
        """Global index past this process's last point per dim."""
        return tuple(b[1] for b in self.bounds())

    @property
    def local_shape(self) -> tuple[int, ...]:
        """Points this process owns per dim (no halo)."""
        return tuple(b - a for a, b in self.bounds())

    def neighbour(self, offset: Sequence[int]) -> int | None:
        """Rank of the process at ``offset`` (-1, 0 or 1 per split dim) from this one, wrapping
        periodic dims; ``None`` past a non-periodic edge."""
        offset = [int(o) for o in offset]
        if len(offset) != len(self.split) or any(o not in (-1, 0, 1) for o in offset):
            raise GridbufValueError(f"invalid offset {tuple(offset)}: expected -1, 0 or 1 per split dim {''.join(self.split)!r}")
        return self._core.shift(list(self.coords), offset)

    def neighbours(self, corners: bool = True) -> dict[tuple[int, ...], int]:
        """Rank of every neighbour by offset; diagonal neighbours too when ``corners``."""
        return {tuple(o): r for o, r in self._core.neighbours(self.rank, corners)}

    def owner(self, index: Sequence[int]) -> int:
        """Rank of the process that owns global ``index`` (one entry per dim)."""
        index = self._check_index(index, "index")
        coords = [self._core.owner(s, index[self.dims.index(d)]) for s, d in enumerate(self.split)]
        rank = self._core.shift(coords, [0] * len(coords))
        assert rank is not None  # a zero shift never leaves the grid
        return rank

    def _check_index(self, index: Sequence[int], param: str) -> tuple[int, ...]:
        index = tuple(int(i) for i in index)
        if len(index) != len(self.dims):
            raise GridbufValueError(f"invalid {param} {index}: expected one entry per dim {''.join(self.dims)!r}")
        return index

    def to_local(self, index: Sequence[int], field: Any = None) -> tuple[int, ...]:
        """Local index of global ``index`` (one entry per dim): relative to this process's first
        point, plus the origin of ``field`` (its lower halo) when given."""
        index = self._check_index(index, "index")
        local = [g - s for g, s in zip(index, self.start)]
        return self._shift_by_origin(local, field, +1)

    def to_global(self, index: Sequence[int], field: Any = None) -> tuple[int, ...]:
        """Global index of local ``index``; the inverse of :meth:`to_local` (not wrapped)."""
        index = list(self._check_index(index, "index"))
        local = self._shift_by_origin(index, field, -1)
        return tuple(i + s for i, s in zip(local, self.start))

    def _shift_by_origin(self, index: list[int], field: Any, sign: int) -> tuple[int, ...]:
        if field is None:
            return tuple(index)
        f = field if isinstance(field, Field) else Field(field)
        for k, d in enumerate(self.dims):
            if d in f.dims:
                index[k] += sign * f.origin[f.dims.index(d)]
        return tuple(index)

    # -- allocation ----------------------------------------------------------------------------
    def _local_shape(
        self, dims: tuple[str, ...], data_shape: tuple[int, ...], halo: Any, stagger: str
    ) -> tuple[tuple[int, ...], tuple[tuple[int, int], ...]]:
        spatial = [d for d in dims if d in _SPATIAL]
        if any(d not in self.dims for d in spatial) or len(set(dims)) != len(dims):
            raise GridbufValueError(
                f"invalid dims {''.join(dims)!r}: expected distinct dims of the decomposition {''.join(self.dims)!r}, then data dims"
            )
        ndata = len(dims) - len(spatial)
        if len(data_shape) != ndata:
            raise GridbufValueError(f"invalid data_shape {data_shape}: dims {''.join(dims)!r} have {ndata} data dims")
        if any(d not in spatial for d in stagger):
            raise GridbufValueError(f"invalid stagger {stagger!r}: expected dims of {''.join(spatial)!r}")
        if halo is None:
            halo = 0
        if isinstance(halo, (int, np.integer)):
            halo = [halo if d in _SPATIAL else 0 for d in dims]
        halo = list(halo)
        if len(halo) != len(dims):
            raise GridbufValueError(f"invalid halo {tuple(halo)}: expected one entry per dim of {''.join(dims)!r}")
        pairs = tuple((int(h), int(h)) if isinstance(h, (int, np.integer)) else (int(h[0]), int(h[1])) for h in halo)
        local = dict(zip(self.dims, self.local_shape))
        shape, data = [], iter(data_shape)
        for d, (lo, hi) in zip(dims, pairs):
            n = local[d] + (d in stagger) if d in _SPATIAL else next(data)
            shape.append(lo + n + hi)
        return tuple(shape), pairs

    def empty(
        self,
        dtype: Any = np.float64,
        *,
        dims: str | Sequence[str] | None = None,
        halo: Any = None,
        data_shape: Sequence[int] = (),
        stagger: str = "",
        backend: str | None = None,
        **kwargs: Any,
    ) -> Field:
        """Allocate this process's block of a field, uninitialised.

        Parameters
        ----------
        dtype : dtype
            Element type.
        dims : str, optional
            Dims of the field: dims of the decomposition, then data dims (``"0"``, ...).
            Default: the decomposition's dims, then one data dim per entry of ``data_shape``.
        halo : int or sequence of int or (int, int), optional
            Halo per axis (as for :func:`gridbuf.zeros`); an int applies to the spatial dims.
        data_shape : sequence of int
            Extent of each data dim.
        stagger : str
            Dims along which the field has one more point than the cells (faces): its interior
            is the block plus one, the last point shared with the next block.
        backend : str, optional
            gridbuf preset (layout, alignment), e.g. ``"gt:cpu_kfirst"``.
        **kwargs
            Other allocation keywords of :func:`gridbuf.empty` (``aligned_index``, ``alignment``, ...).

        Returns
        -------
        Field
            The local block, halo included; its origin is the lower halo.
        """
        return self._allocate(Field.empty, (), dtype, dims, halo, data_shape, stagger, backend, kwargs)

    def zeros(self, dtype: Any = np.float64, **kwargs: Any) -> Field:
        """Like :meth:`empty`, filled with zeros."""
        return self._allocate_kw(Field.zeros, (), dtype, kwargs)

    def ones(self, dtype: Any = np.float64, **kwargs: Any) -> Field:
        """Like :meth:`empty`, filled with ones."""
        return self._allocate_kw(Field.ones, (), dtype, kwargs)

    def full(self, fill_value: Any, dtype: Any = np.float64, **kwargs: Any) -> Field:
        """Like :meth:`empty`, filled with ``fill_value``."""
        return self._allocate_kw(Field.full, (fill_value,), dtype, kwargs)

    def _allocate_kw(self, fn: Any, extra: tuple[Any, ...], dtype: Any, kwargs: dict[str, Any]) -> Field:
        dims = kwargs.pop("dims", None)
        halo = kwargs.pop("halo", None)
        data_shape = kwargs.pop("data_shape", ())
        stagger = kwargs.pop("stagger", "")
        backend = kwargs.pop("backend", None)
        return self._allocate(fn, extra, dtype, dims, halo, data_shape, stagger, backend, kwargs)

    def _allocate(
        self,
        fn: Any,
        extra: tuple[Any, ...],
        dtype: Any,
        dims: Any,
        halo: Any,
        data_shape: Sequence[int],
        stagger: str,
        backend: str | None,
        kwargs: dict[str, Any],
    ) -> Field:
        data_shape = tuple(int(n) for n in data_shape)
        if dims is None:
            dims = self.dims + tuple(str(k) for k in range(len(data_shape)))
        dims = _as_dims(dims, "dims")
        shape, pairs = self._local_shape(dims, data_shape, halo, stagger)
        return fn(shape, *extra, dtype, backend=backend, dims=dims, halo=pairs, **kwargs)

    # -- scatter / gather ----------------------------------------------------------------------
    def _block_slices(self, f: Field, rank: int) -> tuple[tuple[slice, ...], tuple[slice, ...]]:
        """For ``rank``: slices of the global array and of the local field's array (interior)."""
        bounds = dict(zip(self.dims, self.bounds(rank)))
        local_bounds = dict(zip(self.dims, self.bounds()))
        glob, loc = [], []
        for d, n, (lo, hi) in zip(f.dims, f.shape, f.halo):
            interior = n - lo - hi
            if d in bounds:
                a, b = bounds[d]
                st = interior - (local_bounds[d][1] - local_bounds[d][0])
                glob.append(slice(a, b + st))
                loc.append(slice(lo, lo + (b - a) + st))
            else:
                glob.append(slice(0, interior))
                loc.append(slice(lo, lo + interior))
        return tuple(glob), tuple(loc)

    def _global_shape(self, f: Field) -> tuple[int, ...]:
        out = []
        for d, n, (lo, hi) in zip(f.dims, f.shape, f.halo):
            interior = n - lo - hi
            if d in self.dims:
                k = self.dims.index(d)
                interior += self.shape[k] - self.local_shape[k]
            out.append(interior)
        return tuple(out)

    def scatter(self, array: Any, field: Any, root: int = 0) -> None:
        """Copy the blocks of the global ``array`` on rank ``root`` into the interior of every
        process's ``field`` (halos untouched). Collective.

        ``array`` (read on ``root`` only) has the field's dims and, per dim, the global number
        of points (plus one along staggered dims); data dims as the field's interior.
        """
        MPI = _mpi()
        f = field if isinstance(field, Field) else Field(field)
        arr = np.asarray(f.array)
        err = None
        if self.rank == root:
            try:
                src = np.asarray(array)
                want = self._global_shape(f)
                if src.shape != want:
                    err = f"invalid array shape {src.shape}: expected the global shape {want} of the field's dims {''.join(f.dims)!r}"
            except Exception as exc:  # the other ranks wait in the bcast below
                err = _describe(exc)
        err = self.comm.bcast(err, root=root)
        if err is not None:
            raise GridbufValueError(err)
        _, loc = self._block_slices(f, self.rank)
        if self.rank == root:
            for r in range(self.size):
                glob, _ = self._remote_slices(f, r)
                block = np.ascontiguousarray(src[glob], dtype=arr.dtype)
                if r == root:
                    arr[loc] = block
                else:
                    self.comm.Send([block, MPI.BYTE], dest=r, tag=1)
        else:
            block = np.empty(tuple(s.stop - s.start for s in loc), dtype=arr.dtype)
            self.comm.Recv([block, MPI.BYTE], source=root, tag=1)
            arr[loc] = block

    def _remote_slices(self, f: Field, rank: int) -> tuple[tuple[slice, ...], None]:
        """Slices of the global array for ``rank``'s block of a field shaped like ``f``."""
        bounds = dict(zip(self.dims, self.bounds(rank)))
        local_bounds = dict(zip(self.dims, self.bounds()))
        glob = []
        for d, n, (lo, hi) in zip(f.dims, f.shape, f.halo):
            interior = n - lo - hi
            if d in bounds:
                a, b = bounds[d]
                st = interior - (local_bounds[d][1] - local_bounds[d][0])
                glob.append(slice(a, b + st))
            else:
                glob.append(slice(0, interior))
        return tuple(glob), None

    def gather(self, field: Any, root: int = 0) -> np.ndarray | None:
        """Collect the interiors of every process's ``field`` into one global array on rank
        ``root`` (``None`` elsewhere). Collective."""
        MPI = _mpi()
        f = field if isinstance(field, Field) else Field(field)
        arr = np.asarray(f.array)
        _, loc = self._block_slices(f, self.rank)
        mine = np.ascontiguousarray(arr[loc])
        if self.rank != root:
            self.comm.Send([mine, MPI.BYTE], dest=root, tag=2)
            return None
        out = np.empty(self._global_shape(f), dtype=arr.dtype)
        for r in range(self.size):
            glob, _ = self._remote_slices(f, r)
            if r == root:
                out[glob] = mine
            else:
                block = np.empty(tuple(s.stop - s.start for s in glob), dtype=arr.dtype)
                self.comm.Recv([block, MPI.BYTE], source=r, tag=2)
                out[glob] = block
        return out

    def __repr__(self) -> str:
        return (
            f"Decomposition(shape={self.shape}, dims={''.join(self.dims)!r}, split={''.join(self.split)!r}, "
            f"procs={self.procs}, periodic={self.periodic}, rank={self.rank}, bounds={self.bounds()})"
        )


def _widths_for(f: Field, spec: Any, split: tuple[str, ...], k: int) -> list[tuple[int, int]]:
    """Exchange widths of field ``k`` per split dim from a user spec."""
    halo = dict(zip(f.dims, f.halo))
    out: list[tuple[int, int]] = []
    w: Any
    for d in split:
        if d not in halo:
            out.append((0, 0))
            continue
        if spec is None:
            w = halo[d]
        elif isinstance(spec, Mapping):
            w = spec.get(d, halo[d])
        elif isinstance(spec, (int, np.integer)):
            w = spec
        else:
            raise GridbufTypeError(
                f"invalid type for widths[{k}] ({type(spec).__name__}): expected None, an int, or a dict from dim "
                "name to an int or a (low, high) pair"
            )
        try:
            pair = (int(w), int(w)) if isinstance(w, (int, np.integer)) else (int(w[0]), int(w[1]))
        except (TypeError, IndexError, ValueError):
            raise GridbufValueError(f"invalid widths[{k}][{d!r}] {w!r}: expected an int or a (low, high) pair") from None
        if min(pair) < 0:
            raise GridbufValueError(f"invalid widths[{k}][{d!r}] {pair}: widths are not negative")
        out.append(pair)
    return out


def _memory_order(f: Field) -> str:
    order = sorted(range(len(f.dims)), key=lambda a: -abs(f.strides[a]))
    return "".join(f.dims[a] for a in order)


class HaloExchange:
    """The halo exchange of a list of fields over a :class:`Decomposition`. Collective.

    Built once (regions, message sizes, buffers and persistent MPI requests), then run as often
    as needed with :meth:`exchange`, or :meth:`start` / :meth:`progress` / :meth:`wait` to overlap
    it with computation on :meth:`interior`. Every field bound for one neighbour rank travels in
    one message, whatever the fields' dtypes, layouts, data dims and stagger.

    Parameters
    ----------
    decomposition : Decomposition
        The decomposition the fields were allocated on.
    fields : sequence of Field or array
        The local blocks; arrays are read as :class:`gridbuf.Field` (dims and halo from their
        allocation). Every process passes the same list (same dims, dtypes, halos, layouts).
    widths : None, int, dict or sequence, optional
        Points exchanged on each side of each split dim. ``None``: each field's halo. An int: on
        every side of every field. A dict from dim name to an int or a ``(low, high)`` pair
        (missing dims: the halo). A list: one of these per field. At most the halo, and at most
        the neighbour's interior; a side may be 0.
    corners : bool
        Also exchange with diagonal neighbours, so that corner halo points are filled. Default True.
    threads : bool
        Pack and unpack messages of a mebibyte or more on gridbuf's thread pool. Default False:
        MPI jobs usually run one rank per core, where extra threads only compete with the ranks.

    Raises
    ------
    GridbufValueError
        On every process alike, when on any process a field does not fit the decomposition,
        widths exceed a halo or a neighbour's interior, or the fields differ across processes.
        Nothing is written and nothing is left pending.

    Notes
    -----
    The exchange keeps a duplicate of the decomposition's communicator, so its messages never
    meet the caller's. Halos of non-periodic outer sides are left as they are.
    """

    def __init__(
        self,
        decomposition: Decomposition,
        fields: Sequence[Any],
        *,
        widths: Any = None,
        corners: bool = True,
        threads: bool = False,
    ) -> None:
        MPI = _mpi()
        self.threads = bool(threads)
        if not isinstance(decomposition, Decomposition):
            raise GridbufTypeError(
                f"invalid type for decomposition ({type(decomposition).__name__}): expected gridbuf.distributed.Decomposition"
            )
        dec = self.decomposition = decomposition
        self.corners = bool(corners)
        error: str | None = None
        summary: Any = None
        plan = None
        try:
            fields = [f if isinstance(f, Field) else Field(f) for f in fields]
            if isinstance(widths, (list, tuple)):
                if len(widths) != len(fields):
                    raise GridbufValueError(
                        f"invalid widths (a list of {len(widths)}): expected one entry per field ({len(fields)})"
                    )
                per_field = list(widths)
            else:
                per_field = [widths] * len(fields)
            specs, summary = [], []
            for k, f in enumerate(fields):
                bad = [d for d in f.dims if d in _SPATIAL and d not in dec.dims]
                if bad:
                    raise GridbufValueError(
                        f"invalid dims of fields[{k}] {''.join(f.dims)!r}: {bad[0]} is not a dim of the decomposition "
                        f"{''.join(dec.dims)!r}"
                    )
                w = _widths_for(f, per_field[k], dec.split, k)
                axes = [f.dims.index(d) if d in f.dims else None for d in dec.split]
                halo = [f.halo[a] if a is not None else (0, 0) for a in axes]
                specs.append((axes, halo, w))
                other = tuple(
                    (d, n) for d, n, a in zip(f.dims, f.shape, range(len(f.dims))) if a not in axes
                )
                summary.append((f.dims, f.dtype.str, other, tuple(halo), tuple(w), _memory_order(f)))
            plan = _gridbuf.HaloExchangePlan(
                [f.array for f in fields],
                specs,
                list(dec.split),
                [dec.shape[dec.dims.index(d)] for d in dec.split],
                list(dec.procs),
                list(dec.periodic),
                dec.rank,
                self.corners,
            )
            summary.append(("stagger", tuple(tuple(s) for s in plan.stagger)))
        except Exception as exc:  # every rank must reach the allgather below
            error = _describe(exc)
        everyone = dec.comm.allgather((error, summary, self.corners))
        message = _collective_error(everyone)
        if message is not None:
            raise GridbufValueError(message)
        assert plan is not None
        self.fields: list[Field] = list(fields)
        self.plan = plan
        self.widths: list[list[tuple[int, int]]] = [s[2] for s in specs]
        self.comm = dec.comm.Dup()
        self._active = False
        # Persistent requests: receives and sends, per peer (messages to this process itself
        # are copied by the core instead).
        self._recvs: list[Any] = []
        self._sends: list[Any] = []
        self._self_messages: list[int] = []
        for i, (peer, ns, nr, sbuf, rbuf) in enumerate(
            zip(plan.peers, plan.send_bytes, plan.recv_bytes, plan.send_buffers, plan.recv_buffers)
        ):
            if peer == dec.rank:
                self._self_messages.append(i)
                continue
            if nr:
                self._recvs.append(self.comm.Recv_init([rbuf, MPI.BYTE], source=peer, tag=7))
            if ns:
                self._sends.append(self.comm.Send_init([sbuf, MPI.BYTE], dest=peer, tag=7))
        self._requests = self._recvs + self._sends

    @property
    def nbytes(self) -> int:
        """Bytes this process sends per exchange (messages to itself included)."""
        return int(sum(self.plan.send_bytes))

    @property
    def peers(self) -> list[int]:
        """Ranks this process exchanges with (its own rank for periodic wrap onto itself)."""
        return list(self.plan.peers)

    def start(self) -> None:
        """Post the receives, copy the messages a process sends to itself, pack every message
        to another process and send them. Pair with :meth:`wait`."""
        if self._active:
            raise GridbufError("HaloExchange.start() called while an exchange is in flight: call wait() first")
        MPI = _mpi()
        if self._recvs:
            MPI.Prequest.Startall(self._recvs)
        for i in self._self_messages:
            self.plan.copy_local(i)
        if self._sends:
            self.plan.pack(None, self.threads)
            MPI.Prequest.Startall(self._sends)
        self._active = True

    def progress(self) -> bool:
        """Let MPI move the messages along (``MPI_Testall``); True once all have arrived. Call it
        now and then during interior work: many MPI libraries only progress inside MPI calls."""
        if not self._active:
            raise GridbufError("HaloExchange.progress() called without start()")
        if not self._requests:
            return True
        return bool(_mpi().Request.Testall(self._requests))

    def wait(self) -> None:
        """Wait for every message, then unpack them all into the halos in one pass over the
        fields (rows of different messages that lie side by side in memory written together)."""
        if not self._active:
            raise GridbufError("HaloExchange.wait() called without start()")
        MPI = _mpi()
        self._active = False
        if self._recvs:
            MPI.Request.Waitall(self._recvs)
            self.plan.unpack(None, self.threads)
        if self._sends:
            MPI.Request.Waitall(self._sends)

    def exchange(self) -> None:
        """Refresh every halo: :meth:`start` then :meth:`wait`."""
        self.start()
        self.wait()

    def _field_index(self, field: Any) -> int:
        if isinstance(field, (int, np.integer)):
            if not 0 <= field < len(self.fields):
                raise GridbufValueError(f"invalid field {field}: the exchange has {len(self.fields)} fields")
            return int(field)
        for k, f in enumerate(self.fields):
            if field is f or field is f.array:
                return k
        raise GridbufValueError("invalid field: not one of the exchange's fields")

    def _boxes(self, field: Any, extent: Any) -> tuple[Field, list[tuple[int, int]], list[tuple[int, int]]]:
        """Compute domain per axis and the margins per axis that depend on the halo."""
        k = self._field_index(field)
        f = self.fields[k]
        dom = [(lo, n - lo - hi) for n, (lo, hi) in zip(f.shape, f.halo)]
        margins = [(0, 0)] * len(f.dims)
        dec = self.decomposition
        for s, d in enumerate(dec.split):
            if d not in f.dims:
                continue
            a = f.dims.index(d)
            if extent is None:
                w = self.widths[k][s]
            elif isinstance(extent, (int, np.integer)):
                w = (int(extent), int(extent))
            else:
                e = extent[a]
                w = (int(e), int(e)) if isinstance(e, (int, np.integer)) else (int(e[0]), int(e[1]))
            off = [0] * len(dec.split)
            lo = hi = 0
            off[s] = -1
            if dec.neighbour(off) is not None:
                lo = w[0]
            off[s] = 1
            if dec.neighbour(off) is not None:
                hi = w[1]
            margins[a] = (min(lo, dom[a][1]), min(hi, max(dom[a][1] - lo, 0)))
        return f, dom, margins

    def interior(self, field: Any = 0, extent: Any = None) -> Region:
        """The part of a field's compute domain that does not read the exchanged halo.

        Parameters
        ----------
        field : int or Field
            One of the exchange's fields (default the first).
        extent : int or sequence, optional
            How far the stencil reads on each side (an int, or per axis an int or a
            ``(low, high)`` pair). Default: the exchange widths.

        Returns
        -------
        Region
            ``origin`` and ``domain``: the compute domain shrunk by ``extent`` on each side that
            has a neighbour. Compute there between :meth:`start` and :meth:`wait`.
        """
        f, dom, margins = self._boxes(field, extent)
        origin = tuple(o + m[0] for (o, _), m in zip(dom, margins))
        domain = tuple(n - m[0] - m[1] for (_, n), m in zip(dom, margins))
        return Region(origin, domain)

    def rim(self, field: Any = 0, extent: Any = None) -> list[Region]:
        """The rest of the compute domain, outside :meth:`interior`, as disjoint boxes: compute
        there after :meth:`wait`."""
        f, dom, margins = self._boxes(field, extent)
        lo = [o for o, _ in dom]
        hi = [o + n for o, n in dom]
        boxes = []
        for a, (m0, m1) in enumerate(margins):
            for start, stop in ((lo[a], lo[a] + m0), (hi[a] - m1, hi[a])):
                if stop > start:
                    o = list(lo)
                    n = [h - l for l, h in zip(lo, hi)]
                    o[a], n[a] = start, stop - start
                    if all(x > 0 for x in n):
                        boxes.append(Region(tuple(o), tuple(n)))
            lo[a] += m0
            hi[a] -= m1
        return boxes

    def free(self) -> None:
        """Release the persistent requests and the duplicated communicator. Collective."""
        if self._active:
            raise GridbufError("HaloExchange.free() called while an exchange is in flight: call wait() first")
        for r in self._requests:
            r.Free()
        self._requests = []
        self.comm.Free()

    def __repr__(self) -> str:
        return (
            f"HaloExchange({len(self.fields)} fields, peers={self.peers}, {self.nbytes} bytes sent per exchange, "
            f"corners={self.corners})"
        )


def _collective_error(everyone: list[Any]) -> str | None:
    """The one message every rank raises, from every rank's (error, summary, corners); None when
    all is well. Computed from the allgathered list, so it is the same on every rank."""
    for rank, (err, _, _) in enumerate(everyone):
        if err is not None:
            return f"on rank {rank}: {err}"
    names = ("dims", "dtype", "non-decomposed extents", "halo", "widths", "memory order")
    err0, first, corners0 = everyone[0]
    for rank, (_, summary, corners) in enumerate(everyone[1:], start=1):
        if corners != corners0:
            return f"invalid corners: {corners0} on rank 0 but {corners} on rank {rank}; pass the same on every rank"
        if len(summary) != len(first):
            return (
                f"invalid fields: {len(first) - 1} fields on rank 0 but {len(summary) - 1} on rank {rank}; every rank "
                "passes the same list"
            )
        for k, (a, b) in enumerate(zip(first, summary)):
            if a == b:
                continue
            if a[0] == "stagger":
                return (
                    f"invalid fields: the stagger per field differs, {a[1]} on rank 0 but {b[1]} on rank {rank}; "
                    "every rank's interior must be its block (or the block plus one) alike"
                )
            for name, x, y in zip(names, a, b):
                if x != y:
                    return f"invalid fields[{k}]: {name} {x} on rank 0 but {y} on rank {rank}; every rank passes matching fields"
    return None

