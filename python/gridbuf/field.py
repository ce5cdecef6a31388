"""The opt-in ``Field`` wrapper: labels an existing array with dims, a halo and an origin,
without copying, and exposes every interface the array has plus gridbuf's own.

Fields compute (GDP-3): NumPy ufuncs and the common array functions broadcast them by dims
name, results are allocated by gridbuf with the layout, alignment, aligned index and halo that
GDP-3's "Output Storage Parameters" give, basic indexing keeps the dims of the axes it keeps,
and assignment broadcasts by dims. The rules live in the Rust core (``gridbuf::labelled``); this
module only dispatches, and caches the core's answers per combination of dims, shapes and
storage parameters so that an operation on small fields costs a few microseconds.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import _gridbuf
from ._gridbuf import FieldMeta, whole_allocation_plan
from ._metadata import (
    data_interface_entry,
    data_interface_for,
    default_dims,
    get_dims,
    normalize_dims,
    normalize_halo,
    normalize_origin,
)
from .errors import GridbufDeviceError, GridbufError, GridbufTypeError, GridbufValueError

#: The whole-allocation check of ``gridbuf._gridbuf`` (kept under its former name).
_allocation_plan = whole_allocation_plan


def _on_gpu(array: Any) -> bool:
    """Whether an array's memory is device memory (CUDA array interface, or a DLPack device that
    is not the CPU)."""
    if isinstance(array, np.ndarray):
        return False
    if hasattr(array, "__cuda_array_interface__"):
        return True
    if not hasattr(array, "__array_interface__") and hasattr(array, "__dlpack_device__"):
        try:
            return int(array.__dlpack_device__()[0]) != 1  # 1 is kDLCPU
        except Exception:  # noqa: BLE001 - an object that cannot say lives on the host
            return False
    return False


# ---------------------------------------------------------------------------------------------
# Caches. The core's answers depend only on dims, shapes and storage parameters, so each Field
# gets an id for that combination (its "descriptor") and plans are cached per tuple of ids.
# Ids are never reused: when a cache is full it is emptied and new ids are drawn.
# ---------------------------------------------------------------------------------------------
_CACHE_LIMIT = 4096
_DESC_IDS: dict[tuple[Any, ...], int] = {}
_NEXT_ID = itertools.count(1).__next__
_PLANS: dict[Any, _Plan] = {}
_AXIS_PLANS: dict[Any, Any] = {}
_DTYPES: dict[Any, Any] = {}

_empty = _gridbuf.empty
_object_new = object.__new__
_WEAK = (int, float, complex)


def _intern(desc: tuple[Any, ...]) -> int:
    kid = _DESC_IDS.get(desc)
    if kid is None:
        if len(_DESC_IDS) >= _CACHE_LIMIT:
            _DESC_IDS.clear()
            _PLANS.clear()
            _AXIS_PLANS.clear()
        kid = _DESC_IDS[desc] = _NEXT_ID()
    return kid


def _remember(cache: dict[Any, Any], key: Any, value: Any) -> Any:
    if len(cache) >= _CACHE_LIMIT:
        cache.clear()
    cache[key] = value
    return value


class _Plan:
    """A cached broadcast: which operands to transpose/reshape, and how to allocate and label the
    result (None when writing into ``out=``)."""

    __slots__ = ("fix", "shape", "kwargs", "dims", "halo", "origin", "meta", "storage", "desc", "kid", "order")

    def __init__(self, aligned: Any, params: Any) -> None:
        self.fix = tuple((i, p, r) for i, (p, r) in enumerate(aligned) if p is not None or r is not None)
        self.order = None
        if params is None:
            self.shape = None
            return
        dims, shape, layout, alignment, aligned_index, halo, backend, kwargs = params
        self.shape, self.kwargs, self.dims, self.halo = shape, kwargs, dims, halo
        self.order = _memory_order(layout, shape)
        self.origin = tuple(lo for lo, _ in halo)
        self.meta = FieldMeta(dims, halo, self.origin)
        self.storage = (backend, layout, alignment, aligned_index)
        self.desc = (dims, shape, halo, layout, None, alignment, aligned_index, backend)
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


def _plan(keys: list[Any], operands: Sequence[Any], out_key: Any = None, out: Any = None, masks: int = 0) -> _Plan:
    """The cached broadcast of operands (the last ``masks`` of them only broadcast, like
    ``where=``), into ``out`` when given."""
    pkey = (tuple(keys), out_key, masks)
    plan = _PLANS.get(pkey)
    if plan is None:
        descs = [_describe_key(k, x) for k, x in zip(keys, operands)]
        out_desc = None if out is None else _describe_key(out_key, out)
        _, _, aligned, params = _gridbuf._broadcast(descs, out_desc, masks)
        plan = _remember(_PLANS, pkey, _Plan(aligned, params))
    return plan


def _line_up(plan: _Plan, arrays: list[Any]) -> None:
    for i, perm, shape in plan.fix:
        a = arrays[i]
        if perm is not None:
            a = a.transpose(perm)
        if shape is not None:
            a = a.reshape(shape)
        arrays[i] = a


def _resolve_dtypes(ufunc: Any, dtypes: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Output dtypes of a ufunc call by NumPy's rules (cached), or None if NumPy cannot say."""
    extra = (kwargs.get("dtype"), kwargs.get("signature"), kwargs.get("casting")) if kwargs else None
    key = (ufunc, dtypes, extra)
    got = _DTYPES.get(key, False)
    if got is False:
        signature = None if extra is None else extra[1]
        if extra is not None and extra[0] is not None and signature is None:
            signature = (None,) * ufunc.nin + (np.dtype(extra[0]),) * ufunc.nout
        options: dict[str, Any] = {}
        if signature is not None:
            options["signature"] = signature
        if extra is not None and extra[2] is not None:
            options["casting"] = extra[2]
        try:
            got = ufunc.resolve_dtypes(dtypes + (None,) * ufunc.nout, **options)[ufunc.nin :]
        except Exception:  # noqa: BLE001 - let the ufunc call raise NumPy's own error
            got = None
        _remember(_DTYPES, key, got)
    return got


def _probe_dtype(fn: Any, dtype: np.dtype[Any], dtype_kw: Any) -> np.dtype[Any]:
    """Result dtype of a reduction or scan ``fn`` on ``dtype`` (cached; NumPy decides)."""
    key = (fn, dtype, dtype_kw)
    got = _DTYPES.get(key)
    if got is None:
        sample = np.ones((1,), dtype=dtype)
        extra = {} if dtype_kw is None else {"dtype": dtype_kw}
        with np.errstate(all="ignore"):
            got = np.asarray(fn(sample, axis=0, **extra)).dtype
        _remember(_DTYPES, key, got)
    return got


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


# ---------------------------------------------------------------------------------------------
# Axis plans: reductions, transpositions, scans (cached per descriptor and axis argument).
# ---------------------------------------------------------------------------------------------
class _AxisPlan(_Plan):
    """A cached reduction over ``axes`` (a _Plan whose result parameters come from the core)."""

    __slots__ = ("axes",)

    def __init__(self, axes: tuple[int, ...], params: Any) -> None:
        super().__init__((), params)
        self.axes = axes


def _hashable_axis(axis: Any) -> Any:
    return tuple(axis) if isinstance(axis, list) else axis


def _axis_plan(f: Field, axis: Any, keepdims: bool) -> _AxisPlan:
    key = ("reduce", f._key(), _hashable_axis(axis), bool(keepdims))
    plan = _AXIS_PLANS.get(key)
    if plan is None:
        axes, params = _gridbuf._reduce(f._describe(), axis, bool(keepdims))
        plan = _remember(_AXIS_PLANS, key, _AxisPlan(axes, params))
    return plan


def _same_params(f: Field) -> _AxisPlan:
    """The parameters of ``f`` itself (a reduction over no axes), for copies and ``*_like``."""
    return _axis_plan(f, (), False)


def _reduce(f: Field, fn: Any, axis: Any, keepdims: bool, out: Any, kwargs: dict[str, Any], name: Any) -> Any:
    """Run a NumPy reduction ``fn`` on a Field, writing into a gridbuf allocation or ``out``."""
    plan = _axis_plan(f, axis, keepdims)
    nd = f._data()
    axes = plan.axes
    outs = _normalize_out(out)
    if outs is None:
        if not plan.dims:
            return fn(nd, axis=axes, **kwargs)
        dtype = _probe_dtype(fn, nd.dtype, kwargs.get("dtype"))
        res = plan.allocate(dtype)
        fn(nd, axis=axes, out=res, keepdims=keepdims, **kwargs)
        return plan.wrap(res)
    (o,) = outs
    target = o
    if isinstance(o, Field):
        perm = _gridbuf._match_out(o._describe(), plan.dims, plan.shape)
        target = o._data().transpose(perm)
    try:
        fn(nd, axis=axes, out=target, keepdims=keepdims, **kwargs)
    except TypeError as exc:
        if _is_cast_error(exc):
            raise _cast_error(exc, name, outs) from exc
        raise
    return o


def _scan(f: Field, fn: Any, axis: Any, out: Any, kwargs: dict[str, Any], name: Any) -> Any:
    """Run a NumPy scan (accumulate, cumsum) along one axis of a Field; dims are kept."""
    dims = f._meta.dims
    key = ("axis", dims, _hashable_axis(axis))
    pos = _AXIS_PLANS.get(key)
    if pos is None:
        pos = _remember(_AXIS_PLANS, key, _gridbuf._resolve_axis(dims, axis))
    nd = f._data()
    outs = _normalize_out(out)
    if outs is None:
        plan = _same_params(f)
        res = plan.allocate(_probe_dtype(fn, nd.dtype, kwargs.get("dtype")))
        fn(nd, axis=pos, out=res, **kwargs)
        return plan.wrap(res)
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


# ---------------------------------------------------------------------------------------------
# Array functions (__array_function__).
# ---------------------------------------------------------------------------------------------
_REDUCTION_SIGNATURES: dict[Any, tuple[str, ...]] = {}
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
        plan = _same_params(prototype)
        dtype = prototype.dtype if bound.get("dtype") is None else np.dtype(bound["dtype"])
        res = plan.allocate(dtype)
        if fill == "zeros":
            res[...] = 0
        elif fill == "ones":
            res[...] = 1
        elif fill == "full":
            res[...] = bound["fill_value"]
        f = plan.wrap(res)
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
    plan = _plan(keys, operands, masks=1)
    _line_up(plan, arrays)
    xa, ya, c = arrays
    res = plan.allocate(np.result_type(xa, ya))
    np.copyto(res, ya, casting="unsafe")
    np.copyto(res, xa, casting="unsafe", where=np.asarray(c).astype(bool, copy=False))
    return plan.wrap(res)


def _array_concatenate(arrays: Any, axis: Any = 0, out: Any = None, *, dtype: Any = None, casting: str = "same_kind") -> Any:
    seq = list(arrays)
    if axis is None or not any(isinstance(a, Field) for a in seq):
        return _fallback(np.concatenate, (seq,), {"axis": axis, "out": out, "dtype": dtype, "casting": casting})
    gathered = _gather(seq)
    if gathered is NotImplemented:
        return NotImplemented
    keys, datas, _ = gathered
    key = ("concatenate", tuple(keys), _hashable_axis(axis))
    got = _AXIS_PLANS.get(key)
    if got is None:
        pos, aligned, params = _gridbuf._concatenate([_describe_key(k, x) for k, x in zip(keys, seq)], axis)
        got = _remember(_AXIS_PLANS, key, (pos, _Plan(aligned, params)))
    pos, plan = got
    _line_up(plan, datas)
    outs = _normalize_out(out)
    if outs is None:
        res = plan.allocate(np.result_type(*datas) if dtype is None else np.dtype(dtype))
        np.concatenate(datas, axis=pos, out=res, casting=casting)
        return plan.wrap(res)
    (o,) = outs
    target = o
    if isinstance(o, Field):
        target = o._data().transpose(_gridbuf._match_out(o._describe(), plan.dims, plan.shape))
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


def _index_meta(meta: FieldMeta, shape: tuple[int, ...], key: Any) -> FieldMeta | None:
    """The labels of ``field[key]`` (basic indexing) from the core, or None."""
    got = _gridbuf._index(meta.dims, shape, meta.halo, meta.origin, key)
    return None if got is None else FieldMeta(*got)


class Field:
    """An array labelled with dims, a halo and an origin; the array is kept, never copied.

    Fields compute like NumPy arrays, but broadcast by dims name (GDP-3): ``IJK + K * IJ`` is an
    ``IJK`` Field, and a dim of length 1 counts as absent. Results are allocated by gridbuf with
    the layout of the first Field operand, the least common multiple of the operands'
    alignments, per dim the largest aligned index, and the halo whose domain is the intersection
    of the operands' domains. Plain arrays take part when their shape is the broadcast shape
    (ones broadcast) or when they are 3-D (read as ``I``, ``J``, ``K``) with ones where
    broadcasting is needed.

    Parameters
    ----------
    array : array_like
        Any array exposing ``__array_interface__``, ``__cuda_array_interface__``, the buffer
        protocol or DLPack (including another ``Field``, whose array is reused).
    dims : str or sequence of str, optional
        Dims per axis. Default: what the array declares (``__gt_dims__``, data interface, xarray),
        else ``"IJK"[:ndim]`` then data dims.
    origin : sequence of int, optional
        Start of the compute domain. Default: the array's ``__gt_origin__``, else the lower halo.
    halo : sequence of int or (int, int), optional
        Halo per axis. Default: the array's data-interface halo, the halo it was allocated with by
        gridbuf, else none.

    Raises
    ------
    GridbufTypeError
        The array exposes no interface gridbuf understands.
    GridbufValueError
        Dims, halo or origin that do not fit the array.
    """


    def __class_getitem__(cls, params: Any) -> Any:
        """``Field[dtype, dims, Extent(...), ...]`` in a stencil annotation declares a field."""
        from .stencil import FieldAnnotation

        return FieldAnnotation.from_params(params)

    # ``_meta`` holds dims, halo and origin (a FieldMeta the stencil binder reads directly);
    # ``_nd``, ``_storage``, ``_desc`` and ``_kid`` cache what is derived from the array and them.
    __slots__ = ("_array", "_meta", "_nd", "_storage", "_desc", "_kid", "__weakref__")
    __hash__ = None  # type: ignore[assignment]  # == compares elements, as for ndarrays

    def __init__(self, array: Any, dims: Any = None, origin: Any = None, halo: Any = None) -> None:
        self._nd = self._storage = self._desc = self._kid = None
        if isinstance(array, Field):
            dims = array.dims if dims is None else dims
            halo = array.halo if halo is None else halo
            origin = array.origin if origin is None and halo is None else origin
            array = array.array
        shape = getattr(array, "shape", None)
        if shape is None or not any(
            hasattr(array, a) for a in ("__array_interface__", "__cuda_array_interface__", "__dlpack__", "__array__")
        ):
            if isinstance(array, (memoryview, bytearray)) or hasattr(array, "__buffer__"):
                array = np.asarray(array)  # a view of the same memory, not a copy
                shape = array.shape
            else:
                raise GridbufTypeError(
                    f"invalid type for array ({type(array).__name__}): expected an array exposing the array "
                    "interface, the CUDA array interface, DLPack or the buffer protocol; use Field.from_array to copy"
                )
        shape = tuple(int(n) for n in shape)
        self._array = array
        if isinstance(array, np.ndarray):
            self._nd = array
        if dims is None:
            dims = get_dims(array)
        dims = default_dims(len(shape)) if dims is None else normalize_dims(dims, len(shape), "dims")
        if halo is None:
            info = data_interface_entry(array)
            plan = whole_allocation_plan(array)
            if info is not None and info.get("halo") is not None:
                halo = info["halo"]
            elif plan is not None:
                halo = plan.halo
            else:
                halo = ((0, 0),) * len(shape)
        halo = normalize_halo(halo, shape)
        if origin is None:
            origin = getattr(array, "__gt_origin__", None)
        if origin is None:
            origin = tuple(lo for lo, _ in halo)
        else:
            origin = normalize_origin(origin, shape, "origin")
        self._meta = FieldMeta(dims, halo, origin)

    @classmethod
    def _view(
        cls, array: Any, dims: tuple[str, ...], halo: tuple[tuple[int, int], ...], origin: tuple[int, ...], storage: Any = None
    ) -> Field:
        """A Field over ``array`` with labels the caller has checked (no validation)."""
        f = _object_new(cls)
        f._array = f._nd = array
        f._meta = FieldMeta(dims, halo, origin)
        f._storage = storage
        f._desc = f._kid = None
        return f

    # -- storage parameters and cache keys -----------------------------------------------------
    def _data(self) -> Any:
        """The array to compute with: the wrapped ndarray (or CuPy array), else a NumPy view."""
        nd = self._nd
        if nd is None:
            a = self._array
            if _on_gpu(a):
                if getattr(type(a), "__array_ufunc__", None) is not None:
                    nd = a
                else:
                    from ._gpu import cupy_module

                    nd = cupy_module("computing with a GPU Field").asarray(a)
            else:
                nd = np.asarray(a)
            self._nd = nd
        return nd

    def _storage_params(self) -> tuple[Any, ...]:
        """(backend, layout or None, alignment, aligned index or None), computed once."""
        st = self._storage
        if st is None:
            plan = _allocation_plan(self._array)
            if plan is not None:
                st = (plan.backend, plan.layout, plan.row_alignment, plan.aligned_index)
            else:
                st = ("gt:gpu" if _on_gpu(self._array) else "C", None, 1, None)
            self._storage = st
        return st

    def _describe(self) -> tuple[Any, ...]:
        """The core's description: dims, shape, halo, layout, strides, alignment, aligned index
        and preset."""
        d = self._desc
        if d is None:
            backend, layout, alignment, aligned_index = self._storage_params()
            nd = self._data()
            strides = None if layout is not None else tuple(int(s) for s in nd.strides)
            meta = self._meta
            d = self._desc = (meta.dims, tuple(nd.shape), meta.halo, layout, strides, alignment, aligned_index, backend)
        return d

    def _key(self) -> int:
        kid = self._kid
        if kid is None:
            kid = self._kid = _intern(self._describe())
        return kid

    # -- allocation ---------------------------------------------------------------------------
    @classmethod
    def _allocate(cls, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Field:
        array = fn(*args, **kwargs)
        plan = array.base.plan
        f = cls(array, dims=plan.dims, halo=plan.halo)
        f._storage = (plan.backend, plan.layout, plan.row_alignment, plan.aligned_index)
        return f

    @classmethod
    def empty(cls, shape: Any, dtype: Any = None, **kwargs: Any) -> Field:
        """Allocate with :func:`gridbuf.empty`; dims and halo come from the allocation."""
        return cls._allocate(_gridbuf.empty, (shape, dtype), kwargs)

    @classmethod
    def zeros(cls, shape: Any, dtype: Any = None, **kwargs: Any) -> Field:
        """Allocate with :func:`gridbuf.zeros`; dims and halo come from the allocation."""
        return cls._allocate(_gridbuf.zeros, (shape, dtype), kwargs)

    @classmethod
    def ones(cls, shape: Any, dtype: Any = None, **kwargs: Any) -> Field:
        """Allocate with :func:`gridbuf.ones`; dims and halo come from the allocation."""
        return cls._allocate(_gridbuf.ones, (shape, dtype), kwargs)

    @classmethod
    def full(cls, shape: Any, fill_value: Any, dtype: Any = None, **kwargs: Any) -> Field:
        """Allocate with :func:`gridbuf.full`; dims and halo come from the allocation."""
        return cls._allocate(_gridbuf.full, (shape, fill_value, dtype), kwargs)

    @classmethod
    def from_array(cls, data: Any, dtype: Any = None, **kwargs: Any) -> Field:
        """Copy ``data`` with :func:`gridbuf.from_array`; dims and halo come from the allocation.

        When ``dims`` is not given, the dims ``data`` declares are kept.
        """
        if "dims" not in kwargs and "dimensions" not in kwargs and not isinstance(data, (list, tuple)):
            declared = get_dims(data)
            if declared is not None:
                kwargs["dims"] = declared
        if isinstance(data, Field):
            data = data._data()
        return cls._allocate(_gridbuf.from_array, (data, dtype), kwargs)

    # -- description --------------------------------------------------------------------------
    @property
    def array(self) -> Any:
        """The wrapped array."""
        return self._array

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of the array, halo included."""
        return tuple(int(n) for n in self._array.shape)

    @property
    def dtype(self) -> np.dtype[Any]:
        """Dtype of the array."""
        return np.dtype(self._array.dtype)

    @property
    def ndim(self) -> int:
        """Number of axes."""
        return len(self._array.shape)

    @property
    def size(self) -> int:
        """Number of elements, halo included."""
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        """Bytes of the elements (halo included, padding excluded)."""
        return self.size * self.itemsize

    @property
    def strides(self) -> tuple[int, ...]:
        """Byte strides per axis."""
        return tuple(int(s) for s in self._data().strides)

    @property
    def dims(self) -> tuple[str, ...]:
        """Dims per axis."""
        return self._meta.dims

    @property
    def halo(self) -> tuple[tuple[int, int], ...]:
        """Halo per axis as (lower, upper).

        Setting it changes the domain, not the memory: the aligned index stays, and an origin
        at the old lower halo moves to the new one. A halo larger than the shape is a
        :class:`GridbufValueError`.
        """
        return self._meta.halo

    @halo.setter
    def halo(self, value: Any) -> None:
        halo = normalize_halo(value, self.shape, self._meta.dims)
        meta = self._meta
        old_lower = tuple(lo for lo, _ in meta.halo)
        origin = tuple(lo for lo, _ in halo) if meta.origin == old_lower else meta.origin
        backend, layout, alignment, aligned_index = self._storage_params()
        if aligned_index is None:  # it defaulted to the old lower halo: keep it
            self._storage = (backend, layout, alignment, old_lower)
        self._meta = FieldMeta(meta.dims, halo, origin)
        self._desc = self._kid = None

    @property
    def origin(self) -> tuple[int, ...]:
        """Start of the compute domain."""
        return self._meta.origin

    @property
    def alignment(self) -> int:
        """Row alignment in bytes, as the ``alignment=`` keyword of the allocation (1: none).

        For an array gridbuf did not allocate as a whole (a view, a foreign array) it is 1.
        """
        return int(self._storage_params()[2])

    @property
    def aligned_index(self) -> tuple[int, ...]:
        """Index of the aligned element; the lower halo for arrays gridbuf did not allocate."""
        ai = self._storage_params()[3]
        return tuple(lo for lo, _ in self._meta.halo) if ai is None else tuple(ai)

    @property
    def domain_shape(self) -> tuple[int, ...]:
        """Shape without the halo."""
        return tuple(n - lo - hi for n, (lo, hi) in zip(self.shape, self._meta.halo))

    @property
    def domain_view(self) -> Field:
        """A Field over the halo-free part of the array (a view, origin zero, no halo)."""
        index = tuple(slice(lo, n - hi) for n, (lo, hi) in zip(self.shape, self._meta.halo))
        return Field(self._array[index], dims=self._meta.dims, origin=(0,) * self.ndim, halo=((0, 0),) * self.ndim)

    @property
    def T(self) -> Field:
        """The Field with its axes reversed (a view)."""
        return self.transpose()

    def __repr__(self) -> str:
        return f"Field(shape={self.shape}, dtype={self.dtype}, dims={self.dims}, halo={self.halo}, origin={self.origin})"

    def __len__(self) -> int:
        if not self._meta.dims:
            raise TypeError("len() of a 0-d Field")
        return self.shape[0]

    def __bool__(self) -> bool:
        return bool(self._data())

    def __float__(self) -> float:
        return float(self._data())

    def __int__(self) -> int:
        return int(self._data())

    def __complex__(self) -> complex:
        return complex(self._data())

    # -- views and copies ---------------------------------------------------------------------
    def to_numpy(self) -> np.ndarray:
        """The host memory as a NumPy array (a view, no copy).

        Raises
        ------
        GridbufDeviceError
            The Field's memory lives on a GPU.
        """
        if _on_gpu(self._array):
            raise GridbufDeviceError(
                f"the Field with dims {self.dims} lives on a GPU and has no host buffer; use to_ndarray() for the "
                "device array, or copy it to the host explicitly"
            )
        return self._data()

    def to_ndarray(self) -> Any:
        """The memory as an array of the device it lives on (a view, no copy).

        Returns
        -------
        numpy.ndarray or cupy.ndarray
            A NumPy view for host memory, the CuPy array for GPU memory.
        """
        return self._data()

    def copy(self) -> Field:
        """A copy in new memory with the same dims, halo, origin, layout, alignment and aligned
        index (and preset, so on the same device).

        Returns
        -------
        Field
            The copy; for an array gridbuf did not allocate, the layout follows its strides.
        """
        plan = _same_params(self)
        res = _gridbuf.from_array(self._data(), None, **plan.kwargs)
        f = plan.wrap(res) if plan.dims else Field._view(res, (), (), ())
        f._meta = FieldMeta(f._meta.dims, f._meta.halo, self._meta.origin)
        return f

    def astype(self, dtype: Any, order: Any = "K", casting: str = "unsafe", subok: bool = True, copy: bool = True) -> Field:
        """A copy converted to ``dtype``, with the same parameters as :meth:`copy`.

        Parameters
        ----------
        dtype : dtype_like
            The dtype of the copy.
        order, subok : optional
            Accepted for compatibility with ``numpy.ndarray.astype``; the layout is the Field's.
        casting : {"no", "equiv", "safe", "same_kind", "unsafe"}, optional
            Which conversions are allowed, as in NumPy.
        copy : bool, optional
            False returns the Field itself when it already has ``dtype``.

        Returns
        -------
        Field
            The converted copy, in new memory (or ``self``, see ``copy``).

        Raises
        ------
        GridbufTypeError
            ``casting`` forbids the conversion.
        """
        dtype = np.dtype(dtype)
        if not copy and dtype == self.dtype:
            return self
        if not np.can_cast(self.dtype, dtype, casting=casting):
            raise GridbufTypeError(
                f"invalid dtype {dtype} for astype of the Field with dims {self.dims} and dtype {self.dtype}: "
                f"casting={casting!r} does not allow it"
            )
        plan = _same_params(self)
        res = _gridbuf.from_array(self._data(), dtype, **plan.kwargs)
        f = plan.wrap(res) if plan.dims else Field._view(res, (), (), ())
        f._meta = FieldMeta(f._meta.dims, f._meta.halo, self._meta.origin)
        return f

    def __copy__(self) -> Field:
        return self.copy()

    def __deepcopy__(self, memo: Any = None) -> Field:
        return self.copy()

    def fill(self, value: Any) -> None:
        """Set every element (halo included) to ``value``.

        Parameters
        ----------
        value : scalar
            The value, converted to the Field's dtype.
        """
        self._data()[...] = value

    def transpose(self, *axes: Any) -> Field:
        """A view with the axes permuted, named by dims or positions.

        Parameters
        ----------
        *axes : str or int
            The new order: ``t.transpose("K", "J", "I")``, ``t.transpose("KJI")``,
            ``t.transpose(2, 1, 0)`` or a single sequence; none reverses the axes.

        Returns
        -------
        Field
            A view sharing memory, with dims, halo, origin, layout and aligned index permuted.

        Raises
        ------
        GridbufValueError
            A name that is not one of the Field's dims, a repeated one, or not every dim named.
        """
        if len(axes) == 1:
            (a,) = axes
            if a is None:
                axes = ()
            elif isinstance(a, str):
                axes = (a,) if a in self._meta.dims else tuple(a)
            elif isinstance(a, (tuple, list)):
                axes = tuple(a)
        meta = self._meta
        key = ("transpose", self._key(), meta, axes)
        got = _AXIS_PLANS.get(key)
        if got is None:
            dims = meta.dims
            perm = _gridbuf._transpose_axes(dims, axes)
            backend, layout, alignment, ai = self._storage_params()
            storage = (
                backend,
                None if layout is None else tuple(layout[p] for p in perm),
                alignment,
                None if ai is None else tuple(ai[p] for p in perm),
            )
            halo, origin = meta.halo, meta.origin
            permuted = FieldMeta(tuple(dims[p] for p in perm), tuple(halo[p] for p in perm), tuple(origin[p] for p in perm))
            got = _remember(_AXIS_PLANS, key, (perm, permuted, storage))
        perm, permuted, storage = got
        f = _object_new(Field)
        f._array = f._nd = self._data().transpose(perm)
        f._meta, f._storage = permuted, storage
        f._desc = f._kid = None
        return f

    # -- indexing -----------------------------------------------------------------------------
    def __getitem__(self, key: Any) -> Any:
        """Basic indexing returns a Field view (an int drops its dim, a slice keeps it, None adds
        a data dim of length 1); advanced indexing returns a plain array; one element a scalar."""
        nd = self._nd if self._nd is not None else self._data()
        key = _plain(key)
        res = nd[key]
        if isinstance(res, np.generic) or not hasattr(res, "shape"):
            return res
        meta = self._index_plan(nd, key)
        if meta is None:
            return res
        f = _object_new(Field)
        f._array = f._nd = res
        f._meta = meta
        f._storage = f._desc = f._kid = None
        return f

    def _index_plan(self, nd: Any, key: Any) -> Any:
        """The core's labels (a FieldMeta) of a basic index, or None. Cached when the key is made
        of Python ints, slices, None and Ellipsis only (spelled out as a hashable tuple)."""
        items = key if type(key) is tuple else (key,)
        hashable = []
        for k in items:
            tk = type(k)
            if tk is slice:
                hashable.append((k.start, k.stop, k.step, None))
            elif tk is int or k is None or k is Ellipsis:
                hashable.append(k)
            else:  # NumPy integers, arrays, lists, bools: ask the core each time
                return _index_meta(self._meta, nd.shape, key)
        meta = self._meta
        ckey = ("index", self._key(), meta, type(key) is tuple, tuple(hashable))
        got = _AXIS_PLANS.get(ckey, False)
        if got is False:
            got = _remember(_AXIS_PLANS, ckey, _index_meta(meta, nd.shape, key))
        return got

    def __setitem__(self, key: Any, value: Any) -> None:
        """Assignment broadcasts ``value`` by dims into the selected part, like a unary ufunc
        with ``out=``; advanced indexing assigns as NumPy does."""
        nd = self._nd if self._nd is not None else self._data()
        key = _plain(key)
        tv = type(value)
        if tv is float or tv is int or tv is complex or tv is bool or isinstance(value, np.generic):
            nd[key] = value
            return
        target = nd[key]
        if isinstance(target, np.generic) or not hasattr(target, "shape"):
            nd[key] = _plain(value)
            return
        plan = self._index_plan(nd, key)
        if plan is None:
            nd[key] = _plain(value)
            return
        gathered = _gather((value,))
        if gathered is NotImplemented:
            nd[key] = value
            return
        keys, arrays, _ = gathered
        if keys[0] is None:
            target[...] = arrays[0]
            return
        dims, shape = plan.dims, tuple(target.shape)
        pkey = ("setitem", keys[0], dims, shape)
        bplan = _PLANS.get(pkey)
        if bplan is None:
            aligned = _gridbuf._assign(_describe_key(keys[0], value), dims, shape)
            bplan = _remember(_PLANS, pkey, _Plan((aligned,), None))
        _line_up(bplan, arrays)
        target[...] = arrays[0]

    # -- NumPy protocols ----------------------------------------------------------------------
    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        return _call(ufunc, method, inputs, kwargs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        for t in types:
            if not issubclass(t, (Field, np.ndarray)):
                return NotImplemented
        impl = _FUNCTIONS.get(func)
        if impl is None:
            return _fallback(func, args, kwargs)
        return impl(*args, **kwargs)

    # -- reductions as methods ----------------------------------------------------------------
    # Each takes ``axis`` (None, an int, a dim name or a sequence of them), ``out`` (a Field or
    # array with the dims of the result) and ``keepdims``, like the NumPy function it calls, and
    # returns a Field without the reduced dims (a NumPy scalar when none is left).
    def sum(self, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, **kwargs: Any) -> Any:
        """Sum over ``axis`` (ints or dim names); the reduced dims are dropped."""
        return np.sum(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims, **kwargs)

    def prod(self, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, **kwargs: Any) -> Any:
        """Product over ``axis`` (ints or dim names); the reduced dims are dropped."""
        return np.prod(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims, **kwargs)

    def mean(self, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, **kwargs: Any) -> Any:
        """Mean over ``axis`` (ints or dim names); the reduced dims are dropped."""
        return np.mean(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims, **kwargs)

    def min(self, axis: Any = None, out: Any = None, keepdims: bool = False, **kwargs: Any) -> Any:
        """Minimum over ``axis`` (ints or dim names); the reduced dims are dropped."""
        return np.min(self, axis=axis, out=out, keepdims=keepdims, **kwargs)

    def max(self, axis: Any = None, out: Any = None, keepdims: bool = False, **kwargs: Any) -> Any:
        """Maximum over ``axis`` (ints or dim names); the reduced dims are dropped."""
        return np.max(self, axis=axis, out=out, keepdims=keepdims, **kwargs)

    def all(self, axis: Any = None, out: Any = None, keepdims: bool = False, **kwargs: Any) -> Any:
        """Whether all elements along ``axis`` are true; the reduced dims are dropped."""
        return np.all(self, axis=axis, out=out, keepdims=keepdims, **kwargs)

    def any(self, axis: Any = None, out: Any = None, keepdims: bool = False, **kwargs: Any) -> Any:
        """Whether any element along ``axis`` is true; the reduced dims are dropped."""
        return np.any(self, axis=axis, out=out, keepdims=keepdims, **kwargs)

    # -- interfaces ---------------------------------------------------------------------------
    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        if copy:
            return np.array(self._array, dtype=dtype, copy=True)
        return np.asarray(self._array, dtype=dtype)

    @property
    def __array_interface__(self) -> dict[str, Any]:
        iface = getattr(self._array, "__array_interface__", None)
        if iface is not None:
            return iface
        if hasattr(self._array, "__cuda_array_interface__"):
            raise AttributeError("the wrapped array lives on a GPU and has no __array_interface__")
        return np.asarray(self._array).__array_interface__

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        iface = getattr(self._array, "__cuda_array_interface__", None)
        if iface is None:
            raise AttributeError("the wrapped array has no __cuda_array_interface__")
        return iface

    def __dlpack__(self, **kwargs: Any) -> Any:
        target = self._array if hasattr(self._array, "__dlpack__") else np.asarray(self._array)
        return target.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        target = self._array if hasattr(self._array, "__dlpack_device__") else np.asarray(self._array)
        return target.__dlpack_device__()

    @property
    def __gt_dims__(self) -> tuple[str, ...]:
        return self._meta.dims

    @property
    def __gt_origin__(self) -> tuple[int, ...]:
        return self._meta.origin

    @property
    def __gt_data_interface__(self) -> dict[Any, dict[str, Any]]:
        meta = self._meta
        return data_interface_for(self._array, meta.dims, meta.halo, host_fallback=True)


_CALLS: dict[Any, Any] = {}


def _call(ufunc: Any, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """A ufunc on Fields, arrays and scalars: broadcast by dims, allocate the result with gridbuf
    (or write into ``out=``). Operators call it directly, NumPy through ``__array_ufunc__``."""
    if method != "__call__" or ufunc.signature is not None:
        return _ufunc_method(ufunc, method, inputs, kwargs)
    if not kwargs:
        # The common case, one cache lookup for the plan and the output dtypes.
        gathered = _gather(inputs)
        if gathered is NotImplemented:
            return NotImplemented
        keys, arrays, dtypes = gathered
        ckey = (ufunc, tuple(keys), tuple(dtypes))
        hit = _CALLS.get(ckey)
        if hit is None:
            hit = _remember(_CALLS, ckey, (_plan(keys, inputs), _resolve_dtypes(ufunc, ckey[2], kwargs)))
        plan, res_dtypes = hit
        if plan.fix:
            _line_up(plan, arrays)
        if res_dtypes is not None and ufunc.nout == 1:
            try:
                res = plan.allocate(res_dtypes[0])
            except GridbufTypeError:
                return _ufunc_unresolved(ufunc, plan, arrays, kwargs)
            if plan.order is None:
                ufunc(*arrays, out=res)
            else:
                ufunc(*_in_order(plan.order, arrays, res)[0], out=res.transpose(plan.order))
            return plan.wrap(res)
        return _allocate_results(ufunc, plan, arrays, res_dtypes, kwargs)
    out = kwargs.pop("out", None)
    where = kwargs.get("where", True)
    operands = inputs if where is True else (*inputs, where)
    gathered = _gather(operands)
    if gathered is NotImplemented:
        return NotImplemented
    keys, arrays, dtypes = gathered
    outs = None if out is None else _normalize_out(out)
    masks = 0 if where is True else 1
    if outs is None:
        plan = _plan(keys, operands, masks=masks)
        _line_up(plan, arrays)
        if where is not True:
            kwargs["where"] = arrays.pop()
        res_dtypes = _resolve_dtypes(ufunc, tuple(dtypes[: ufunc.nin]), kwargs)
        return _allocate_results(ufunc, plan, arrays, res_dtypes, kwargs)
    target = outs[0]
    plan = _plan(keys, operands, _out_key(target), target, masks)
    _line_up(plan, arrays)
    if where is not True:
        kwargs["where"] = arrays.pop()
    out_arrays = _out_arrays(outs)
    order = _out_order(out_arrays)
    if order is not None:
        if where is not True:
            arrays.append(kwargs["where"])
        arrays, out_arrays = _in_order(order, arrays, out_arrays)
        if where is not True:
            kwargs["where"] = arrays.pop()
    try:
        ufunc(*arrays, out=out_arrays, **kwargs)
    except TypeError as exc:
        if _is_cast_error(exc):
            raise _cast_error(exc, ufunc, outs) from exc
        raise
    return outs[0] if ufunc.nout == 1 else outs


def _allocate_results(ufunc: Any, plan: _Plan, arrays: list[Any], res_dtypes: Any, kwargs: dict[str, Any]) -> Any:
    if res_dtypes is None:
        return _ufunc_unresolved(ufunc, plan, arrays, kwargs)
    try:
        results = tuple(plan.allocate(dt) for dt in res_dtypes)
    except GridbufTypeError:
        return _ufunc_unresolved(ufunc, plan, arrays, kwargs)
    if plan.order is None:
        ufunc(*arrays, out=results, **kwargs)
    else:
        where = kwargs.get("where", True)
        if where is not True:
            arrays.append(where)
        ordered, outs = _in_order(plan.order, arrays, results)
        if where is not True:
            kwargs["where"] = ordered.pop()
        ufunc(*ordered, out=outs, **kwargs)
    if ufunc.nout == 1:
        return plan.wrap(results[0])
    return tuple(plan.wrap(r) for r in results)


def _binary(ufunc: Any) -> tuple[Any, Any, Any]:
    def forward(self: Field, other: Any) -> Any:
        return _call(ufunc, "__call__", (self, other), {})

    def reflected(self: Field, other: Any) -> Any:
        return _call(ufunc, "__call__", (other, self), {})

    def inplace(self: Field, other: Any) -> Any:
        # ``self op= other``: the general path of _call with out=self, with less to look at.
        operands = (self, other)
        gathered = _gather(operands)
        if gathered is NotImplemented:
            return NotImplemented
        keys, arrays, _ = gathered
        plan = _plan(keys, operands, keys[0], self)
        if plan.fix:
            _line_up(plan, arrays)
        out = arrays[0]
        order = _out_order((out,))
        if order is not None:
            arrays, out = _in_order(order, arrays, out)
        try:
            ufunc(*arrays, out=out)
        except TypeError as exc:
            if _is_cast_error(exc):
                raise _cast_error(exc, ufunc, (self,)) from exc
            raise
        return self

    return forward, reflected, inplace


def _unary(ufunc: Any) -> Any:
    def op(self: Field) -> Any:
        return _call(ufunc, "__call__", (self,), {})

    return op


def _install_operators(cls: type) -> None:
    """The operators of ``numpy.lib.mixins.NDArrayOperatorsMixin``, calling :func:`_call`
    directly (NumPy's dispatch would reach the same code, only later)."""
    binary = {
        "add": np.add, "sub": np.subtract, "mul": np.multiply, "matmul": np.matmul,
        "truediv": np.true_divide, "floordiv": np.floor_divide, "mod": np.remainder,
        "divmod": np.divmod, "pow": np.power, "lshift": np.left_shift, "rshift": np.right_shift,
        "and": np.bitwise_and, "xor": np.bitwise_xor, "or": np.bitwise_or,
    }  # fmt: skip
    for name, ufunc in binary.items():
        forward, reflected, inplace = _binary(ufunc)
        setattr(cls, f"__{name}__", forward)
        setattr(cls, f"__r{name}__", reflected)
        if name != "divmod":
            setattr(cls, f"__i{name}__", inplace)
    compare = {"lt": np.less, "le": np.less_equal, "eq": np.equal, "ne": np.not_equal, "gt": np.greater, "ge": np.greater_equal}
    for name, ufunc in compare.items():
        setattr(cls, f"__{name}__", _binary(ufunc)[0])
    for name, ufunc in {"neg": np.negative, "pos": np.positive, "abs": np.absolute, "invert": np.invert}.items():
        setattr(cls, f"__{name}__", _unary(ufunc))


_install_operators(Field)


def _ufunc_unresolved(ufunc: Any, plan: _Plan, arrays: list[Any], kwargs: dict[str, Any]) -> Any:
    """A ufunc whose output dtype NumPy cannot name beforehand (or gridbuf cannot allocate):
    compute with NumPy, then copy into gridbuf allocations where the dtype allows."""
    results = ufunc(*arrays, **kwargs)
    single = ufunc.nout == 1
    wrapped = []
    for r in (results,) if single else results:
        try:
            res = plan.allocate(r.dtype)
            res[...] = r
        except GridbufError:
            res = r
        wrapped.append(plan.wrap(res))
    return wrapped[0] if single else tuple(wrapped)


def _ufunc_method(ufunc: Any, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``reduce`` and ``accumulate`` of Fields keep dims; ``at``, ``outer``, ``reduceat`` and
    generalized ufuncs run on the arrays and return what NumPy returns."""
    if method in ("reduce", "accumulate") and len(inputs) == 1 and isinstance(inputs[0], Field):
        fn = getattr(ufunc, method)
        out = kwargs.pop("out", None)
        axis = kwargs.pop("axis", 0)
        name = f"numpy.{ufunc.__name__}.{method}"
        if method == "reduce":
            keepdims = kwargs.pop("keepdims", False)
            return _reduce(inputs[0], fn, axis, bool(keepdims), out, kwargs, name)
        return _scan(inputs[0], fn, axis, out, kwargs, name)
    outs = _normalize_out(kwargs.get("out"))
    result = getattr(ufunc, method)(*_plain(inputs), **{k: _plain(v) for k, v in kwargs.items()})
    if outs is not None:
        return outs[0] if len(outs) == 1 else outs
    return result
