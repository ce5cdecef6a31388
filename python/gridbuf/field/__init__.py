"""The opt-in ``Field`` wrapper: labels an existing array with dims, a halo and an origin,
without copying, and exposes every interface the array has plus gridbuf's own.

Fields compute (GDP-3): NumPy ufuncs and the common array functions broadcast them by dims
name, results are allocated by gridbuf with the layout, alignment, aligned index and halo that
GDP-3's "Output Storage Parameters" give, basic indexing keeps the dims of the axes it keeps,
and assignment broadcasts by dims. The rules live in the Rust core (``gridbuf::labelled``); this
module holds the Field class (here, so that its module stays ``gridbuf.field``); the operations
live one concept per private module of this package (``_broadcast``, ``_ufuncs``,
``_reductions``, ``_functions``, ``_dtypes``, ``_device``, and ``_cache``, which caches the
core's answers per combination of dims, shapes and storage parameters so that an operation on
small fields costs a few microseconds).

Imports run one way: this module imports the operation modules, which never import it; those
that need the class (``_broadcast``, ``_reductions``, ``_functions``, ``_ufuncs``) are handed it
below once it exists, and are typed against ``_types.FieldLike`` (a protocol only the type
checker reads). Within them: ``_functions`` and ``_ufuncs`` import ``_reductions``, which imports
``_broadcast`` and ``_dtypes``; all of them import ``_cache``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _gridbuf
from .._gridbuf import FieldDescriptor, FieldMeta, field_labels, whole_allocation_plan
from .._metadata import data_interface_for, get_dims, normalize_halo
from . import _broadcast, _functions, _reductions, _ufuncs
from ._broadcast import (
    _Broadcast,
    _describe_key,
    _gather,
    _line_up,
    _object_new,
    _plain,
)
from . import _cache
from ._cache import _intern, _remember
from ._device import _on_gpu
from ._functions import _FUNCTIONS, _fallback
from ._reductions import _same_params
from ._ufuncs import _call, _install_operators
from ..errors import GridbufDeviceError, GridbufTypeError

if TYPE_CHECKING:
    from ._types import _Storage
    from ._dtypes import _Casting

# Bound by assignment, not import: CPython 3.11 compiles `name.get(...)` on an imported name
# as an attribute load plus call instead of a method call, which costs tens of nanoseconds.
_AXIS_CACHE = _cache._AXIS_CACHE
_BROADCASTS = _cache._BROADCASTS


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
        from ..stencil import FieldAnnotation

        return FieldAnnotation.from_params(params)

    # ``_meta`` holds dims, halo and origin (a FieldMeta the stencil binder reads directly);
    # ``_nd``, ``_storage``, ``_desc`` and ``_kid`` cache what is derived from the array and them.
    __slots__ = ("_array", "_meta", "_nd", "_storage", "_desc", "_kid", "__weakref__")
    _array: Any
    _meta: FieldMeta
    _nd: Any
    _storage: _Storage | None
    _desc: FieldDescriptor | None
    _kid: int | None
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
        # Dims, halo and origin: given, else what the array declares (one binding call).
        self._meta = field_labels(array, shape, dims, halo, origin)

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
                    from .._gpu import cupy_module

                    nd = cupy_module("computing with a GPU Field").asarray(a)
            else:
                nd = np.asarray(a)
            self._nd = nd
        return nd

    def _storage_params(self) -> _Storage:
        """(backend, layout or None, alignment, aligned index or None), computed once."""
        st = self._storage
        if st is None:
            alloc = whole_allocation_plan(self._array)
            if alloc is not None:
                st = (alloc.backend, alloc.layout, alloc.row_alignment, alloc.aligned_index)
            else:
                st = ("gt:gpu" if _on_gpu(self._array) else "C", None, 1, None)
            self._storage = st
        return st

    def _describe(self) -> FieldDescriptor:
        """The core's description: dims, shape, halo, layout, strides, alignment, aligned index
        and preset."""
        d = self._desc
        if d is None:
            backend, layout, alignment, aligned_index = self._storage_params()
            nd = self._data()
            strides = None if layout is not None else tuple(int(s) for s in nd.strides)
            meta = self._meta
            d = self._desc = FieldDescriptor(meta.dims, tuple(nd.shape), meta.halo, layout, strides, alignment, aligned_index, backend)
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
        alloc = array.base.plan
        f = cls(array, dims=alloc.dims, halo=alloc.halo)
        f._storage = (alloc.backend, alloc.layout, alloc.row_alignment, alloc.aligned_index)
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
        same = _same_params(self)
        res = _gridbuf.from_array(self._data(), None, **same.kwargs)
        f = same.wrap(res) if same.dims else Field._view(res, (), (), ())
        f._meta = FieldMeta(f._meta.dims, f._meta.halo, self._meta.origin)
        return f

    def astype(self, dtype: Any, order: Any = "K", casting: _Casting = "unsafe", subok: bool = True, copy: bool = True) -> Field:
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
        same = _same_params(self)
        res = _gridbuf.from_array(self._data(), dtype, **same.kwargs)
        f = same.wrap(res) if same.dims else Field._view(res, (), (), ())
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
        got = _AXIS_CACHE.get(key)
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
            got = _remember(_AXIS_CACHE, key, (perm, permuted, storage))
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
        meta = self._index_labels(nd, key)
        if meta is None:
            return res
        f = _object_new(Field)
        f._array = f._nd = res
        f._meta = meta
        f._storage = f._desc = f._kid = None
        return f

    def _index_labels(self, nd: Any, key: Any) -> Any:
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
        got = _AXIS_CACHE.get(ckey, False)
        if got is False:
            got = _remember(_AXIS_CACHE, ckey, _index_meta(meta, nd.shape, key))
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
        labels = self._index_labels(nd, key)
        if labels is None:
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
        shape = tuple(target.shape)
        pkey = ("setitem", keys[0], labels, shape)  # the labels (a FieldMeta) hash their dims
        assign = _BROADCASTS.get(pkey)
        if assign is None:
            aligned = _gridbuf._assign(_describe_key(keys[0], value), labels.dims, shape)
            assign = _remember(_BROADCASTS, pkey, _Broadcast((aligned,), None))
        _line_up(assign, arrays)
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


# The operation modules refer to the class (type checks, results); it exists only now, so it is
# handed to them here rather than imported by them (they import nothing from this package module).
# (setattr: to the type checker each module's ``Field`` is declared as ``type[FieldLike]``.)
for _module in (_broadcast, _functions, _reductions, _ufuncs):
    setattr(_module, "Field", Field)
_install_operators(Field)

__all__ = ["Field", "normalize_halo"]
