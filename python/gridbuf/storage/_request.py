"""The keywords of the Storage API's constructors (``gridbuf.storage``), checked and renamed.

A call names its buffers by the documents' keywords (GDP-3, documents 000 and 001): ``axes``,
``defaults``, ``device``, ``halo``, ``layout``, ``managed``, ``alignment`` and
``aligned_index``. :func:`_resolve` checks them, renames them to gridbuf's allocation keywords
(``axes`` -> ``dims``, ``defaults`` -> ``backend``) and returns them as a :class:`_Request`
together with the device and the managed kind, which decide the storage class. The decisions
behind the rules are in the docstring of :mod:`gridbuf.storage`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _gridbuf
from .. import mirrored as _mirrored
from .._metadata import default_dims, normalize_dims
from ..errors import GridbufError, GridbufTypeError, GridbufValueError, UnknownPresetError

#: The documents' backend names and GT4Py's names for them since.
LEGACY_DEFAULTS = {"gtx86": "gt:cpu_kfirst", "gtmc": "gt:cpu_ifirst", "gtcuda": "gt:gpu"}
_KEYWORDS = ("axes", "dims", "defaults", "backend", "device", "halo", "layout", "managed", "alignment", "aligned_index")
_UNSET: Any = object()


class _Request:
    """The documents' keywords resolved: gridbuf allocation keywords, device and managed."""

    __slots__ = ("shape", "kw", "device", "managed")

    def __init__(self, shape: Any, kw: dict[str, Any], device: str | None, managed: str | None) -> None:
        self.shape, self.kw, self.device, self.managed = shape, kw, device, managed


def _check_device(device: Any) -> str | None:
    if device is None or device == "cpu":
        return None
    if device in ("gpu", "host"):
        return str(device)
    raise GridbufValueError(
        f"invalid device {device!r}: expected None (host memory only), 'gpu' (a CuPy buffer on the GPU) or 'host' "
        "(a host buffer standing in for the device)"
    )


def _check_managed(managed: Any, device: str | None) -> str | None:
    if managed is _UNSET:
        return "gt4py" if device is not None else None
    if managed is False:
        managed = None
    if managed is not None and managed not in ("gt4py", "cuda"):
        raise GridbufValueError(f"invalid managed {managed!r}: expected None, 'gt4py' (GT4Py-synchronised) or 'cuda' (CUDA unified memory)")
    if managed is not None and device is None:
        raise GridbufValueError(
            f"invalid managed {managed!r} with device=None: there is no device buffer to manage; pass device='gpu' "
            "(or the stand-in device='host'), or leave managed out"
        )
    return managed


def _check_defaults(defaults: Any) -> str | None:
    if defaults is None:
        return None
    if not isinstance(defaults, str):
        raise GridbufTypeError(f"invalid type for defaults ({type(defaults).__name__}): expected a preset name such as 'gt:cpu_ifirst', 'C' or 'F'")
    name = LEGACY_DEFAULTS.get(defaults, defaults)
    try:
        _gridbuf.preset(name)
    except UnknownPresetError as exc:
        raise UnknownPresetError(f"invalid defaults {defaults!r}: {exc}") from None
    return name


def _pick(values: Any, axes: tuple[str, ...] | None) -> Any:
    """Document 000: a field of fewer than 3 axes may be given 3 entries in I, J, K order."""
    if values is None or axes is None or isinstance(values, (int, np.integer)):
        return values
    vals = tuple(values)
    if len(vals) == 3 and len(axes) < 3 and all(a in "IJK" for a in axes):
        return tuple(vals["IJK".index(a)] for a in axes)
    return values


def _check_layout(layout: Any, dims: tuple[str, ...]) -> Any:
    if layout is None:
        return None
    if callable(layout):
        layout = layout("".join(dims))
    if isinstance(layout, str):
        if sorted(layout) != ["I", "J", "K"]:
            raise GridbufValueError(
                f"invalid layout {layout!r}: expected the axis names I, J, K from the largest stride to the smallest "
                "(such as 'KJI' for I unit stride), or a layout map of ints"
            )
        base = (layout.index("I"), layout.index("J"), layout.index("K"))
        try:
            return _gridbuf.layout_map(dims, base)
        except GridbufError as exc:
            raise type(exc)(f"invalid layout {layout!r} for axes {''.join(dims)!r}: {exc}") from None
    try:
        return tuple(int(v) for v in layout)
    except (TypeError, ValueError):
        raise GridbufTypeError(f"invalid type for layout ({layout!r}): expected a string of axis names or a sequence of ints") from None


def _resolve(shape: Any, kwargs: dict[str, Any], ndim: int | None = None) -> _Request:
    """Check the documents' keywords and turn them into gridbuf's allocation keywords."""
    unknown = [k for k in kwargs if k not in _KEYWORDS]
    if unknown:
        raise GridbufTypeError(f"invalid keyword {unknown[0]!r}: expected one of {', '.join(_KEYWORDS)}")
    kw = dict(kwargs)
    device = _check_device(kw.pop("device", None))
    managed = _check_managed(kw.pop("managed", _UNSET), device)
    axes, dims = kw.pop("axes", None), kw.pop("dims", None)
    if axes is not None and dims is not None:
        raise GridbufTypeError(f"invalid axes {axes!r} with dims {dims!r}: they are the same keyword, give one")
    axes = dims if axes is None else axes
    defaults, backend = kw.pop("defaults", None), kw.pop("backend", None)
    if defaults is not None and backend is not None:
        raise GridbufTypeError(f"invalid defaults {defaults!r} with backend {backend!r}: they are the same keyword, give one")
    defaults = _check_defaults(backend if defaults is None else defaults)
    out: dict[str, Any] = {}
    names: tuple[str, ...] | None = None
    if axes is not None:
        if isinstance(axes, str) and shape is not None and len(tuple(shape)) == 3 and 0 < len(axes) < 3:
            shape = _pick(shape, tuple(axes))
        n = len(tuple(shape)) if shape is not None else ndim
        names = tuple(normalize_dims(axes, n, "axes"))
        out["dims"] = names
        shape = _pick(shape, names)
    if defaults is None and device == "gpu":
        defaults = "gt:gpu"
    if defaults is not None:
        out["backend"] = defaults
    for key in ("aligned_index", "halo"):
        if kw.get(key) is not None:
            out[key] = _pick(kw[key], names)
    if kw.get("alignment") is not None:
        out["alignment"] = kw["alignment"]
    if kw.get("layout") is not None:
        n = len(tuple(shape)) if shape is not None else (ndim or 0)
        out["layout"] = _check_layout(kw["layout"], names if names is not None else tuple(default_dims(n)))
    return _Request(shape, out, device, managed)


def _on_device_keywords(shape: Any, dtype: Any, kw: dict[str, Any], device: str) -> dict[str, Any]:
    """Keywords that put a buffer with the plan of ``kw`` on ``device`` ("gpu" or the stand-in)."""
    plan = _gridbuf.plan(shape, dtype, **kw)
    if device == "gpu":
        return kw if plan.device == "gpu" else {**_mirrored._host_twin_keywords(plan), "backend": "gt:gpu"}
    return kw if plan.device != "gpu" else _mirrored._host_twin_keywords(plan)
