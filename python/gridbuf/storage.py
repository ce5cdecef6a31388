"""The Storage API of the source documents (GDP-3, documents 000 and 001), by its own names.

``gridbuf.storage`` is what ``gt4py.storage`` was in GDP-3: constructors (:func:`empty`,
:func:`zeros`, :func:`ones`, :func:`full`, :func:`as_storage`, :func:`storage` and the ``*_like``
forms) with the keywords ``axes``, ``defaults``, ``device``, ``halo``, ``layout``, ``managed``,
``alignment`` and ``aligned_index``, and the storage classes :class:`Storage`,
:class:`CPUStorage`, :class:`GPUStorage`, :class:`SoftwareManagedGPUStorage` and
:class:`CudaManagedGPUStorage`.

It is a thin layer: nothing here decides a layout, a halo, a broadcast or the parameters of a
result. :class:`CPUStorage`, :class:`GPUStorage` and :class:`CudaManagedGPUStorage` *are*
:class:`gridbuf.Field` s (dims-aware ufuncs, broadcasting by dims, output parameters, indexing,
``domain_view``, the halo setter: all from the Rust core through ``gridbuf.field``);
:class:`SoftwareManagedGPUStorage` holds a :class:`gridbuf.MirroredField` (its shared
:class:`gridbuf.SyncState` is the core's state machine) and computes through Fields over the side
it computes on. Keywords are renamed to gridbuf's allocation keywords (``axes`` -> ``dims``,
``defaults`` -> ``backend``) and allocation is done by :func:`gridbuf.empty` and friends,
:mod:`gridbuf.mirrored` and CuPy (``gridbuf._gpu``). What is left here is the documents' own
part: which class a call makes, and on which device an operation computes ("Mixing Devices").
The keywords are checked and renamed in ``gridbuf._storage_request``, and the operands of an
operation are routed to its device in ``gridbuf._storage_devices``; the classes and the
constructors are here.

The device stand-in
-------------------
``device="host"`` keeps the "device" buffer in host memory, as :mod:`gridbuf.mirrored` does: the
classes, sync states and device choices are those of ``device="gpu"``, so the logic runs (and is
tested) on any machine. A stand-in device buffer is treated as device memory throughout: a
:class:`GPUStorage` on the stand-in has no host buffer (``to_numpy`` and ``numpy.asarray``
raise), and computing on it with host arrays raises as with a real GPU.

Decisions where the documents contradict each other or are silent
-----------------------------------------------------------------
- ``alignment`` is in bytes, as document 001 (``mod(aligned_addr, alignment_size) == 0``) and
  gridbuf's allocation functions have it; document 000 says elements.
- ``layout`` accepts document 000's string of axis names from the largest stride to the smallest
  (``"KJI"``: I has unit stride; always the three names, also for fields of fewer axes), a
  callable returning such a string or map (called with the ``axes`` string), and document 001's
  layout map (a permutation of ``0 .. ndim-1``, gridbuf's own meaning). The string is turned
  into a map by the core's ``layout_map``.
- ``axes`` (000) and ``dims`` (001) are the same keyword; data dims (``"0"``, ``"1"``, ...) are
  allowed after the spatial axes. For a field of fewer than three axes, ``shape``,
  ``aligned_index`` and ``halo`` may have three entries in I, J, K order, and the entries of the
  absent axes are ignored (000).
- ``defaults`` takes every gridbuf preset, ``"C"``, ``"F"`` and the documents' old backend names
  ``"gtx86"``, ``"gtmc"``, ``"gtcuda"`` (GT4Py's names since: ``gt:cpu_kfirst``,
  ``gt:cpu_ifirst``, ``gt:gpu``). ``device="gpu"`` without ``defaults`` uses ``"gt:gpu"``; a CPU
  preset with a device keeps that preset's layout on the device, and a GPU preset without a
  device gives host memory with that preset's layout and alignment (``device`` alone decides
  where buffers live).
- ``device`` is None (host only), ``"gpu"`` or the stand-in ``"host"``. ``managed`` defaults to
  ``"gt4py"`` when a device is given (both documents); an explicit ``managed`` other than None
  without a device raises :class:`gridbuf.GridbufValueError` (000 says "no effect"; silently
  ignoring it would hide a mistake). ``managed=False`` (000's spelling) means None.
- ``host_to_device()`` without ``force`` copies only when the host is newer; when the *device* is
  newer it neither copies nor marks the buffers synchronized (the documents say "after the call
  the buffers are flagged as synchronized", which would silently drop the device's changes).
  ``device_to_host`` likewise. With ``force=True`` the copy runs and the buffers are in sync.
  ``set_host_modified`` / ``set_device_modified`` refuse (``GridbufDeviceError``) to mark a side
  modified while the other holds newer data, as :meth:`gridbuf.MirroredField.mark_modified` does.
  On :class:`CudaManagedGPUStorage`, ``synchronize`` waits for the GPU (CUDA keeps the buffers
  coherent, but a host read must not overtake a running kernel); every other sync method on a
  storage without two buffers is a no-op.
- ``to_numpy()``, ``data`` and ``numpy.asarray`` of a :class:`SoftwareManagedGPUStorage` make the
  host current and mark it modified (the caller may write through the view at any later time);
  ``to_cupy()`` / ``to_ndarray()`` / ``device_data`` do the same for the device.
- Mixing devices (000 and 001's "Choosing the device"): :class:`CPUStorage` computes on the host
  and :class:`GPUStorage` on the device, and an operand the other side holds raises
  :class:`gridbuf.GridbufDeviceError` (no hidden transfers). :class:`SoftwareManagedGPUStorage`
  computes on the device unless no operand is on the device (a software-managed operand counts
  as on the device unless its host side is modified); host arrays then take one transfer each.
  :class:`CudaManagedGPUStorage` computes on the device iff every array operand is readable
  there (CuPy arrays, GPU and managed storages), else on the host, where a device-only operand
  raises. The operation is handled by the storage operand of the highest ``__array_priority__``
  (11 for the managed classes, 10 for the others), the first one on a tie. ``__setitem__``
  writes on the device iff the value is on the device (software-managed, CUDA-managed), else as
  the class computes.
- Results of operations are storages of the handling class: software-managed results are
  allocated on the side they were computed on, with that side marked modified; CUDA-managed
  results live in managed memory.
- ``as_storage`` without ``device`` takes the device from the buffers (001's inference order:
  keywords, then the buffers, then the defaults).
- ``storage(data)`` keeps the dtype of ``data`` unless ``dtype`` is given (as ``numpy.array``),
  and takes its axes and halo from ``data`` when it declares them. ``as_storage`` with
  ``managed="gt4py"`` needs both buffers (it never copies; :func:`storage` copies).
- Basic indexing keeps dims of sliced axes and drops those of integer indices; advanced
  indexing returns the selected values as a plain array (001; 000 leaves it unsupported).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from . import _gridbuf
from . import mirrored as _mirrored
from ._allocation import _like_keywords
from ._field_ufuncs import _call
from ._gridbuf import FieldMeta, SyncState, layout_from_strides, whole_allocation_plan
from ._storage_devices import _device_only, _flat, _is_scalar, _lead, _on_device_value, _Operand, _to_side
from ._storage_request import LEGACY_DEFAULTS, _on_device_keywords, _Request, _resolve, _UNSET  # noqa: F401 - LEGACY_DEFAULTS: still gridbuf.storage's
from .errors import GridbufDeviceError, GridbufTypeError, GridbufValueError
from .field import Field
from .mirrored import MirroredField, as_mirrored

__all__ = [
    "CPUStorage",
    "CudaManagedGPUStorage",
    "GPUStorage",
    "SoftwareManagedGPUStorage",
    "Storage",
    "SyncState",
    "as_storage",
    "empty",
    "empty_like",
    "full",
    "full_like",
    "ones",
    "ones_like",
    "storage",
    "zeros",
    "zeros_like",
]

# -- the classes --------------------------------------------------------------------------------


class Storage(_Operand, np.lib.mixins.NDArrayOperatorsMixin):
    """Base class of every storage (for ``isinstance`` checks and type annotations).

    A storage is a duck array with dims (``axes``), a halo and a device. Operators and NumPy
    ufuncs broadcast by dims, and the result is a storage of the handling class (see the module
    docstring for the device rules). The sync methods exist on every storage so that code stays
    independent of the device; they do something only where two buffers are kept.
    """

    __slots__ = ()
    #: NumPy's priority; the managed classes (11) handle operations mixed with the others (10).
    __array_priority__: ClassVar[int] = 10
    #: "gt4py", "cuda" or None.
    managed: ClassVar[str | None] = None

    if TYPE_CHECKING:  # provided by the subclasses (a Field's, or delegated to one)
        dims: tuple[str, ...]
        halo: tuple[tuple[int, int], ...]

        def to_numpy(self) -> np.ndarray: ...
        def to_cupy(self) -> Any: ...
        def to_ndarray(self) -> Any: ...

    # -- documents' attributes ------------------------------------------------------------------
    @property
    def axes(self) -> str:
        """The dims as a string, in index order (``"JI"``: the first index is J)."""
        return "".join(self.dims)

    @property
    def gpu(self) -> bool:
        """Whether the storage has a device buffer."""
        return self.device is not None

    @property
    def device(self) -> str | None:
        """``"gpu"``, ``"host"`` (the stand-in) or None (no device buffer)."""
        return None

    @property
    def layout(self) -> tuple[int, ...]:
        """The layout map (``layout[i] = j``: axis ``i`` is axis ``j`` of a C-ordered buffer)."""
        f = self._labels()
        params = f._storage_params()
        return tuple(params[1]) if params[1] is not None else tuple(layout_from_strides(f.strides))

    @property
    def defaults(self) -> str:
        """The preset the buffers were allocated with (``"C"`` for wrapped foreign arrays)."""
        return str(self._labels()._storage_params()[0])

    def _labels(self) -> Field:
        raise NotImplementedError

    # -- sync methods (no-ops where nothing needs syncing) -------------------------------------
    def synchronize(self) -> None:
        """Copy the modified buffer into the other; a no-op without two buffers."""

    def host_to_device(self, *, force: bool = False) -> None:
        """Copy host to device if the host is modified (or ``force``); a no-op without two buffers."""

    def device_to_host(self, *, force: bool = False) -> None:
        """Copy device to host if the device is modified (or ``force``); a no-op without two buffers."""

    def set_host_modified(self) -> None:
        """Mark the host buffer modified; a no-op without two buffers."""

    def set_device_modified(self) -> None:
        """Mark the device buffer modified; a no-op without two buffers."""

    def set_synchronized(self) -> None:
        """Mark both buffers equal; a no-op without two buffers."""

    # -- computing -----------------------------------------------------------------------------
    def _compute_side(self, operands: Sequence[Any]) -> str:
        """"host" or "device": where an operation led by this storage computes."""
        raise NotImplementedError

    def _wrap(self, result: Any, side: str) -> Any:
        """A Field result of an operation led by this storage as a storage of its class."""
        raise NotImplementedError

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        out = kwargs.get("out")
        outs = () if out is None else (out if isinstance(out, tuple) else (out,))
        lead = _lead((*inputs, *outs))
        if not isinstance(lead, Storage) or type(lead) is not type(self):
            return NotImplemented  # NumPy asks the operand of higher priority next
        side = lead._compute_side(_flat((*inputs, *outs)))
        args = tuple(_to_side(x, side, lead, False) for x in inputs)
        if outs:
            kwargs["out"] = tuple(_to_side(o, side, lead, True) for o in outs)
        result = _call(ufunc, method, args, kwargs)
        if result is NotImplemented:
            return NotImplemented
        if outs:
            return outs[0] if len(outs) == 1 else outs
        return lead._wrap(result, side)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        lead = _lead((*args, *kwargs.values()))
        if not isinstance(lead, Storage) or type(lead) is not type(self):
            return NotImplemented
        side = lead._compute_side(_flat((*args, *kwargs.values())))
        out = kwargs.get("out")
        conv_args = tuple(_to_side(x, side, lead, False) for x in args)
        conv_kwargs = {k: _to_side(v, side, lead, k == "out") for k, v in kwargs.items()}
        result = Field.__array_function__(lead._labels(), func, (Field,), conv_args, conv_kwargs)
        if out is not None:
            return out
        return lead._wrap(result, side)

    def __deepcopy__(self, memo: Any = None) -> Any:
        return self.copy()

    def copy(self) -> Any:
        raise NotImplementedError


def _recls(x: Any, cls: type) -> Any:
    """Field results (also in tuples) re-labelled as ``cls`` (a Field subclass with no slots of
    its own, so the object is the same)."""
    if type(x) is Field:
        x.__class__ = cls
    elif isinstance(x, tuple):
        return tuple(_recls(v, cls) for v in x)
    return x


class _FieldStorage(Storage, Field):
    """A storage that is a :class:`gridbuf.Field` over one buffer."""

    __slots__ = ()

    def _labels(self) -> Field:
        return self

    def _wrap(self, result: Any, side: str) -> Any:
        return _recls(result, type(self))

    def __getitem__(self, key: Any) -> Any:
        return _recls(Field.__getitem__(self, key), type(self))

    def __setitem__(self, key: Any, value: Any) -> None:
        side = self._compute_side([value])
        Field.__setitem__(self, key, _to_side(value, side, self, False))

    @property
    def domain_view(self) -> Any:
        """A view of the halo-free part as a storage of the same class (index 0 is the first
        domain point)."""
        return _recls(Field.domain_view.fget(self), type(self))  # type: ignore[attr-defined]

    def transpose(self, *axes: Any) -> Any:
        """A view with the axes permuted (names or positions), as a storage of the same class."""
        return _recls(Field.transpose(self, *axes), type(self))

    def copy(self) -> Any:
        """A copy in new memory with the same parameters, as a storage of the same class."""
        return _recls(Field.copy(self), type(self))

    def astype(self, dtype: Any, *args: Any, **kwargs: Any) -> Any:
        """A converted copy (see :meth:`gridbuf.Field.astype`), as a storage of the same class."""
        return _recls(Field.astype(self, dtype, *args, **kwargs), type(self))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(shape={self.shape}, dtype={self.dtype}, axes={self.axes!r}, halo={self.halo})"


class CPUStorage(_FieldStorage):
    """A storage with a host buffer only: a :class:`gridbuf.Field` under the documents' names.

    Construct it with the functions of this module, or as a Field: ``CPUStorage(array,
    dims=..., origin=..., halo=...)`` wraps ``array`` without copying.
    """

    __slots__ = ()

    @property
    def data(self) -> memoryview:
        """The host buffer's ``data`` (a memoryview)."""
        return self.to_numpy().data

    @property
    def device_data(self) -> None:
        """None: a CPU storage has no device buffer."""
        return None

    def to_cupy(self) -> Any:
        """Raise: a CPU storage has no device buffer.

        Raises
        ------
        GridbufDeviceError
            Always; allocate with ``device="gpu"`` to have one.
        """
        raise GridbufDeviceError(
            f"to_cupy of a CPUStorage with axes {self.axes!r} (device=None): it has no device buffer; allocate it with "
            "device='gpu', or copy it with gridbuf.storage.storage(s, device='gpu')"
        )

    def _on_device(self) -> bool:
        return False

    def _compute_side(self, operands: Sequence[Any]) -> str:
        return "host"


class GPUStorage(_FieldStorage):
    """A storage with a device buffer only (a CuPy array; a NumPy array on the stand-in)."""

    __slots__ = ()
    _no_host: ClassVar[bool] = True

    @property
    def device(self) -> str:
        return "host" if isinstance(self._data(), np.ndarray) else "gpu"

    @property
    def data(self) -> None:
        """None: a GPU storage has no host buffer."""
        return None

    @property
    def device_data(self) -> Any:
        """The device buffer's ``data`` (a CuPy memory pointer; a memoryview on the stand-in)."""
        return self._data().data

    def to_numpy(self) -> np.ndarray:
        """Raise: a GPU storage has no host buffer.

        Raises
        ------
        GridbufDeviceError
            Always; use :meth:`to_cupy`, or copy to the host explicitly.
        """
        raise GridbufDeviceError(
            f"to_numpy of a GPUStorage with axes {self.axes!r} (managed=None): it has no host buffer; use to_cupy(), "
            "or copy it with gridbuf.storage.storage(s.to_cupy().get())"
        )

    def to_cupy(self) -> Any:
        """The device buffer (a view, no copy): a CuPy array, a NumPy array on the stand-in."""
        return self._data()

    def to_ndarray(self) -> Any:
        """The device buffer, as :meth:`to_cupy`."""
        return self._data()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise GridbufDeviceError(f"numpy.asarray of a GPUStorage with axes {self.axes!r}: it has no host buffer; use to_cupy()")

    @property
    def __array_interface__(self) -> dict[str, Any]:
        raise AttributeError("a GPUStorage has no host buffer, hence no __array_interface__")

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        if self.device == "host":
            raise AttributeError("a GPUStorage on the stand-in device has no __cuda_array_interface__")
        return Field.__cuda_array_interface__.fget(self)  # type: ignore[attr-defined]

    @property
    def __gt_data_interface__(self) -> dict[Any, dict[str, Any]]:
        if self.device == "gpu":
            return Field.__gt_data_interface__.fget(self)  # type: ignore[attr-defined]
        entry = {**self._data().__array_interface__, "version": 3, "dims": self.dims, "halo": self.halo}
        return {"gpu": entry, "cuda": entry}

    def _on_device(self) -> bool:
        return True

    def _compute_side(self, operands: Sequence[Any]) -> str:
        return "device"


class CudaManagedGPUStorage(_FieldStorage):
    """A storage in CUDA unified memory: one buffer that host and device both address (a NumPy
    array; :meth:`to_cupy` views the same memory). On the stand-in, plain host memory."""

    __slots__ = ()
    __array_priority__: ClassVar[int] = 11
    managed: ClassVar[str | None] = "cuda"

    @property
    def device(self) -> str:
        from ._gpu import managed_owner

        return "gpu" if managed_owner(self._data()) is not None else "host"

    @property
    def data(self) -> memoryview:
        """The buffer's ``data`` as seen from the host (a memoryview)."""
        return self._data().data

    @property
    def device_data(self) -> Any:
        """The buffer's ``data`` as seen from the device (a CuPy memory pointer)."""
        return self.to_cupy().data

    def to_cupy(self) -> Any:
        """The same memory as a CuPy array (no copy); the NumPy array on the stand-in."""
        if self.device == "host":
            return self._data()
        from ._interop import as_cupy

        return as_cupy(self._data())

    def to_ndarray(self) -> Any:
        """The buffer as the device sees it, as :meth:`to_cupy`."""
        return self.to_cupy()

    def synchronize(self) -> None:
        """Wait for the GPU, so that host reads see finished device writes (nothing to copy)."""
        if self.device == "gpu":
            from ._gpu import cupy_module

            cupy_module("synchronize").cuda.runtime.deviceSynchronize()

    def _device_field(self) -> Field:
        return self if self.device == "host" else Field._view(self.to_cupy(), self.dims, self.halo, self.origin)

    def _side_field(self, side: str, write: bool) -> Field:
        return self if side == "host" else self._device_field()

    def _on_device(self) -> bool:
        return True

    def __setitem__(self, key: Any, value: Any) -> None:
        # 001: written on the device iff the value is on the device (the memory is the same).
        side = "device" if _on_device_value(value) else "host"
        target = self if side == "host" else self._device_field()
        Field.__setitem__(target, key, _to_side(value, side, self, False))

    def _compute_side(self, operands: Sequence[Any]) -> str:
        arrays = [x for x in operands if not _is_scalar(x)]
        if all(_on_device_value(x) for x in arrays):
            return "device"
        return "host"

    def _wrap(self, result: Any, side: str) -> Any:
        if isinstance(result, tuple):
            return tuple(self._wrap(r, side) for r in result)
        if type(result) is not Field:
            return result
        if self.device == "gpu":
            from ._allocation import empty_like

            managed = empty_like(result.array, managed="cuda")
            CudaManagedGPUStorage(managed, dims=result.dims, halo=result.halo)[...] = result
            return CudaManagedGPUStorage(managed, dims=result.dims, halo=result.halo, origin=result.origin)
        return _recls(result, CudaManagedGPUStorage)


class SoftwareManagedGPUStorage(Storage):
    """A host buffer and a device buffer synchronised by gridbuf: a :class:`gridbuf.MirroredField`
    with dims and a halo. Every view shares the :class:`SyncState` (``sync_state``)."""

    __slots__ = ("_m", "_f")
    __array_priority__: ClassVar[int] = 11
    managed: ClassVar[str | None] = "gt4py"
    _m: MirroredField
    _f: Field  # labels (dims, halo, origin) over the host view; its data is read only through _m

    def __init__(self, mirrored: MirroredField, dims: Any = None, halo: Any = None, origin: Any = None) -> None:
        if not isinstance(mirrored, MirroredField):
            raise GridbufTypeError(f"invalid type for mirrored ({type(mirrored).__name__}): expected a gridbuf.MirroredField")
        self._m = mirrored
        plan = mirrored.plan
        if plan is not None and mirrored.shape == tuple(plan.shape):
            dims = plan.dims if dims is None else dims
            halo = plan.halo if halo is None else halo
        self._f = Field(mirrored._host, dims=dims, halo=halo, origin=origin)

    @classmethod
    def _of(cls, m: MirroredField, meta: FieldMeta) -> SoftwareManagedGPUStorage:
        s = object.__new__(cls)
        s._m = m
        s._f = Field._view(m._host, meta.dims, meta.halo, meta.origin)
        return s

    # -- description (the labels are the Field's) ----------------------------------------------
    def _labels(self) -> Field:
        return self._f

    @property
    def device(self) -> str:
        return self._m.device_kind

    @property
    def sync_state(self) -> SyncState:
        """The state shared by every view of these buffers."""
        return self._m.sync_state

    @property
    def mirrored(self) -> MirroredField:
        """The mirrored field holding both buffers."""
        return self._m

    shape = property(lambda self: self._f.shape, doc="Shape, halo included.")
    dtype = property(lambda self: self._f.dtype, doc="The NumPy dtype.")
    ndim = property(lambda self: self._f.ndim, doc="Number of axes.")
    size = property(lambda self: self._f.size, doc="Number of elements.")
    strides = property(lambda self: self._f.strides, doc="Byte strides (the same on both sides).")
    nbytes = property(lambda self: self._f.nbytes, doc="Bytes of the elements (padding excluded).")
    dims = property(lambda self: self._f.dims, doc="Dims per axis.")
    origin = property(lambda self: self._f.origin, doc="Start of the compute domain.")
    domain_shape = property(lambda self: self._f.domain_shape, doc="Shape without the halo.")
    alignment = property(lambda self: self._f.alignment, doc="Row alignment in bytes.")
    aligned_index = property(lambda self: self._f.aligned_index, doc="Index of the aligned element.")

    @property
    def halo(self) -> tuple[tuple[int, int], ...]:
        """Halo per axis as (lower, upper); settable (changes the domain, not the memory)."""
        return self._f.halo

    @halo.setter
    def halo(self, value: Any) -> None:
        self._f.halo = value

    @property
    def defaults(self) -> str:
        plan = self._m.plan
        return str(plan.backend) if plan is not None else str(self._f._storage_params()[0])

    @property
    def data(self) -> memoryview:
        """The host buffer's ``data``, made current (and marked modified: it may be written)."""
        return self._m.host(write=True).data

    @property
    def device_data(self) -> Any:
        """The device buffer's ``data``, made current (and marked modified)."""
        return self._m.device(write=True).data

    @property
    def domain_view(self) -> SoftwareManagedGPUStorage:
        """A view of the halo-free part (sharing the buffers and the sync state)."""
        index = tuple(slice(lo, n - hi) for n, (lo, hi) in zip(self.shape, self.halo))
        zero = (0,) * self.ndim
        return SoftwareManagedGPUStorage._of(self._m[index], FieldMeta(self.dims, ((0, 0),) * self.ndim, zero))

    def __len__(self) -> int:
        return len(self._m)

    def __repr__(self) -> str:
        return (
            f"SoftwareManagedGPUStorage(shape={self.shape}, dtype={self.dtype}, axes={self.axes!r}, halo={self.halo}, "
            f"device={self.device!r}, state={self.sync_state.state!r})"
        )

    # -- views of one side ---------------------------------------------------------------------
    def _side_field(self, side: str, write: bool) -> Field:
        """A Field over this view of ``side``, made current (marked modified when ``write``)."""
        array = self._m.host(write=write) if side == "host" else self._m.device(write=write)
        f = self._f
        return Field._view(array, f.dims, f.halo, f.origin)

    def to_numpy(self) -> np.ndarray:
        """The host buffer, made current and marked modified (a view, no copy)."""
        return self._m.host(write=True)

    def to_cupy(self) -> Any:
        """The device buffer, made current and marked modified (a CuPy array; NumPy on the stand-in)."""
        return self._m.device(write=True)

    def to_ndarray(self) -> Any:
        """The device buffer, as :meth:`to_cupy`."""
        return self.to_cupy()

    # -- sync methods --------------------------------------------------------------------------
    def synchronize(self) -> None:
        """Copy the modified side into the other (no copy when in sync); then in sync."""
        self._m.sync()

    def _push(self, src: str, force: bool) -> None:
        state = self._m.sync_state
        dirty = f"{src}_dirty"
        if force and state.state != dirty:
            state.set_state(dirty)
        if state.state == dirty:
            state.sync(self._m._pair.copy)

    def host_to_device(self, *, force: bool = False) -> None:
        """Copy host to device if the host is modified, or always with ``force=True``.

        Afterwards the buffers are in sync; without ``force``, a newer device side is left as it
        is (neither copied over nor marked in sync).
        """
        self._push("host", force)

    def device_to_host(self, *, force: bool = False) -> None:
        """Copy device to host if the device is modified, or always with ``force=True``; see
        :meth:`host_to_device`."""
        self._push("device", force)

    def set_host_modified(self) -> None:
        """Mark the host modified (written outside gridbuf).

        Raises
        ------
        GridbufDeviceError
            The device holds changes the host lacks (synchronize first).
        """
        self._m.mark_modified("host")

    def set_device_modified(self) -> None:
        """Mark the device modified (written outside gridbuf); see :meth:`set_host_modified`."""
        self._m.mark_modified("device")

    def set_synchronized(self) -> None:
        """Mark both buffers equal (after a copy done by hand)."""
        self._m.sync_state.set_state("clean")

    # -- computing -----------------------------------------------------------------------------
    def _on_device(self) -> bool:
        return self._m.sync_state.state != "host_dirty"

    def _compute_side(self, operands: Sequence[Any]) -> str:
        return "device" if any(_on_device_value(x) for x in operands if not _is_scalar(x)) else "host"

    def _wrap(self, result: Any, side: str) -> Any:
        if isinstance(result, tuple):
            return tuple(self._wrap(r, side) for r in result)
        if not isinstance(result, Field):
            return result
        return _mirror_of(result, side, self.device)

    def __getitem__(self, key: Any) -> Any:
        labels = Field.__getitem__(self._f, key)
        if not isinstance(labels, Field):  # one element, or advanced indexing: values, read on the host
            with self._m.access("host", write=False) as a:
                values = a[key]
                return values.copy() if isinstance(values, np.ndarray) else values
        return SoftwareManagedGPUStorage._of(self._m[key], labels._meta)

    def __setitem__(self, key: Any, value: Any) -> None:
        side = "device" if _on_device_value(value) else "host"
        value = _to_side(value, side, self, False)
        with self._m.access(side, write=True) as a:
            f = self._f
            Field._view(a, f.dims, f.halo, f.origin)[key] = value

    def transpose(self, *axes: Any) -> SoftwareManagedGPUStorage:
        """A view with the axes permuted (names or positions), sharing the buffers and state."""
        labels = self._f.transpose(*axes)
        perm = tuple(self.dims.index(d) for d in labels.dims)
        return SoftwareManagedGPUStorage._of(self._m.transpose(perm), labels._meta)

    @property
    def T(self) -> SoftwareManagedGPUStorage:  # noqa: N802 - NumPy's name
        return self.transpose()

    def copy(self) -> SoftwareManagedGPUStorage:
        """A copy in new buffers with the same parameters (the newer side is copied)."""
        side = "device" if self.sync_state.state == "device_dirty" else "host"
        return _mirror_of(self._side_field(side, False).copy(), side, self.device)

    # -- interfaces ----------------------------------------------------------------------------
    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self._m.__array__(dtype, copy)

    @property
    def __array_interface__(self) -> dict[str, Any]:
        return self._m.__array_interface__

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return self._m.__cuda_array_interface__

    @property
    def __gt_data_interface__(self) -> dict[Any, dict[str, Any]]:
        iface = self._m.__gt_data_interface__
        extra = {"dims": self.dims, "halo": self.halo}
        host, dev = {**iface["cpu"], **extra}, {**iface["gpu"], **extra}
        return {"cpu": host, "gpu": dev, "cuda": dev}

    @property
    def __gt_dims__(self) -> tuple[str, ...]:
        return self.dims

    @property
    def __gt_origin__(self) -> tuple[int, ...]:
        return self.origin


def _mirror_of(result: Field, side: str, kind: str) -> SoftwareManagedGPUStorage:
    """A software-managed storage whose ``side`` buffer is ``result``'s array (a whole gridbuf
    allocation) and whose other buffer is a new one of the same plan; ``side`` is modified."""
    array = result.array
    if side == "device" and kind == "gpu":
        from ._gpu import device_plan

        plan = device_plan(array)
    else:
        plan = whole_allocation_plan(array)
    if plan is None:  # not a whole allocation (cannot happen for gridbuf's results): copy into one
        copied = result.copy()
        return _mirror_of(copied, side, kind)
    host_kw = _mirrored._host_twin_keywords(plan)
    twin_kw = host_kw if (side == "device" or kind == "host") else {**host_kw, "backend": "gt:gpu"}
    twin = _gridbuf.empty(array.shape, array.dtype, **twin_kw)
    host, dev = (array, twin) if side == "host" else (twin, array)
    pair = _mirrored._Pair(host, dev, SyncState(f"{side}_dirty"), kind, plan)
    return SoftwareManagedGPUStorage._of(MirroredField(pair, host, dev), result._meta)


# -- constructors -------------------------------------------------------------------------------


def _make(req: _Request, dtype: Any, fill: str, value: Any = None, data: Any = None) -> Storage:
    """Allocate the storage ``req`` asks for; ``fill`` is "empty", "zeros", "ones", "full" or "copy"."""
    shape, kw, device = req.shape, req.kw, req.device
    if device is None:
        if kw.get("backend") is not None and _gridbuf.preset(kw["backend"]).device == "gpu":
            # A GPU preset without a device: host memory with that preset's layout and alignment.
            shape_of = shape if fill != "copy" else np.shape(data)
            dtype_of = dtype if dtype is not None or fill != "copy" else getattr(data, "dtype", None)
            kw = _on_device_keywords(shape_of, dtype_of, kw, "host")
        if fill == "copy":
            return _recls(Field.from_array(data, dtype, **kw), CPUStorage)
        fn = {"empty": Field.empty, "zeros": Field.zeros, "ones": Field.ones}.get(fill)
        f = fn(shape, dtype, **kw) if fn is not None else Field.full(shape, value, dtype, **kw)
        return _recls(f, CPUStorage)
    if req.managed == "gt4py":
        if fill == "copy":
            m = _mirrored.from_array(data, dtype, device=device, **kw)
        elif fill == "full":
            m = _mirrored.full(shape, value, dtype, device=device, **kw)
        else:
            m = getattr(_mirrored, fill)(shape, dtype, device=device, **kw)
        return SoftwareManagedGPUStorage(m)
    shape_of = shape if fill != "copy" else np.shape(data)
    dtype_of = dtype if dtype is not None or fill != "copy" else getattr(data, "dtype", None)
    dev_kw = _on_device_keywords(shape_of, dtype_of, kw, device)
    cls: type[_FieldStorage] = GPUStorage
    if req.managed == "cuda":
        cls = CudaManagedGPUStorage
        if device == "gpu":
            dev_kw = {**dev_kw, "managed": "cuda"}
    if fill == "copy":
        array = _gridbuf.from_array(data, dtype, **dev_kw)
    elif fill == "full":
        array = _gridbuf.full(shape, value, dtype, **dev_kw)
    else:
        array = getattr(_gridbuf, fill)(shape, dtype, **dev_kw)
    plan = _gridbuf.plan(shape_of, np.dtype(array.dtype), **dev_kw) if "managed" not in dev_kw else None
    dims = plan.dims if plan is not None else kw.get("dims")
    halo = plan.halo if plan is not None else kw.get("halo")
    return cls(array, dims=dims, halo=halo)


def empty(shape: Sequence[int], dtype: Any = np.float64, **kwargs: Any) -> Storage:
    """Allocate a storage with uninitialised values.

    Parameters
    ----------
    shape : sequence of int
        Shape, halo included (three entries in I, J, K order also for fewer ``axes``).
    dtype : dtype_like, optional
        Default float64.
    **kwargs
        ``axes`` (or ``dims``), ``defaults`` (a preset, ``"C"``, ``"F"``), ``device`` (None,
        ``"gpu"`` or the stand-in ``"host"``), ``managed`` (``"gt4py"``, ``"cuda"`` or None),
        ``halo``, ``layout`` (axis names from the largest stride, or a layout map),
        ``alignment`` (bytes) and ``aligned_index``.

    Returns
    -------
    Storage
        A :class:`CPUStorage` without a device; with one, a :class:`SoftwareManagedGPUStorage`
        (``managed="gt4py"``, the default), :class:`CudaManagedGPUStorage` (``"cuda"``) or
        :class:`GPUStorage` (None).

    Raises
    ------
    GridbufValueError, GridbufTypeError, UnknownPresetError
        Unknown ``axes``, ``layout``, ``defaults``, ``device`` or ``managed`` (the message names
        the keyword and the value), or a halo or aligned index that does not fit.
    GridbufDeviceError
        ``device="gpu"`` without CuPy or a GPU.
    """
    return _make(_resolve(shape, kwargs), dtype, "empty")


def zeros(shape: Sequence[int], dtype: Any = np.float64, **kwargs: Any) -> Storage:
    """Allocate a storage of zeros; parameters as for :func:`empty`.

    Returns
    -------
    Storage
    """
    return _make(_resolve(shape, kwargs), dtype, "zeros")


def ones(shape: Sequence[int], dtype: Any = np.float64, **kwargs: Any) -> Storage:
    """Allocate a storage of ones; parameters as for :func:`empty`.

    Returns
    -------
    Storage
    """
    return _make(_resolve(shape, kwargs), dtype, "ones")


def full(shape: Sequence[int], fill_value: Any, dtype: Any = np.float64, **kwargs: Any) -> Storage:
    """Allocate a storage filled with ``fill_value``; other parameters as for :func:`empty`.

    Returns
    -------
    Storage
    """
    return _make(_resolve(shape, kwargs), dtype, "full", fill_value)


def _template(data: Any) -> tuple[Any, dict[str, Any]]:
    """The buffer whose plan ``*_like`` reuses, and the storage keywords it cannot carry."""
    if not isinstance(data, Storage):
        raise GridbufTypeError(f"invalid type for data ({type(data).__name__}): expected a gridbuf.storage.Storage")
    extra: dict[str, Any] = {"device": data.device, "managed": data.managed if data.device is not None else _UNSET}
    if isinstance(data, SoftwareManagedGPUStorage):
        return data._m._host, extra
    return data._labels()._data(), extra


def _like(data: Any, dtype: Any, kwargs: dict[str, Any], fill: str, value: Any = None) -> Storage:
    if "shape" in kwargs:
        raise GridbufTypeError("invalid keyword 'shape' for a *_like function: the shape is the template's")
    template, extra = _template(data)
    req = _resolve(data.shape, {**extra, **kwargs})
    # gridbuf's *_like rule: the template's plan, with what the keywords override recomputed.
    overrides = dict(req.kw)
    overrides.setdefault("dims", data.dims)
    if "halo" not in overrides and "aligned_index" not in overrides:  # the storage's halo may have been set
        overrides["halo"], overrides["aligned_index"] = data.halo, data.aligned_index
    if "layout" not in overrides and not any(k in kwargs for k in ("defaults", "backend", "axes", "dims")):
        overrides["layout"] = data.layout
    shape, dt, kw = _like_keywords(template, dtype if dtype is not None else data.dtype, overrides)
    kw.pop("managed", None)
    return _make(_Request(shape, kw, req.device, req.managed), dt, fill, value)


def empty_like(data: Storage, dtype: Any = None, **kwargs: Any) -> Storage:
    """A new uninitialised storage with the parameters of ``data``.

    Parameters
    ----------
    data : Storage
        The template: shape, dtype, axes, halo, layout, alignment, aligned index, device and
        managed are taken from it unless given (the shape cannot be overridden).
    dtype : dtype_like, optional
        Default: ``data.dtype``.
    **kwargs
        Keywords of :func:`empty` that override the template's.

    Returns
    -------
    Storage
    """
    return _like(data, dtype, kwargs, "empty")


def zeros_like(data: Storage, dtype: Any = None, **kwargs: Any) -> Storage:
    """A new storage of zeros with the parameters of ``data`` (see :func:`empty_like`).

    Returns
    -------
    Storage
    """
    return _like(data, dtype, kwargs, "zeros")


def ones_like(data: Storage, dtype: Any = None, **kwargs: Any) -> Storage:
    """A new storage of ones with the parameters of ``data`` (see :func:`empty_like`).

    Returns
    -------
    Storage
    """
    return _like(data, dtype, kwargs, "ones")


def full_like(data: Storage, fill_value: Any, dtype: Any = None, **kwargs: Any) -> Storage:
    """A new storage filled with ``fill_value`` with the parameters of ``data`` (see :func:`empty_like`).

    Returns
    -------
    Storage
    """
    return _like(data, dtype, kwargs, "full", fill_value)


def _check_buffer_layout(array: Any, req: _Request, given: dict[str, Any]) -> None:
    """``as_storage``: a ``layout`` or ``defaults`` given must be the buffer's stride order."""
    if "layout" not in req.kw and "backend" not in req.kw:
        return
    if getattr(array, "ndim", 0) < 2:
        return
    expected = tuple(_gridbuf.plan(tuple(array.shape), np.dtype(array.dtype), **req.kw).layout)
    actual = tuple(layout_from_strides(array.strides))
    if expected != actual:
        which = "layout" if "layout" in req.kw else ("defaults" if "defaults" in given else "backend")
        raise GridbufValueError(
            f"invalid {which} {given.get(which)!r} for the buffer: it asks for the layout map "
            f"{expected}, but the buffer's strides {tuple(array.strides)} have {actual}; as_storage does not copy"
        )


def as_storage(data: Any = None, device_data: Any = None, *, sync_state: Any = None, **kwargs: Any) -> Storage:
    """Wrap existing buffers in a storage, without copying.

    Parameters
    ----------
    data : array_like, optional
        The host buffer (or a device array, which then makes a :class:`GPUStorage`), or a storage.
    device_data : array_like, optional
        The device buffer (a CuPy array; a NumPy array on the stand-in ``device="host"``).
    sync_state : {"clean", "host_dirty", "device_dirty"} or SyncState, optional
        With both buffers (``managed="gt4py"``): which is current, or the :class:`SyncState` of
        the storage the buffers were taken from. Default ``"clean"``.
    **kwargs
        Keywords of :func:`empty`; ``axes`` and ``halo`` label the buffers, ``layout`` and
        ``defaults`` are checked against their strides. Without ``device``, the buffers decide:
        ``device_data`` (a CuPy array: ``"gpu"``, a NumPy array: the stand-in ``"host"``) with
        ``data`` makes a software-managed storage, alone a :class:`GPUStorage`; a CuPy array
        as ``data`` alone a :class:`GPUStorage`.

    Returns
    -------
    Storage

    Raises
    ------
    GridbufValueError
        A keyword that does not fit the buffers, or missing buffers.
    GridbufDeviceError
        A buffer on the wrong device for the requested class.
    """
    if isinstance(data, Storage) and device_data is None and not kwargs:
        return data
    if isinstance(data, Storage):
        data = data.to_ndarray() if data.device is not None and data.managed != "cuda" else data.to_numpy()
    if data is None and device_data is None:
        raise GridbufValueError("invalid data None with device_data None: as_storage wraps a buffer; pass one (or use empty)")
    device_given = "device" in kwargs
    req = _resolve(None, kwargs, ndim=len(np.shape(data if data is not None else device_data)) if data is not None or device_data is not None else None)
    dims, halo = req.kw.get("dims"), req.kw.get("halo")
    if not device_given:  # inferred from the buffers (001's search order: keywords, then the buffers)
        if device_data is not None:
            req.device = "gpu" if _device_only(device_data) else "host"
            if "managed" not in kwargs:
                req.managed = "gt4py" if data is not None else None
        elif data is not None and _device_only(data):
            req.device, req.managed = "gpu", None  # a device array alone: a GPU storage
    if req.device is None:
        if device_data is not None:
            raise GridbufValueError("invalid device_data with device=None: a CPU storage has no device buffer; pass device='gpu'")
        if _device_only(data):
            raise GridbufDeviceError(f"invalid data ({type(data).__name__}): it lives on the GPU, but device=None keeps host memory")
        array = data if isinstance(data, np.ndarray) else np.asarray(data)
        _check_buffer_layout(array, req, kwargs)
        return CPUStorage(array, dims=dims, halo=halo)
    if req.managed == "gt4py":
        if data is None or device_data is None:
            raise GridbufValueError(
                "invalid data or device_data None with managed='gt4py': both buffers are needed (as_storage never copies); "
                "use storage(...) to allocate the other one"
            )
        m = as_mirrored(data, device_data, sync_state="clean" if sync_state is None else sync_state)
        if (m.device_kind == "gpu") != (req.device == "gpu"):
            raise GridbufDeviceError(f"invalid device {req.device!r} for device_data of type {type(device_data).__name__}")
        _check_buffer_layout(m._host, req, kwargs)
        return SoftwareManagedGPUStorage(m, dims=dims, halo=halo)
    if sync_state is not None:
        raise GridbufValueError(f"invalid sync_state {sync_state!r} with managed={req.managed!r}: only managed='gt4py' keeps a sync state")
    if req.managed == "cuda":
        buf = data if data is not None else device_data
        if not isinstance(buf, np.ndarray):
            buf = np.asarray(buf)
        if req.device == "gpu":
            from ._gpu import managed_owner

            if managed_owner(buf) is None:
                raise GridbufDeviceError("invalid data for managed='cuda': it is not CUDA managed memory (allocate it with managed='cuda')")
        _check_buffer_layout(buf, req, kwargs)
        return CudaManagedGPUStorage(buf, dims=dims, halo=halo)
    buf = device_data if device_data is not None else data
    if req.device == "gpu" and not _device_only(buf):
        raise GridbufDeviceError(f"invalid device_data ({type(buf).__name__}) for device='gpu': expected a CuPy array")
    if req.device == "host" and not isinstance(buf, np.ndarray):
        raise GridbufTypeError(f"invalid device_data ({type(buf).__name__}) for the stand-in device='host': expected a NumPy array")
    _check_buffer_layout(buf, req, kwargs)
    return GPUStorage(buf, dims=dims, halo=halo)


def storage(data: Any = None, device_data: Any = None, *, dtype: Any = None, copy: bool = True, sync_state: Any = None, **kwargs: Any) -> Storage:
    """A storage initialised with a copy of ``data`` (or wrapping it when ``copy=False``).

    Parameters
    ----------
    data : array_like, optional
        The values (host or device array, or a storage); its axes and halo are kept when it
        declares them and the keywords do not say otherwise.
    device_data : array_like, optional
        The values on the device, used when ``data`` is None (or when ``sync_state`` says the
        device is current).
    dtype : dtype_like, optional
        Default: the dtype of the values.
    copy : bool, optional
        False: :func:`as_storage` (no copy); without buffers, :func:`empty`.
    sync_state : optional
        For ``copy=False``, see :func:`as_storage`; with a copy, ``"device_dirty"`` picks
        ``device_data`` as the source when both are given.
    **kwargs
        Keywords of :func:`empty`.

    Returns
    -------
    Storage
    """
    if not copy:
        if data is None and device_data is None:
            shape = kwargs.pop("shape", None)
            if shape is None:
                raise GridbufValueError("invalid shape None: storage(copy=False) without buffers allocates and needs shape=")
            return empty(shape, np.float64 if dtype is None else dtype, **kwargs)
        return as_storage(data, device_data, sync_state=sync_state, **kwargs)
    source = data
    if source is None or (device_data is not None and sync_state == "device_dirty"):
        source = device_data
    if source is None:
        raise GridbufValueError("invalid data None with device_data None: storage copies values; pass data (or use empty)")
    if isinstance(source, Storage):
        kwargs.setdefault("axes" if "dims" not in kwargs else "dims", source.axes)
        kwargs.setdefault("halo", source.halo)
        source = source._labels() if not isinstance(source, SoftwareManagedGPUStorage) else source._side_field(
            "device" if source.sync_state.state == "device_dirty" else "host", False
        )
        if isinstance(source, GPUStorage):
            source = source.to_cupy()
        elif isinstance(source, Field):
            source = source._data()
    elif isinstance(source, Field):
        kwargs.setdefault("axes" if "dims" not in kwargs else "dims", source.dims)
        kwargs.setdefault("halo", source.halo)
        source = source._data()
    shape = np.shape(source) if not hasattr(source, "shape") else tuple(source.shape)
    req = _resolve(shape, kwargs)
    if "dims" not in req.kw and not isinstance(source, (list, tuple)):
        declared = _gridbuf.get_dims(source)
        if declared is not None:
            req.kw["dims"] = declared
    return _make(req, dtype, "copy", data=source)

