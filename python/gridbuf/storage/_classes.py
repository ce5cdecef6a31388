"""The storage classes of the Storage API (:mod:`gridbuf.storage`, which makes and exports them).

:class:`Storage` is the base: the documents' attributes and the device rules ("Mixing Devices",
through :mod:`gridbuf.storage._devices`). :class:`CPUStorage`, :class:`GPUStorage` and
:class:`CudaManagedGPUStorage` are :class:`gridbuf.Field` s on one side; a
:class:`SoftwareManagedGPUStorage` holds a :class:`gridbuf.MirroredField` and computes on the side
its operands lead it to. The constructors that pick a class are in :mod:`gridbuf.storage`; the
classes carry its name as their module, which is where users meet them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from .. import _gridbuf
from .. import mirrored as _mirrored
from ..field._ufuncs import _call
from .._gridbuf import FieldMeta, SyncState, layout_from_strides, whole_allocation_plan
from ._devices import _flat, _is_scalar, _lead, _on_device_value, _Operand, _to_side
from ..errors import GridbufDeviceError, GridbufTypeError
from ..field import Field
from ..mirrored import MirroredField

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
    def flags(self) -> Any:
        """The host buffer's ``flags`` (NumPy's ``ndarray.flags``)."""
        return self.to_numpy().flags

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
    def flags(self) -> None:
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
    array; :meth:`~CudaManagedGPUStorage.to_cupy` views the same memory). On the stand-in, plain host memory."""

    __slots__ = ()
    __array_priority__: ClassVar[int] = 11
    managed: ClassVar[str | None] = "cuda"

    @property
    def device(self) -> str:
        from .._gpu import managed_owner

        return "gpu" if managed_owner(self._data()) is not None else "host"

    @property
    def data(self) -> memoryview:
        """The buffer's ``data`` as seen from the host (a memoryview)."""
        return self._data().data

    @property
    def flags(self) -> Any:
        """The buffer's ``flags`` as seen from the host (NumPy's ``ndarray.flags``)."""
        return self._data().flags

    @property
    def device_data(self) -> Any:
        """The buffer's ``data`` as seen from the device (a CuPy memory pointer)."""
        return self.to_cupy().data

    def to_cupy(self) -> Any:
        """The same memory as a CuPy array (no copy); the NumPy array on the stand-in."""
        if self.device == "host":
            return self._data()
        from .._interop import as_cupy

        return as_cupy(self._data())

    def to_ndarray(self) -> Any:
        """The buffer as the device sees it, as :meth:`to_cupy`."""
        return self.to_cupy()

    def synchronize(self) -> None:
        """Wait for the GPU, so that host reads see finished device writes (nothing to copy)."""
        if self.device == "gpu":
            from .._gpu import cupy_module

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
            from .._allocation import empty_like

            managed = empty_like(result.array, managed="cuda")
            CudaManagedGPUStorage(managed, dims=result.dims, halo=result.halo)[...] = result
            return CudaManagedGPUStorage(managed, dims=result.dims, halo=result.halo, origin=result.origin)
        return _recls(result, CudaManagedGPUStorage)


class SoftwareManagedGPUStorage(Storage):
    """A host buffer and a device buffer synchronised by gridbuf: a :class:`gridbuf.MirroredField`
    with dims and a halo. Every view shares the :class:`gridbuf.SyncState` (``sync_state``)."""

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
    def flags(self) -> Any:
        """The host buffer's ``flags`` (NumPy's ``ndarray.flags``).

        They describe the buffer, not its contents, so reading them neither syncs nor marks
        either side modified.
        """
        return self._m._host.flags

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
        from .._gpu import device_plan

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


# The public classes are gridbuf.storage's (repr, pickling, documentation).
for _cls in (Storage, CPUStorage, GPUStorage, CudaManagedGPUStorage, SoftwareManagedGPUStorage):
    _cls.__module__ = "gridbuf.storage"
del _cls
