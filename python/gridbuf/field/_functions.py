"""The NumPy array functions a Field implements (``__array_function__``): reductions, scans,
transposition, copies, the ``*_like`` constructors, ``where`` and ``concatenate``; the table
``_FUNCTIONS`` maps each NumPy function to its implementation, anything else falls back to NumPy
on the plain arrays."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _gridbuf
from ._broadcast import (
    _Broadcast,
    _cast_error,
    _describe_key,
    _gather,
    _line_up,
    _broadcast_of,
    _normalize_out,
    _plain,
)
from . import _cache
from ._cache import _remember
from ._reductions import _hashable_axis, _reduce, _same_params, _scan
from .._gridbuf import FieldMeta
from ..errors import GridbufTypeError

# Bound by assignment, not import: CPython 3.11 compiles `name.get(...)` on an imported name
# as an attribute load plus call instead of a method call, which costs tens of nanoseconds.
_AXIS_CACHE = _cache._AXIS_CACHE

if TYPE_CHECKING:
    from ._dtypes import _Casting
    from ._types import FieldLike

    #: The Field class, ``gridbuf.field.Field``, bound here by the package once the class exists
    #: (the package imports this module, never the other way round).
    Field: type[FieldLike]
else:
    Field = None


_REDUCTION_SIGNATURES: dict[Any, tuple[str, ...]] = {}
_fn: Any  # NumPy functions of different overloaded types, one loop variable for all
for _fn in (np.sum, np.prod, np.mean, np.nansum, np.nanprod, np.nanmean):
    _REDUCTION_SIGNATURES[_fn] = ("a", "axis", "dtype", "out", "keepdims")
for _fn in (np.std, np.var, np.nanstd, np.nanvar):
    _REDUCTION_SIGNATURES[_fn] = ("a", "axis", "dtype", "out", "ddof", "keepdims")
for _fn in (np.min, np.max, np.amin, np.amax, np.all, np.any, np.nanmin, np.nanmax):
    _REDUCTION_SIGNATURES[_fn] = ("a", "axis", "out", "keepdims")
_SCAN_SIGNATURES = {np.cumsum: ("a", "axis", "dtype", "out"), np.cumprod: ("a", "axis", "dtype", "out")}


def _bind(names: tuple[str, ...], args: tuple[Any, ...], kwargs: dict[str, Any], fname: str) -> dict[str, Any]:
    if len(args) > len(names):
        raise GridbufTypeError(f"invalid arguments for numpy.{fname}: at most {len(names)} positional arguments ({', '.join(names)})")
    bound = dict(kwargs)
    for name, value in zip(names, args):
        if name in bound:
            raise GridbufTypeError(f"invalid arguments for numpy.{fname}: {name} given twice")
        bound[name] = value
    return bound


def _fallback(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Any other NumPy function runs on the Fields' arrays and returns what NumPy returns."""
    return func(*_plain(args), **{k: _plain(v) for k, v in kwargs.items()})


#: NumPy functions that are exactly a ufunc's reduce on arrays (called directly: it is faster).
_REDUCE_WITH = {
    np.sum: np.add.reduce,
    np.prod: np.multiply.reduce,
    np.min: np.minimum.reduce,
    np.amin: np.minimum.reduce,
    np.max: np.maximum.reduce,
    np.amax: np.maximum.reduce,
}


def _array_reduction(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    bound = _bind(_REDUCTION_SIGNATURES[func], args, kwargs, func.__name__)
    a = bound.pop("a")
    if not isinstance(a, Field):
        return _fallback(func, args, kwargs)
    axis = bound.pop("axis", None)
    keepdims = bound.pop("keepdims", False)
    out = bound.pop("out", None)
    if bound.get("dtype", 0) is None:
        del bound["dtype"]
    fn = _REDUCE_WITH.get(func, func)
    return _reduce(a, fn, axis, keepdims is True, out, bound, func)


def _array_scan(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    bound = _bind(_SCAN_SIGNATURES[func], args, kwargs, func.__name__)
    a = bound.pop("a")
    axis = bound.pop("axis", None)
    if not isinstance(a, Field) or axis is None:
        return _fallback(func, args, kwargs)
    return _scan(a, func, axis, bound.pop("out", None), bound, func)


def _array_transpose(a: Any, axes: Any = None) -> Any:
    if not isinstance(a, Field):
        return _fallback(np.transpose, (a,), {"axes": axes})
    return a.transpose(axes)


def _array_copy(a: Any, order: Any = "K", subok: bool = False) -> Any:
    if not isinstance(a, Field):
        return _fallback(np.copy, (a,), {"order": order, "subok": subok})
    return a.copy()


def _like(fill: str) -> Any:
    numpy_fn = {"empty": np.empty_like, "zeros": np.zeros_like, "ones": np.ones_like, "full": np.full_like}[fill]

    def impl(prototype: Any, *args: Any, **kwargs: Any) -> Any:
        names = ("fill_value", "dtype", "order", "subok", "shape") if fill == "full" else ("dtype", "order", "subok", "shape")
        bound = _bind(names, args, kwargs, numpy_fn.__name__)
        if not isinstance(prototype, Field) or not prototype.dims or bound.get("shape") is not None:
            return _fallback(numpy_fn, (prototype, *args), kwargs)
        bc = _same_params(prototype)
        dtype = prototype.dtype if bound.get("dtype") is None else np.dtype(bound["dtype"])
        res = bc.allocate(dtype)
        if fill == "zeros":
            res[...] = 0
        elif fill == "ones":
            res[...] = 1
        elif fill == "full":
            res[...] = bound["fill_value"]
        f = bc.wrap(res)
        f._meta = FieldMeta(f._meta.dims, f._meta.halo, prototype._meta.origin)
        return f

    return impl


def _array_where(condition: Any, *xy: Any) -> Any:
    if len(xy) != 2:
        return _fallback(np.where, (condition, *xy), {})
    x, y = xy
    operands = (x, y, condition)  # the condition broadcasts like a where= mask
    gathered = _gather(operands)
    if gathered is NotImplemented:
        return NotImplemented
    keys, arrays, _ = gathered
    bc = _broadcast_of(keys, operands, masks=1)
    _line_up(bc, arrays)
    xa, ya, c = arrays
    res = bc.allocate(np.result_type(xa, ya))
    np.copyto(res, ya, casting="unsafe")
    np.copyto(res, xa, casting="unsafe", where=np.asarray(c).astype(bool, copy=False))
    return bc.wrap(res)


def _array_concatenate(arrays: Any, axis: Any = 0, out: Any = None, *, dtype: Any = None, casting: _Casting = "same_kind") -> Any:
    seq = list(arrays)
    if axis is None or not any(isinstance(a, Field) for a in seq):
        return _fallback(np.concatenate, (seq,), {"axis": axis, "out": out, "dtype": dtype, "casting": casting})
    gathered = _gather(seq)
    if gathered is NotImplemented:
        return NotImplemented
    keys, datas, _ = gathered
    key = ("concatenate", tuple(keys), _hashable_axis(axis))
    got = _AXIS_CACHE.get(key)
    if got is None:
        pos, aligned, params = _gridbuf._concatenate([_describe_key(k, x) for k, x in zip(keys, seq)], axis)
        got = _remember(_AXIS_CACHE, key, (pos, _Broadcast(aligned, params)))
    pos, bc = got
    _line_up(bc, datas)
    outs = _normalize_out(out)
    if outs is None:
        res = bc.allocate(np.result_type(*datas) if dtype is None else np.dtype(dtype))
        np.concatenate(datas, axis=pos, out=res, casting=casting)
        return bc.wrap(res)
    (o,) = outs
    target = o
    if isinstance(o, Field):
        target = o._data().transpose(_gridbuf._match_out(o._describe(), bc.dims, bc.shape))
    try:
        np.concatenate(datas, axis=pos, out=target, casting=casting)
    except TypeError as exc:
        if "Cannot cast" in str(exc):
            raise _cast_error(exc, "numpy.concatenate", outs) from exc
        raise
    return o


_FUNCTIONS: dict[Any, Any] = {
    np.transpose: _array_transpose,
    np.copy: _array_copy,
    np.where: _array_where,
    np.concatenate: _array_concatenate,
    np.empty_like: _like("empty"),
    np.zeros_like: _like("zeros"),
    np.ones_like: _like("ones"),
    np.full_like: _like("full"),
}
for _fn in _REDUCTION_SIGNATURES:
    _FUNCTIONS[_fn] = lambda *args, _f=_fn, **kwargs: _array_reduction(_f, args, kwargs)
for _fn in _SCAN_SIGNATURES:
    _FUNCTIONS[_fn] = lambda *args, _f=_fn, **kwargs: _array_scan(_f, args, kwargs)
