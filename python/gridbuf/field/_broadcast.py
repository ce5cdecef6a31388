"""Broadcasting Fields, arrays and scalars by dims: the cached core answer (a ``_Broadcast``:
which operands to transpose or reshape, how to allocate and label the result), the memory order
large results are computed in, and the operands and ``out=`` arguments of an operation."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _gridbuf
from . import _cache
from ._cache import _intern, _remember
from .._gridbuf import FieldDescriptor, FieldMeta
from ..errors import GridbufTypeError, GridbufValueError

# Bound by assignment, not import: CPython 3.11 compiles `name.get(...)` on an imported name
# as an attribute load plus call instead of a method call, which costs tens of nanoseconds.
_BROADCASTS = _cache._BROADCASTS

_empty = _gridbuf.empty
_object_new = object.__new__
_WEAK = (int, float, complex)

if TYPE_CHECKING:
    from .._gridbuf import OutputParams
    from ._types import FieldLike, _Storage

    #: The Field class, ``gridbuf.field.Field``, bound here by the package once the class exists
    #: (the package imports this module, never the other way round).
    Field: type[FieldLike]
else:
    Field = None


class _Broadcast:
    """A cached broadcast: which operands to transpose/reshape, and how to allocate and label the
    result (None when writing into ``out=``)."""

    __slots__ = ("fix", "shape", "kwargs", "dims", "halo", "origin", "meta", "storage", "desc", "kid", "order")
    fix: tuple[tuple[int, Any, Any], ...]
    shape: tuple[int, ...]
    kwargs: dict[str, Any]
    dims: tuple[str, ...]
    halo: tuple[tuple[int, int], ...]
    origin: tuple[int, ...]
    meta: FieldMeta
    storage: _Storage
    desc: FieldDescriptor
    kid: int
    order: tuple[int, ...] | None

    def __init__(self, aligned: Any, params: OutputParams | None) -> None:
        self.fix = tuple((i, p, r) for i, (p, r) in enumerate(aligned) if p is not None or r is not None)
        self.order = None
        if params is None:  # writing into out=: nothing to allocate, the result attributes stay unset
            return
        dims, shape, layout, halo, backend = params.dims, params.shape, params.layout, params.halo, params.backend
        alignment, aligned_index, kwargs = params.alignment, params.aligned_index, params.kwargs
        self.shape, self.kwargs, self.dims, self.halo = shape, kwargs, dims, halo
        self.order = _memory_order(layout, shape)
        self.origin = tuple(lo for lo, _ in halo)
        self.meta = FieldMeta(dims, halo, self.origin)
        self.storage = (backend, layout, alignment, aligned_index)
        self.desc = FieldDescriptor(dims, shape, halo, layout, None, alignment, aligned_index, backend)
        self.kid = _intern(self.desc)

    def allocate(self, dtype: Any) -> Any:
        return _empty(self.shape, dtype, **self.kwargs)

    def wrap(self, array: Any) -> Any:
        """The allocated result as a Field (a NumPy scalar when it has no dims)."""
        if not self.dims:
            return array[()]
        f = _object_new(Field)
        f._array = f._nd = array
        f._meta = self.meta
        f._storage, f._desc, f._kid = self.storage, self.desc, self.kid
        return f


#: From this many elements on, a ufunc runs on views whose axes are in the result's memory order.
_LARGE = 1 << 15


def _memory_order(layout: Sequence[int], shape: Sequence[int]) -> tuple[int, ...] | None:
    """The axes from the largest to the unit stride, for large results not in index order.

    NumPy's iterator follows the operands' strides where they agree and the order of the axes
    where they do not; viewing every operand in the result's memory order makes it write the
    result contiguously when operands of other layouts are mixed in (about 3x faster for an
    I-first result computed from a K-first operand).
    """
    order = tuple(sorted(range(len(layout)), key=lambda ax: layout[ax]))
    if order == tuple(range(len(layout))) or math.prod(shape) < _LARGE:
        return None
    return order


def _in_order(order: tuple[int, ...], arrays: list[Any], out: Any) -> tuple[list[Any], Any]:
    """Operands and outputs viewed with their axes in ``order`` (scalars and arrays of fewer axes,
    which broadcast, are kept)."""
    n = len(order)
    arrays = [a.transpose(order) if getattr(a, "ndim", 0) == n else a for a in arrays]
    if isinstance(out, tuple):
        return arrays, tuple(o.transpose(order) for o in out)
    return arrays, out.transpose(order)


def _out_order(out_arrays: tuple[Any, ...]) -> tuple[int, ...] | None:
    """The memory order of a large ``out=`` array not in index order, else None."""
    o = out_arrays[0]
    strides = getattr(o, "strides", None)
    if strides is None or o.size < _LARGE:
        return None
    order = tuple(sorted(range(o.ndim), key=lambda ax: -abs(strides[ax])))
    return None if order == tuple(range(o.ndim)) else order


def _operand(x: Any) -> Any:
    """(key, array, dtype) of a ufunc operand, or NotImplemented for a type that handles ufuncs
    itself. The key is the Field's descriptor id, a plain array's shape, or None (scalar)."""
    if isinstance(x, Field):
        nd = x._nd if x._nd is not None else x._data()
        return x._key(), nd, nd.dtype
    if isinstance(x, np.ndarray):
        return (x.shape or None), x, x.dtype
    if isinstance(x, np.generic):
        return None, x, x.dtype
    if isinstance(x, bool):
        return None, x, np.dtype(bool)
    if isinstance(x, _WEAK):
        return None, x, next(t for t in _WEAK if isinstance(x, t))
    if hasattr(x, "__cuda_array_interface__"):
        return (tuple(x.shape) or None), x, np.dtype(x.dtype)
    if hasattr(type(x), "__array_ufunc__"):
        return NotImplemented  # it handles ufuncs itself (or opts out with None)
    a = np.asarray(x)
    return (a.shape or None), a, a.dtype


def _gather(operands: Sequence[Any]) -> Any:
    """Keys, arrays and dtypes of operands (the fast path of the common types inline)."""
    keys, arrays, dtypes = [], [], []
    for x in operands:
        tx = type(x)
        if tx is Field:
            kid = x._kid
            if kid is None:
                kid = x._key()
            nd = x._nd
            if nd is None:
                nd = x._data()
            keys.append(kid)
            arrays.append(nd)
            dtypes.append(nd.dtype)
        elif tx is float or tx is int or tx is complex:
            keys.append(None)
            arrays.append(x)
            dtypes.append(tx)
        else:
            got = _operand(x)
            if got is NotImplemented:
                return NotImplemented
            keys.append(got[0])
            arrays.append(got[1])
            dtypes.append(got[2])
    return keys, arrays, dtypes


def _describe_key(key: Any, x: Any) -> Any:
    """The core's operand description: a Field descriptor, a shape, or None."""
    return x._describe() if type(key) is int else key


def _broadcast_of(keys: list[Any], operands: Sequence[Any], out_key: Any = None, out: Any = None, masks: int = 0) -> _Broadcast:
    """The cached broadcast of operands (the last ``masks`` of them only broadcast, like
    ``where=``), into ``out`` when given."""
    pkey = (tuple(keys), out_key, masks)
    bc = _BROADCASTS.get(pkey)
    if bc is None:
        descs = [_describe_key(k, x) for k, x in zip(keys, operands)]
        out_desc = None if out is None else _describe_key(out_key, out)
        _, _, aligned, params = _gridbuf._broadcast(descs, out_desc, masks)
        bc = _remember(_BROADCASTS, pkey, _Broadcast(aligned, params))
    return bc


def _line_up(bc: _Broadcast, arrays: list[Any]) -> None:
    for i, perm, shape in bc.fix:
        a = arrays[i]
        if perm is not None:
            a = a.transpose(perm)
        if shape is not None:
            a = a.reshape(shape)
        arrays[i] = a




def _plain(x: Any) -> Any:
    """Fields (also inside lists and tuples) replaced by their arrays."""
    tx = type(x)
    if tx is tuple or tx is list:
        for v in x:
            tv = type(v)
            if tv is not int and tv is not slice and v is not None and v is not Ellipsis and (
                isinstance(v, (Field, list, tuple))
            ):
                return tx(_plain(v) for v in x)
        return x
    if isinstance(x, Field):
        return x._data()
    return x


def _cast_error(exc: TypeError, what: Any, outs: Sequence[Any]) -> Exception:
    """A gridbuf error for NumPy's refusal to cast a result into ``out=``, naming the dims;
    ``what`` names the function (a string, or a ufunc or NumPy function)."""
    ufunc_name = what if isinstance(what, str) else f"numpy.{getattr(what, '__name__', what)}"
    described = ", ".join(
        f"a Field with dims {o.dims}, shape {o.shape} and dtype {o.dtype}" if isinstance(o, Field) else f"an array of dtype {o.dtype}"
        for o in outs
    )
    return GridbufTypeError(f"invalid out= for {ufunc_name} ({described}): {exc}")


def _is_cast_error(exc: TypeError) -> bool:
    return "Cannot cast" in str(exc) and "output" in str(exc)


def _normalize_out(out: Any) -> tuple[Any, ...] | None:
    if out is None:
        return None
    outs = out if type(out) is tuple else (out,)
    if all(o is None for o in outs):
        return None
    if any(o is None for o in outs):
        raise GridbufTypeError("invalid out=: give every output of the ufunc or none (gridbuf allocates all of them)")
    return outs


def _out_key(o: Any) -> Any:
    if isinstance(o, Field):
        return o._key()
    if not hasattr(o, "shape"):
        raise GridbufTypeError(f"invalid type for out ({type(o).__name__}): expected a Field or an array")
    return tuple(o.shape)


def _out_arrays(outs: Sequence[Any]) -> tuple[Any, ...]:
    first = outs[0]
    for o in outs[1:]:
        if isinstance(o, Field) and isinstance(first, Field) and o.dims != first.dims:
            raise GridbufValueError(f"invalid out=: every output Field needs the same dims, got {first.dims} and {o.dims}")
    return tuple(o._data() if isinstance(o, Field) else o for o in outs)
