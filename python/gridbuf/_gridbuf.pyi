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
