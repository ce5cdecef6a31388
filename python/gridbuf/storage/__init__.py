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
The keywords are checked and renamed in ``gridbuf.storage._request``, and the operands of an
operation are routed to its device in ``gridbuf.storage._devices``; the classes and the
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
from typing import Any

import numpy as np

from .. import _gridbuf
from .. import mirrored as _mirrored
from .._allocation import _like_keywords
from .._gridbuf import SyncState, layout_from_strides
from ._classes import (
    CPUStorage,
    CudaManagedGPUStorage,
    GPUStorage,
    SoftwareManagedGPUStorage,
    Storage,
    _FieldStorage,
    _recls,
)
from ._devices import _device_only
from ._request import LEGACY_DEFAULTS, _on_device_keywords, _Request, _resolve, _UNSET  # noqa: F401 - LEGACY_DEFAULTS: still gridbuf.storage's
from ..errors import GridbufDeviceError, GridbufTypeError, GridbufValueError
from ..field import Field
from ..mirrored import as_mirrored

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
        With both buffers (``managed="gt4py"``): which is current, or the :class:`gridbuf.SyncState` of
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
            from .._gpu import managed_owner

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

