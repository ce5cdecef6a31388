"""Type stubs of the compiled part of gridbuf."""

from collections.abc import Sequence
from typing import Any, Literal, Union

import numpy as np
import numpy.typing as npt

_Shape = Sequence[int]
_Dims = Union[str, Sequence[Any]]
_Halo = Sequence[Union[int, tuple[int, int]]]
_BaseLayout = Union[tuple[int, int, int], Literal["C", "F"]]

class Allocation:
    """The memory behind an array gridbuf allocated; it is the array's ``.base``."""

    @property
    def plan(self) -> Plan: ...
    @property
    def data_address(self) -> int: ...
    @property
    def nbytes(self) -> int: ...

class Plan:
    """Padded shape, byte strides, layout, alignment and offset of an allocation."""

    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def padded_shape(self) -> tuple[int, ...]: ...
    @property
    def strides(self) -> tuple[int, ...]: ...
    @property
    def layout(self) -> tuple[int, ...]: ...
    @property
    def dims(self) -> tuple[str, ...]: ...
    @property
    def halo(self) -> tuple[tuple[int, int], ...]: ...
    @property
    def aligned_index(self) -> tuple[int, ...]: ...
    @property
    def alignment(self) -> int: ...
    @property
    def row_alignment(self) -> int: ...
    @property
    def byte_offset(self) -> int: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def itemsize(self) -> int: ...
    @property
    def dtype(self) -> np.dtype[Any] | None: ...
    @property
    def device(self) -> Literal["cpu", "gpu"]: ...
    @property
    def backend(self) -> str: ...

class Preset:
    """A named set of allocation defaults: device, base layout and alignment."""

    @property
    def name(self) -> str: ...
    @property
    def device(self) -> Literal["cpu", "gpu"]: ...
    @property
    def base_layout(self) -> _BaseLayout: ...
    @property
    def alignment(self) -> int: ...
    def layout_map(self, dimensions: _Dims) -> tuple[int, ...]: ...

def empty(
    shape: _Shape,
    dtype: npt.DTypeLike = ...,
    *,
    backend: str | None = None,
    defaults: str | None = None,
    aligned_index: Sequence[int] | None = None,
    dimensions: _Dims | None = None,
    dims: _Dims | None = None,
    layout: Sequence[int] | None = None,
    alignment: int | None = None,
    halo: _Halo | None = None,
) -> npt.NDArray[Any]: ...
def zeros(
    shape: _Shape,
    dtype: npt.DTypeLike = ...,
    *,
    backend: str | None = None,
    defaults: str | None = None,
    aligned_index: Sequence[int] | None = None,
    dimensions: _Dims | None = None,
    dims: _Dims | None = None,
    layout: Sequence[int] | None = None,
    alignment: int | None = None,
    halo: _Halo | None = None,
) -> npt.NDArray[Any]: ...
def ones(
    shape: _Shape,
    dtype: npt.DTypeLike = ...,
    *,
    backend: str | None = None,
    defaults: str | None = None,
    aligned_index: Sequence[int] | None = None,
    dimensions: _Dims | None = None,
    dims: _Dims | None = None,
    layout: Sequence[int] | None = None,
    alignment: int | None = None,
    halo: _Halo | None = None,
) -> npt.NDArray[Any]: ...
def full(
    shape: _Shape,
    fill_value: Any,
    dtype: npt.DTypeLike = ...,
    *,
    backend: str | None = None,
    defaults: str | None = None,
    aligned_index: Sequence[int] | None = None,
    dimensions: _Dims | None = None,
    dims: _Dims | None = None,
    layout: Sequence[int] | None = None,
    alignment: int | None = None,
    halo: _Halo | None = None,
) -> npt.NDArray[Any]: ...
def from_array(
    data: npt.ArrayLike,
    dtype: npt.DTypeLike = None,
    *,
    backend: str | None = None,
    defaults: str | None = None,
    aligned_index: Sequence[int] | None = None,
    dimensions: _Dims | None = None,
    dims: _Dims | None = None,
    layout: Sequence[int] | None = None,
    alignment: int | None = None,
    halo: _Halo | None = None,
) -> npt.NDArray[Any]: ...
def plan(
    shape: _Shape,
    dtype: npt.DTypeLike = ...,
    *,
    backend: str | None = None,
    defaults: str | None = None,
    aligned_index: Sequence[int] | None = None,
    dimensions: _Dims | None = None,
    dims: _Dims | None = None,
    layout: Sequence[int] | None = None,
    alignment: int | None = None,
    halo: _Halo | None = None,
) -> Plan: ...
def presets() -> dict[str, Preset]: ...
def preset(name: str) -> Preset: ...
def register_preset(
    name: str,
    *,
    device: Literal["cpu", "gpu"],
    base_layout: _BaseLayout,
    alignment: int,
    replace: bool = False,
) -> Preset: ...
def layout_map(dimensions: _Dims, base_layout: _BaseLayout) -> tuple[int, ...]: ...

class ArrayInfo:
    """What gridbuf knows about an array's memory; keeps the memory's owner alive."""

    @property
    def ptr(self) -> int: ...
    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def strides(self) -> tuple[int, ...]: ...
    @property
    def ndim(self) -> int: ...
    @property
    def dtype(self) -> np.dtype[Any]: ...
    @property
    def typestr(self) -> str: ...
    @property
    def itemsize(self) -> int: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def device(self) -> Literal["cpu", "cuda", "cuda_host", "cuda_managed", "rocm", "rocm_host"]: ...
    @property
    def device_id(self) -> int | None: ...
    @property
    def readonly(self) -> bool: ...
    @property
    def interface(self) -> str: ...
    @property
    def stream(self) -> int | None: ...
    @property
    def owner(self) -> Any: ...

class DLPackOwner:
    """Owns a DLPack tensor taken from a producer; the base of arrays made from it."""

    @property
    def producer(self) -> Any: ...
    @property
    def version(self) -> tuple[int, int] | None: ...
    @property
    def readonly(self) -> bool: ...

def array_info(obj: Any) -> ArrayInfo: ...
def as_numpy(obj: Any) -> npt.NDArray[Any]: ...
def _extract(obj: Any) -> tuple[ArrayInfo, Any]: ...  # the binder's extract(), for tests

# -- private helpers of gridbuf.Field (gridbuf::labelled) ---------------------------------------
# A field descriptor: (dims, shape, halo, layout or None, byte strides or None, alignment,
# aligned index or None, preset name). An operand: a descriptor, a plain array's shape, or None.
_FieldDescriptor = tuple[
    tuple[str, ...],
    tuple[int, ...],
    tuple[tuple[int, int], ...],
    Union[tuple[int, ...], None],
    Union[tuple[int, ...], None],
    int,
    Union[tuple[int, ...], None],
    str,
]
_Operand = Union[_FieldDescriptor, tuple[int, ...], None]
_Alignment = tuple[Union[tuple[int, ...], None], Union[tuple[int, ...], None]]
# (dims, shape, layout, alignment, aligned_index, halo, backend, keywords for gridbuf.empty)
_OutputParams = tuple[
    tuple[str, ...],
    tuple[int, ...],
    tuple[int, ...],
    int,
    tuple[int, ...],
    tuple[tuple[int, int], ...],
    str,
    dict[str, Any],
]
_AxisArg = Union[int, str, Sequence[Union[int, str]], None]

def _broadcast(
    operands: Sequence[_Operand], out: _Operand = None, masks: int = 0
) -> tuple[tuple[str, ...], tuple[int, ...], tuple[_Alignment, ...], _OutputParams | None]: ...
def _assign(value: _Operand, dims: Sequence[str], shape: Sequence[int]) -> _Alignment: ...
def _reduce(field: _FieldDescriptor, axis: _AxisArg = None, keepdims: bool = False) -> tuple[tuple[int, ...], _OutputParams]: ...
def _concatenate(operands: Sequence[_Operand], axis: int | str) -> tuple[int, tuple[_Alignment, ...], _OutputParams]: ...
def _transpose_axes(dims: Sequence[str], axes: _AxisArg) -> tuple[int, ...]: ...
def _resolve_axis(dims: Sequence[str], axis: int | str) -> int: ...
def _match_out(out: _FieldDescriptor, dims: Sequence[str], shape: Sequence[int]) -> tuple[int, ...]: ...
def _index(
    dims: Sequence[str], shape: Sequence[int], halo: Sequence[tuple[int, int]], origin: Sequence[int], key: Any
) -> tuple[tuple[str, ...], tuple[tuple[int, int], ...], tuple[int, ...]] | None: ...

# gridbuf.gtscript: a compiled gtscript program (IR text from gridbuf.gtscript._frontend).
class GtProgram:
    @property
    def fields(self) -> list[dict[str, Any]]: ...
    @property
    def scalars(self) -> list[str]: ...
    @property
    def dtype(self) -> str: ...
    def __call__(self, *views: Any, **scalars: float) -> None: ...

def gtscript_compile(ir: str) -> GtProgram: ...
