"""Types the Field operations share, for the type checker only: what a Field stores about its
allocation, and ``FieldLike``, the part of ``gridbuf.field.Field`` the operation modules use.

The operation modules (``_broadcast``, ``_reductions``, ``_functions``, ``_ufuncs``) are imported
by the package, which defines the Field class; they receive the class from it once it exists
(a module attribute ``Field``, bound by the package) and are typed against this protocol, so
that no module of the package imports the package back, not even for type checking. Only the
type checker imports this module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from typing import TypeAlias

    import numpy as np

    from .._gridbuf import FieldDescriptor, FieldMeta

    #: What a Field stores about its allocation: (backend, layout or None, row alignment,
    #: aligned index or None).
    _Storage: TypeAlias = tuple[str, tuple[int, ...] | None, int, tuple[int, ...] | None]


class FieldLike(Protocol):
    """The attributes and methods of ``gridbuf.field.Field`` that its operations use."""

    _array: Any
    _meta: FieldMeta
    _nd: Any
    _storage: _Storage | None
    _desc: FieldDescriptor | None
    _kid: int | None

    def _data(self) -> Any: ...
    def _describe(self) -> FieldDescriptor: ...
    def _key(self) -> int: ...
    def _storage_params(self) -> _Storage: ...
    def transpose(self, *axes: Any) -> FieldLike: ...
    def copy(self) -> FieldLike: ...

    @property
    def dims(self) -> tuple[str, ...]: ...
    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def dtype(self) -> np.dtype[Any]: ...
    @property
    def ndim(self) -> int: ...
