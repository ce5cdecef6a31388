"""Mixing devices (documents 000 and 001, "Choosing the Device"): which side holds an operand,
which storage handles an operation, and each operand converted to the side it computes on.

The rules are in the docstring of :mod:`gridbuf.storage`. The storage classes take part through
:class:`_Operand`, the base of :class:`gridbuf.storage.Storage`: each says whether it counts as
on the device and whether it has a host view, and the managed ones hand out a Field of either
side. This module names no storage class, so ``gridbuf.storage`` imports it and not the other
way round.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ..field._device import _on_gpu
from .._metadata import GPU_KEYS
from ..errors import GridbufDeviceError
from ..field import Field
from ..mirrored import MirroredField

_SCALARS = (int, float, complex, bool, np.generic)


class _Operand:
    """What the device rules ask of a storage (:class:`gridbuf.storage.Storage` derives from it)."""

    __slots__ = ()
    #: Memory on the device only, no host view (:class:`gridbuf.storage.GPUStorage`).
    _no_host: ClassVar[bool] = False

    if TYPE_CHECKING:  # the storage classes' own attributes
        __array_priority__: ClassVar[int]
        managed: ClassVar[str | None]

        @property
        def axes(self) -> str: ...
        @property
        def device(self) -> str | None: ...

    def _on_device(self) -> bool:
        """Whether the storage counts as on the device (001, "Choosing the Device")."""
        raise NotImplementedError

    def _side_field(self, side: str, write: bool) -> Field:
        """A managed storage (``managed`` is not None) as a Field of ``side``, made current (and
        marked modified when ``write``, where two buffers are kept)."""
        raise NotImplementedError


def _is_scalar(x: Any) -> bool:
    return x is None or isinstance(x, _SCALARS)


def _on_device_value(x: Any) -> bool:
    """Whether ``x`` counts as on the device (001, "Choosing the Device")."""
    if isinstance(x, _Operand):
        return x._on_device()
    if isinstance(x, MirroredField):
        return x.sync_state.state != "host_dirty"
    if _is_scalar(x) or isinstance(x, (np.ndarray, list, tuple)):
        return False
    if _on_gpu(x):
        return True
    iface = getattr(x, "__gt_data_interface__", None)
    return isinstance(iface, dict) and any(k in iface for k in GPU_KEYS)


def _device_only(x: Any) -> bool:
    """Whether ``x`` has memory on the device only (no host view)."""
    if isinstance(x, _Operand):
        return x._no_host
    if isinstance(x, (MirroredField, np.ndarray)) or _is_scalar(x):
        return False
    return _on_gpu(x)


def _refuse(x: Any, side: str, lead: Any) -> GridbufDeviceError:
    where = "the device" if side == "device" else "the host"
    return GridbufDeviceError(
        f"invalid operand ({_describe(x)}) for a {type(lead).__name__}: it computes on {where}, where the operand has no "
        "buffer; copy it there first (gridbuf.storage.storage(..., device=...) or to_numpy())"
    )


def _describe(x: Any) -> str:
    if isinstance(x, _Operand):
        return f"{type(x).__name__} with axes {x.axes!r}"
    return type(x).__name__


def _to_side(x: Any, side: str, lead: _Operand, write: bool) -> Any:
    """``x`` as an operand on ``side`` of ``lead``'s computation: Fields and arrays of that side,
    scalars as they are. Software-managed operands are synchronised (and marked when ``write``)."""
    if _is_scalar(x):
        return x
    if isinstance(x, (tuple, list)) and any(isinstance(v, (_Operand, MirroredField)) for v in x):
        return type(x)(_to_side(v, side, lead, write) for v in x)
    if isinstance(x, _Operand) and x.managed is not None:  # readable on both sides
        return x._side_field(side, write)
    if isinstance(x, MirroredField):
        return x.host(write=write) if side == "host" else x.device(write=write)
    if side == "host":
        if _device_only(x):
            raise _refuse(x, side, lead)
        return x
    if _device_only(x):
        return x
    # A storage of one buffer (CPU or GPU, managed None) leading never transfers.
    if lead.managed is None or not isinstance(x, (np.ndarray, Field)):
        if isinstance(x, (np.ndarray, Field)) or hasattr(x, "__array_interface__"):
            raise _refuse(x, side, lead)
        return x
    # A host array for a managed storage computing on the device: one transfer (none on the stand-in).
    if lead.device == "host":
        return x
    from .._gpu import cupy_module

    cp = cupy_module("a host operand of a device computation")
    if isinstance(x, Field):
        return Field._view(cp.asarray(x.to_numpy()), x.dims, x.halo, x.origin)
    return cp.asarray(x)


def _lead(operands: Sequence[Any]) -> _Operand | None:
    """The storage operand that handles an operation: highest ``__array_priority__``, first on ties."""
    lead: _Operand | None = None
    for x in operands:
        if isinstance(x, (tuple, list)):
            inner = _lead(x)
            x = inner if inner is not None else x
        if isinstance(x, _Operand) and (lead is None or x.__array_priority__ > lead.__array_priority__):
            lead = x
    return lead


def _flat(operands: Sequence[Any]) -> list[Any]:
    flat: list[Any] = []
    for x in operands:
        if isinstance(x, (tuple, list)) and any(isinstance(v, (_Operand, MirroredField, np.ndarray)) for v in x):
            flat.extend(x)
        else:
            flat.append(x)
    return flat
