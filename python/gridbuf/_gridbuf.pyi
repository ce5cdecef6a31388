"""Type stubs of the compiled part of gridbuf."""

from collections.abc import Callable, Sequence
from typing import Any, Literal, Union, final, overload

import numpy as np
import numpy.typing as npt

# PyO3 lists every name the module adds, in the order lib.rs adds them.
__all__ = [
    "GtProgram",
    "gtscript_compile",
    "SyncState",
    "GridbufError",
    "GridbufValueError",
    "GridbufTypeError",
    "GridbufOverflowError",
    "GridbufMemoryError",
    "UnknownPresetError",
    "GridbufDeviceError",
    "empty",
    "zeros",
    "ones",
    "full",
    "from_array",
    "plan",
    "presets",
    "preset",
    "register_preset",
    "layout_map",
    "_broadcast",
    "_assign",
    "_reduce",
    "_concatenate",
    "_transpose_axes",
    "_resolve_axis",
    "_match_out",
    "_index",
    "native_stencil",
    "native_kernel_names",
    "python_stencil",
    "Stencil",
    "BoundStencil",
    "Allocation",
    "Plan",
    "Preset",
    "array_info",
    "as_numpy",
    "_extract",
    "ArrayInfo",
    "DLPackOwner",
    "Acquired",
    "BlockDecomposition",
    "FieldDescriptor",
    "FieldMeta",
    "HaloExchangePlan",
    "OutputParams",
    "data_interface",
    "data_interface_entry",
    "data_interface_for",
    "default_dims",
    "field_labels",
    "get_dims",
    "get_origin",
    "layout_from_strides",
    "normalize_dims",
    "normalize_halo",
    "normalize_origin",
    "whole_allocation_plan",
    "machine_info",
]

_Shape = Sequence[int]
_Dims = Union[str, Sequence[Any]]
_Halo = Sequence[Union[int, tuple[int, int]]]
_BaseLayout = Union[tuple[int, int, int], Literal["C", "F"]]

# -- exception classes (re-exported by gridbuf.errors, where they are documented) -------------

class GridbufError(Exception):
    """Base class of every error gridbuf raises."""

class GridbufValueError(GridbufError, ValueError):
    """A parameter has an allowed type but a value that is not valid."""

class GridbufTypeError(GridbufError, TypeError):
    """A parameter has a type gridbuf cannot use."""

class GridbufOverflowError(GridbufError, OverflowError):
    """A size, stride or offset does not fit the address space."""

class GridbufMemoryError(GridbufError, MemoryError):
    """The memory for an allocation could not be obtained."""

class UnknownPresetError(GridbufValueError, RuntimeError):
    """A preset (backend) name that is not registered; the message lists the valid names."""

class GridbufDeviceError(GridbufError, RuntimeError):
    """A device (GPU) or its array library (CuPy) is needed but not available."""

# -- allocation ---------------------------------------------------------------------------------

@final
class Allocation:
    """The memory behind an array gridbuf allocated; it is the array's ``.base``."""

    @property
    def plan(self) -> Plan: ...
    @property
    def data_address(self) -> int: ...
    @property
    def nbytes(self) -> int: ...

@final
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

@final
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
    dtype: npt.DTypeLike | None = None,
    *,
    backend: str | None = None,
    defaults: str | None = None,
    aligned_index: Sequence[int] | None = None,
    dimensions: _Dims | None = None,
    dims: _Dims | None = None,
    layout: Sequence[int] | None = None,
    alignment: int | None = None,
    halo: _Halo | None = None,
    managed: str | None = None,
) -> npt.NDArray[Any]: ...
def zeros(
    shape: _Shape,
    dtype: npt.DTypeLike | None = None,
    *,
    backend: str | None = None,
    defaults: str | None = None,
    aligned_index: Sequence[int] | None = None,
    dimensions: _Dims | None = None,
    dims: _Dims | None = None,
    layout: Sequence[int] | None = None,
    alignment: int | None = None,
    halo: _Halo | None = None,
    managed: str | None = None,
) -> npt.NDArray[Any]: ...
def ones(
    shape: _Shape,
    dtype: npt.DTypeLike | None = None,
    *,
    backend: str | None = None,
    defaults: str | None = None,
    aligned_index: Sequence[int] | None = None,
    dimensions: _Dims | None = None,
    dims: _Dims | None = None,
    layout: Sequence[int] | None = None,
    alignment: int | None = None,
    halo: _Halo | None = None,
    managed: str | None = None,
) -> npt.NDArray[Any]: ...
def full(
    shape: _Shape,
    fill_value: Any,
    dtype: npt.DTypeLike | None = None,
    *,
    backend: str | None = None,
    defaults: str | None = None,
    aligned_index: Sequence[int] | None = None,
    dimensions: _Dims | None = None,
    dims: _Dims | None = None,
    layout: Sequence[int] | None = None,
    alignment: int | None = None,
    halo: _Halo | None = None,
    managed: str | None = None,
) -> npt.NDArray[Any]: ...
def from_array(
    data: npt.ArrayLike,
    dtype: npt.DTypeLike | None = None,
    *,
    backend: str | None = None,
    defaults: str | None = None,
    aligned_index: Sequence[int] | None = None,
    dimensions: _Dims | None = None,
    dims: _Dims | None = None,
    layout: Sequence[int] | None = None,
    alignment: int | None = None,
    halo: _Halo | None = None,
    managed: str | None = None,
) -> npt.NDArray[Any]: ...
def plan(
    shape: _Shape,
    dtype: npt.DTypeLike | None = None,
    *,
    backend: str | None = None,
    defaults: str | None = None,
    aligned_index: Sequence[int] | None = None,
    dimensions: _Dims | None = None,
    dims: _Dims | None = None,
    layout: Sequence[int] | None = None,
    alignment: int | None = None,
    halo: _Halo | None = None,
    managed: str | None = None,
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

@final
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

@final
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
# A field descriptor is a FieldDescriptor, a result's parameters an OutputParams (both below).
# An operand: a descriptor, a plain array's shape, or None.
_FieldDescriptor = FieldDescriptor
_Operand = Union[_FieldDescriptor, tuple[int, ...], None]
_Alignment = tuple[Union[tuple[int, ...], None], Union[tuple[int, ...], None]]
_OutputParams = OutputParams
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

# -- stencils (gridbuf::binding) ----------------------------------------------------------------
# A field as Stencil.fields lists it: name, dtype name, dims, extent per dim, intent.
_FieldSummary = dict[str, Any]

@final
class Stencil:
    """A stencil: a signature, a kernel and the cache of checked calls."""

    def __call__(
        self,
        *args: Any,
        origin: Any = None,
        domain: Sequence[int] | None = None,
        validate_args: bool = True,
        resolved_into: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None: ...
    def bind(
        self,
        *args: Any,
        origin: Any = None,
        domain: Sequence[int] | None = None,
        validate_args: bool = True,
        **kwargs: Any,
    ) -> BoundStencil: ...
    def resolve(
        self,
        *args: Any,
        origin: Any = None,
        domain: Sequence[int] | None = None,
        validate_args: bool = True,
    ) -> tuple[tuple[int, ...], dict[str, tuple[int, ...]]]: ...
    @property
    def name(self) -> str: ...
    @property
    def fields(self) -> list[_FieldSummary]: ...
    @property
    def scalars(self) -> list[str]: ...
    @property
    def cache_size(self) -> int: ...

@final
class BoundStencil:
    """A stencil call checked once, to be run again on the same arrays."""

    def __call__(self) -> None: ...
    @property
    def domain(self) -> list[int]: ...

def native_stencil(name: str) -> Stencil: ...
def native_kernel_names() -> list[str]: ...
def python_stencil(
    name: str,
    func: Callable[..., Any],
    fields: list[dict[str, Any]],
    scalars: Sequence[str],
    device: str = "cpu",
    warnings: Literal["gridbuf", "gt4py"] = "gridbuf",
) -> Stencil: ...

# -- distributed fields (gridbuf.distributed) ----------------------------------------------------
_Pair = tuple[int, int]

@final
class BlockDecomposition:
    """Block arithmetic of a decomposition: blocks, owners, process coordinates, neighbours."""

    def __new__(
        cls, names: Sequence[str], global_shape: Sequence[int], procs: Sequence[int], periodic: Sequence[bool]
    ) -> BlockDecomposition: ...
    @property
    def size(self) -> int: ...
    def block(self, dim: int, coord: int) -> tuple[int, int]: ...
    def owner(self, dim: int, index: int) -> int: ...
    def coords(self, rank: int) -> list[int]: ...
    def shift(self, coords: Sequence[int], offset: Sequence[int]) -> int | None: ...
    def neighbours(self, rank: int, corners: bool) -> list[tuple[list[int], int]]: ...

@final
class HaloExchangePlan:
    """The halo exchange of a list of fields on one process: message sizes, buffers, packing."""

    def __new__(
        cls,
        fields: Sequence[Any],
        specs: Sequence[tuple[Sequence[int | None], Sequence[_Pair], Sequence[_Pair]]],
        names: Sequence[str],
        global_shape: Sequence[int],
        procs: Sequence[int],
        periodic: Sequence[bool],
        rank: int,
        corners: bool,
    ) -> HaloExchangePlan: ...
    @property
    def peers(self) -> list[int]: ...
    @property
    def send_bytes(self) -> list[int]: ...
    @property
    def recv_bytes(self) -> list[int]: ...
    @property
    def send_buffers(self) -> list[npt.NDArray[np.uint8]]: ...
    @property
    def recv_buffers(self) -> list[npt.NDArray[np.uint8]]: ...
    @property
    def stagger(self) -> list[list[int]]: ...
    @property
    def nregions(self) -> int: ...
    def pack(self, index: int | None = None, threads: bool = False) -> None: ...
    def unpack(self, index: int | None = None, threads: bool = False) -> None: ...
    def copy_local(self, index: int) -> None: ...

# ---------------------------------------------------------------------------------------------
# The single metadata path (crates/gridbuf-python/src/metadata.rs): dims, origin, halo and the
# data interface, read in one place; the labels of a Field.
# ---------------------------------------------------------------------------------------------
@final
class FieldMeta:
    """The labels of a ``gridbuf.Field`` (dims, halo, origin); frozen, hashable."""

    def __new__(
        cls, dims: Sequence[str], halo: Sequence[tuple[int, int]], origin: Sequence[int]) -> FieldMeta: ...
    @property
    def dims(self) -> tuple[str, ...]: ...
    @property
    def halo(self) -> tuple[tuple[int, int], ...]: ...
    @property
    def origin(self) -> tuple[int, ...]: ...
    @property
    def halo_lower(self) -> list[int]: ...
    def __hash__(self) -> int: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __reduce__(self) -> tuple[Any, tuple[tuple[str, ...], tuple[tuple[int, int], ...], tuple[int, ...]]]: ...

@final
class Acquired:
    """Context manager: the data-interface callbacks of fields around a block."""

    def __new__(
        cls, fields: Any, outputs: Any, device: str = "cpu") -> Acquired: ...
    def __enter__(self) -> None: ...
    def __exit__(self, exc_type: Any = None, _exc: Any = None, _tb: Any = None) -> bool: ...

def normalize_dims(dims: Any, ndim: int | None, source: str) -> tuple[str, ...]: ...
def default_dims(ndim: int) -> tuple[str, ...]: ...
def get_dims(obj: Any, annotation: Any = None) -> tuple[str, ...] | None: ...
def get_origin(obj: Any) -> tuple[int, ...] | None: ...
def normalize_origin(origin: Any, shape: Sequence[int] | None, source: str) -> tuple[int, ...]: ...
def normalize_halo(halo: Any, shape: Sequence[int], dims: Sequence[str] | None = None) -> tuple[tuple[int, int], ...]: ...
def data_interface(obj: Any) -> Any: ...
def data_interface_entry(obj: Any, gpu: bool = False) -> Any: ...
@overload
def data_interface_for(
    array: Any, dims: tuple[str, ...], halo: Any = None, strict: bool = False, *, host_fallback: Literal[True]
) -> dict[Any, dict[str, Any]]: ...
@overload
def data_interface_for(
    array: Any, dims: tuple[str, ...], halo: Any = None, strict: bool = False, host_fallback: bool = False
) -> dict[Any, dict[str, Any]] | None: ...
def whole_allocation_plan(array: Any) -> Plan | None: ...
def field_labels(
    array: Any, shape: Sequence[int], dims: Any = None, halo: Any = None, origin: Any = None
) -> FieldMeta: ...
def layout_from_strides(strides: Sequence[int]) -> tuple[int, ...]: ...

@final
class FieldDescriptor:
    """What the labelled-array functions read of a Field; frozen, hashable."""

    def __new__(
        cls,
        dims: tuple[str, ...],
        shape: tuple[int, ...],
        halo: tuple[tuple[int, int], ...],
        layout: tuple[int, ...] | None,
        strides: tuple[int, ...] | None,
        alignment: int,
        aligned_index: tuple[int, ...] | None,
        backend: str,
    ) -> FieldDescriptor: ...
    @property
    def dims(self) -> tuple[str, ...]: ...
    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def halo(self) -> tuple[tuple[int, int], ...]: ...
    @property
    def layout(self) -> tuple[int, ...] | None: ...
    @property
    def strides(self) -> tuple[int, ...] | None: ...
    @property
    def alignment(self) -> int: ...
    @property
    def aligned_index(self) -> tuple[int, ...] | None: ...
    @property
    def backend(self) -> str: ...
    def __hash__(self) -> int: ...
    def __eq__(self, other: object, /) -> bool: ...

@final
class OutputParams:
    """The parameters of a result (GDP-3's Output Storage Parameters); frozen."""

    @property
    def dims(self) -> tuple[str, ...]: ...
    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def layout(self) -> tuple[int, ...]: ...
    @property
    def alignment(self) -> int: ...
    @property
    def aligned_index(self) -> tuple[int, ...]: ...
    @property
    def halo(self) -> tuple[tuple[int, int], ...]: ...
    @property
    def backend(self) -> str: ...
    @property
    def kwargs(self) -> dict[str, Any]: ...

# -- mirrored fields: the shared sync state (crates/gridbuf-python/src/sync_state.rs) ----------

@final
class SyncState:
    SYNC_CLEAN: str
    SYNC_HOST_DIRTY: str
    SYNC_DEVICE_DIRTY: str
    def __new__(cls, state: str | None = None) -> SyncState: ...
    @property
    def state(self) -> str: ...
    @property
    def host_open(self) -> int: ...
    @property
    def device_open(self) -> int: ...
    @property
    def host_to_device(self) -> int: ...
    @property
    def device_to_host(self) -> int: ...
    @property
    def transfers(self) -> int: ...
    def is_current(self, side: str) -> bool: ...
    def acquire(self, side: str, copy: Callable[[str, str], Any]) -> str | None: ...
    def touch(self, side: str) -> None: ...
    def release(self, side: str) -> None: ...
    def mark_modified(self, side: str) -> None: ...
    def sync(self, copy: Callable[[str, str], Any]) -> str | None: ...
    def set_state(self, state: str) -> None: ...

# gridbuf.gtscript: a compiled gtscript program (IR text from gridbuf.gtscript._frontend).
@final
class GtProgram:
    @property
    def fields(self) -> list[dict[str, Any]]: ...
    @property
    def scalars(self) -> list[str]: ...
    @property
    def scalar_dtypes(self) -> list[str]: ...
    @property
    def min_k(self) -> int: ...
    @property
    def tier_two(self) -> str: ...
    def wait_tier_two(self, timeout: float) -> str: ...
    def prepare(self, order: tuple[int, ...]) -> None: ...
    def __call__(self, *views: Any, **scalars: float | int | bool) -> None: ...

def gtscript_compile(ir: str) -> GtProgram: ...

def machine_info() -> dict[str, Any]: ...
