"""Reductions and scans of a Field over dims (by index or name): the cached core answer (a
``_Reduction``: the axes, and the labels of the result), run by NumPy into a gridbuf allocation."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import _gridbuf
from ._broadcast import _Broadcast, _cast_error, _is_cast_error, _normalize_out
from . import _cache
from ._cache import _remember
from ._dtypes import _probe_dtype

# Bound by assignment, not import: CPython 3.11 compiles `name.get(...)` on an imported name
# as an attribute load plus call instead of a method call, which costs tens of nanoseconds.
_AXIS_CACHE = _cache._AXIS_CACHE

if TYPE_CHECKING:
    from .._gridbuf import OutputParams
    from ._types import FieldLike

    #: The Field class, ``gridbuf.field.Field``, bound here by the package once the class exists
    #: (the package imports this module, never the other way round).
    Field: type[FieldLike]
else:
    Field = None


class _Reduction(_Broadcast):
    """A cached reduction over ``axes`` (a _Broadcast whose result parameters come from the core)."""

    __slots__ = ("axes",)
    axes: tuple[int, ...]

    def __init__(self, axes: tuple[int, ...], params: OutputParams) -> None:
        super().__init__((), params)
        self.axes = axes


def _hashable_axis(axis: Any) -> Any:
    return tuple(axis) if isinstance(axis, list) else axis


def _reduction(f: FieldLike, axis: Any, keepdims: bool) -> _Reduction:
    key = ("reduce", f._key(), _hashable_axis(axis), bool(keepdims))
    bc = _AXIS_CACHE.get(key)
    if bc is None:
        axes, params = _gridbuf._reduce(f._describe(), axis, bool(keepdims))
        bc = _remember(_AXIS_CACHE, key, _Reduction(axes, params))
    return bc


def _same_params(f: FieldLike) -> _Reduction:
    """The parameters of ``f`` itself (a reduction over no axes), for copies and ``*_like``."""
    return _reduction(f, (), False)


def _reduce(f: FieldLike, fn: Any, axis: Any, keepdims: bool, out: Any, kwargs: dict[str, Any], name: Any) -> Any:
    """Run a NumPy reduction ``fn`` on a Field, writing into a gridbuf allocation or ``out``."""
    bc = _reduction(f, axis, keepdims)
    nd = f._data()
    axes = bc.axes
    outs = _normalize_out(out)
    if outs is None:
        if not bc.dims:
            return fn(nd, axis=axes, **kwargs)
        dtype = _probe_dtype(fn, nd.dtype, kwargs.get("dtype"))
        res = bc.allocate(dtype)
        fn(nd, axis=axes, out=res, keepdims=keepdims, **kwargs)
        return bc.wrap(res)
    (o,) = outs
    target = o
    if isinstance(o, Field):
        perm = _gridbuf._match_out(o._describe(), bc.dims, bc.shape)
        target = o._data().transpose(perm)
    try:
        fn(nd, axis=axes, out=target, keepdims=keepdims, **kwargs)
    except TypeError as exc:
        if _is_cast_error(exc):
            raise _cast_error(exc, name, outs) from exc
        raise
    return o


def _scan(f: FieldLike, fn: Any, axis: Any, out: Any, kwargs: dict[str, Any], name: Any) -> Any:
    """Run a NumPy scan (accumulate, cumsum) along one axis of a Field; dims are kept."""
    dims = f._meta.dims
    key = ("axis", dims, _hashable_axis(axis))
    pos = _AXIS_CACHE.get(key)
    if pos is None:
        pos = _remember(_AXIS_CACHE, key, _gridbuf._resolve_axis(dims, axis))
    nd = f._data()
    outs = _normalize_out(out)
    if outs is None:
        bc = _same_params(f)
        res = bc.allocate(_probe_dtype(fn, nd.dtype, kwargs.get("dtype")))
        fn(nd, axis=pos, out=res, **kwargs)
        return bc.wrap(res)
    (o,) = outs
    target = o
    if isinstance(o, Field):
        target = o._data().transpose(_gridbuf._match_out(o._describe(), dims, f.shape))
    try:
        fn(nd, axis=pos, out=target, **kwargs)
    except TypeError as exc:
        if _is_cast_error(exc):
            raise _cast_error(exc, name, outs) from exc
        raise
    return o
