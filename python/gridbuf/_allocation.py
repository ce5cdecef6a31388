"""The ``*_like`` constructors: a new array with the parameters of an existing one."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _gridbuf
from ._gridbuf import layout_from_strides, whole_allocation_plan
from .errors import GridbufTypeError

#: Keywords that, when overridden, invalidate an inherited layout or alignment.
_LAYOUT_SOURCES = ("backend", "defaults", "dims", "dimensions", "layout")
_ALIGNMENT_SOURCES = ("backend", "defaults", "alignment")


def _like_keywords(a: Any, dtype: Any, overrides: dict[str, Any]) -> tuple[Any, Any, dict[str, Any]]:
    """Shape, dtype and allocation keywords that reproduce ``a``, with ``overrides`` applied."""
    if not hasattr(a, "shape") or not hasattr(a, "dtype"):
        try:
            a = np.asarray(a)
        except Exception as exc:  # noqa: BLE001 - any failure means "not array-like"
            raise GridbufTypeError(f"invalid type for a ({type(a).__name__}): expected an array-like ({exc})") from None
    if type(a).__module__.startswith("xarray.") and _on_device(getattr(a, "data", None)):
        a = a.data  # a DataArray holding a device array: that array's parameters
    shape = tuple(a.shape)
    inherited: dict[str, Any] = {}
    owner = getattr(a, "base", None)
    template_plan: Any = None
    if _on_device(a):
        from ._gpu import device_plan as _device_plan

        template_plan = _device_plan(a)
        if template_plan is None:  # a foreign device array: stay on the device, keep its stride order
            inherited = {"backend": "gt:gpu", "layout": layout_from_strides(a.strides)}
    if template_plan is None and isinstance(owner, _gridbuf.Allocation):
        template_plan = whole_allocation_plan(a)  # a whole host allocation: its plan, the same way
    if template_plan is not None:
        p = template_plan
        inherited = {
            "backend": p.backend,
            "dims": p.dims,
            "layout": p.layout,
            "alignment": p.row_alignment,
            "aligned_index": p.aligned_index,
            "halo": p.halo,
        }
    elif isinstance(a, np.ndarray) and a.ndim > 0:
        # A foreign array: keep its stride order, the rest takes the defaults.
        inherited = {"layout": layout_from_strides(a.strides)}
    new_shape = overrides.pop("shape", shape)
    if tuple(new_shape) != shape:
        for key in ("dims", "layout", "aligned_index", "halo"):
            inherited.pop(key, None)
    if any(k in overrides for k in _LAYOUT_SOURCES):
        inherited.pop("layout", None)
    if any(k in overrides for k in _ALIGNMENT_SOURCES):
        inherited.pop("alignment", None)
    if "defaults" in overrides:
        inherited.pop("backend", None)
    if "dimensions" in overrides:
        inherited.pop("dims", None)
    if any(k in overrides for k in ("aligned_index", "halo")):
        inherited.pop("aligned_index", None)
    inherited.update(overrides)
    return new_shape, (a.dtype if dtype is None else dtype), inherited


def _on_device(a: Any) -> bool:
    """Whether ``a`` is a device array (its type has the CUDA array interface, not NumPy's)."""
    return (
        a is not None
        and not isinstance(a, np.ndarray)
        and getattr(type(a), "__cuda_array_interface__", None) is not None
        and getattr(type(a), "__array_interface__", None) is None
    )


def empty_like(a: Any, dtype: Any = None, **overrides: Any) -> np.ndarray:
    """Allocate an uninitialised array with the shape, dtype and parameters of ``a``.

    Parameters
    ----------
    a : array_like
        Template. For an array gridbuf allocated (also a CuPy array of a GPU preset), its
        layout, alignment, aligned index, dims, halo and preset are reused; for another array
        its shape, dtype and stride order, and a device array (CuPy, or a DataArray holding
        one) gives a device array (preset ``"gt:gpu"``).
    dtype : dtype_like, optional
        Overrides the dtype of ``a``.
    **overrides
        Any keyword of :func:`gridbuf.empty` (and ``shape``); overriding the preset, dims or
        layout recomputes the layout, overriding the shape drops the per-axis parameters.

    Returns
    -------
    numpy.ndarray
        A new array whose memory is owned by a :class:`gridbuf.Allocation`.
    """
    shape, dtype, kw = _like_keywords(a, dtype, overrides)
    return _gridbuf.empty(shape, dtype, **kw)


def zeros_like(a: Any, dtype: Any = None, **overrides: Any) -> np.ndarray:
    """Allocate an array of zeros with the shape, dtype and parameters of ``a``.

    Parameters
    ----------
    a : array_like
        Template (see :func:`empty_like`).
    dtype : dtype_like, optional
        Overrides the dtype of ``a``.
    **overrides
        Any keyword of :func:`gridbuf.zeros` (and ``shape``).

    Returns
    -------
    numpy.ndarray
        A new zero-filled array.
    """
    shape, dtype, kw = _like_keywords(a, dtype, overrides)
    return _gridbuf.zeros(shape, dtype, **kw)


def ones_like(a: Any, dtype: Any = None, **overrides: Any) -> np.ndarray:
    """Allocate an array of ones with the shape, dtype and parameters of ``a``.

    Parameters
    ----------
    a : array_like
        Template (see :func:`empty_like`).
    dtype : dtype_like, optional
        Overrides the dtype of ``a``.
    **overrides
        Any keyword of :func:`gridbuf.ones` (and ``shape``).

    Returns
    -------
    numpy.ndarray
        A new array filled with ones.
    """
    shape, dtype, kw = _like_keywords(a, dtype, overrides)
    return _gridbuf.ones(shape, dtype, **kw)


def full_like(a: Any, fill_value: Any, dtype: Any = None, **overrides: Any) -> np.ndarray:
    """Allocate an array filled with ``fill_value`` with the shape, dtype and parameters of ``a``.

    Parameters
    ----------
    a : array_like
        Template (see :func:`empty_like`).
    fill_value : scalar
        Value of every element, converted to the dtype by NumPy's rules.
    dtype : dtype_like, optional
        Overrides the dtype of ``a``.
    **overrides
        Any keyword of :func:`gridbuf.full` (and ``shape``).

    Returns
    -------
    numpy.ndarray
        A new filled array.
    """
    shape, dtype, kw = _like_keywords(a, dtype, overrides)
    return _gridbuf.full(shape, fill_value, dtype, **kw)
