"""NumPy ufuncs on Fields (``__array_ufunc__`` and the operators): operands broadcast by dims,
results allocated by gridbuf with the labels the core gives (or written into ``out=``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ._broadcast import (
    _Broadcast,
    _cast_error,
    _gather,
    _in_order,
    _is_cast_error,
    _line_up,
    _normalize_out,
    _out_arrays,
    _out_key,
    _out_order,
    _broadcast_of,
    _plain,
)
from . import _cache
from ._cache import _remember
from ._dtypes import _resolve_dtypes
from ._reductions import _reduce, _scan
from ..errors import GridbufError, GridbufTypeError

# Bound by assignment, not import: CPython 3.11 compiles `name.get(...)` on an imported name
# as an attribute load plus call instead of a method call, which costs tens of nanoseconds.
_CALLS = _cache._CALLS

if TYPE_CHECKING:
    from ._types import FieldLike

    #: The Field class, ``gridbuf.field.Field``, bound here by the package once the class exists
    #: (the package imports this module, never the other way round).
    Field: type[FieldLike]
else:
    Field = None




def _call(ufunc: Any, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """A ufunc on Fields, arrays and scalars: broadcast by dims, allocate the result with gridbuf
    (or write into ``out=``). Operators call it directly, NumPy through ``__array_ufunc__``."""
    if method != "__call__" or ufunc.signature is not None:
        return _ufunc_method(ufunc, method, inputs, kwargs)
    if not kwargs:
        # The common case, one cache lookup for the bc and the output dtypes.
        gathered = _gather(inputs)
        if gathered is NotImplemented:
            return NotImplemented
        keys, arrays, dtypes = gathered
        ckey = (ufunc, tuple(keys), tuple(dtypes))
        hit = _CALLS.get(ckey)
        if hit is None:
            hit = _remember(_CALLS, ckey, (_broadcast_of(keys, inputs), _resolve_dtypes(ufunc, ckey[2], kwargs)))
        bc, res_dtypes = hit
        if bc.fix:
            _line_up(bc, arrays)
        if res_dtypes is not None and ufunc.nout == 1:
            try:
                res = bc.allocate(res_dtypes[0])
            except GridbufTypeError:
                return _ufunc_unresolved(ufunc, bc, arrays, kwargs)
            if bc.order is None:
                ufunc(*arrays, out=res)
            else:
                ufunc(*_in_order(bc.order, arrays, res)[0], out=res.transpose(bc.order))
            return bc.wrap(res)
        return _allocate_results(ufunc, bc, arrays, res_dtypes, kwargs)
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
        bc = _broadcast_of(keys, operands, masks=masks)
        _line_up(bc, arrays)
        if where is not True:
            kwargs["where"] = arrays.pop()
        res_dtypes = _resolve_dtypes(ufunc, tuple(dtypes[: ufunc.nin]), kwargs)
        return _allocate_results(ufunc, bc, arrays, res_dtypes, kwargs)
    target = outs[0]
    bc = _broadcast_of(keys, operands, _out_key(target), target, masks)
    _line_up(bc, arrays)
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


def _allocate_results(ufunc: Any, bc: _Broadcast, arrays: list[Any], res_dtypes: Any, kwargs: dict[str, Any]) -> Any:
    if res_dtypes is None:
        return _ufunc_unresolved(ufunc, bc, arrays, kwargs)
    try:
        results = tuple(bc.allocate(dt) for dt in res_dtypes)
    except GridbufTypeError:
        return _ufunc_unresolved(ufunc, bc, arrays, kwargs)
    if bc.order is None:
        ufunc(*arrays, out=results, **kwargs)
    else:
        where = kwargs.get("where", True)
        if where is not True:
            arrays.append(where)
        ordered, outs = _in_order(bc.order, arrays, results)
        if where is not True:
            kwargs["where"] = ordered.pop()
        ufunc(*ordered, out=outs, **kwargs)
    if ufunc.nout == 1:
        return bc.wrap(results[0])
    return tuple(bc.wrap(r) for r in results)


def _binary(ufunc: Any) -> tuple[Any, Any, Any]:
    def forward(self: FieldLike, other: Any) -> Any:
        return _call(ufunc, "__call__", (self, other), {})

    def reflected(self: FieldLike, other: Any) -> Any:
        return _call(ufunc, "__call__", (other, self), {})

    def inplace(self: FieldLike, other: Any) -> Any:
        # ``self op= other``: the general path of _call with out=self, with less to look at.
        operands = (self, other)
        gathered = _gather(operands)
        if gathered is NotImplemented:
            return NotImplemented
        keys, arrays, _ = gathered
        bc = _broadcast_of(keys, operands, keys[0], self)
        if bc.fix:
            _line_up(bc, arrays)
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
    def op(self: FieldLike) -> Any:
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




def _ufunc_unresolved(ufunc: Any, bc: _Broadcast, arrays: list[Any], kwargs: dict[str, Any]) -> Any:
    """A ufunc whose output dtype NumPy cannot name beforehand (or gridbuf cannot allocate):
    compute with NumPy, then copy into gridbuf allocations where the dtype allows."""
    results = ufunc(*arrays, **kwargs)
    single = ufunc.nout == 1
    wrapped = []
    for r in (results,) if single else results:
        try:
            res = bc.allocate(r.dtype)
            res[...] = r
        except GridbufError:
            res = r
        wrapped.append(bc.wrap(res))
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
