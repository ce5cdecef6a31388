"""Stencil definitions: field annotations (``gb.Field[dtype, dims, ...]``) and the
``gb.stencil`` decorator that puts gridbuf's argument binder in front of a Python kernel."""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from . import _gridbuf
from ._metadata import normalize_dims
from .errors import GridbufTypeError, GridbufValueError

__all__ = ["Alignment", "DefaultParameters", "Extent", "FieldAnnotation", "LayoutMap", "stencil"]


@dataclass(frozen=True)
class Extent:
    """The halo a kernel reads around the compute domain, per Cartesian axis.

    Each of ``i``, ``j``, ``k`` is an int (the same below and above) or a ``(lower, upper)``
    pair; ``Extent(i=1, j=1)`` reads one point on each side horizontally.
    """

    i: int | tuple[int, int] = 0
    j: int | tuple[int, int] = 0
    k: int | tuple[int, int] = 0

    def pair(self, axis: str) -> tuple[int, int]:
        """The (lower, upper) extent along ``"I"``, ``"J"`` or ``"K"``."""
        v = getattr(self, axis.lower())
        lo, hi = (v, v) if isinstance(v, int) else tuple(v)
        if not all(isinstance(x, int) and x >= 0 for x in (lo, hi)):
            raise GridbufValueError(f"invalid Extent {self!r}: extents are non-negative ints or (lower, upper) pairs")
        return lo, hi


class _Marker:
    """``Name[value]`` notation of source 000 for the optional annotation parameters."""

    key = ""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __class_getitem__(cls, value: Any) -> _Marker:
        return cls(value)

    def __repr__(self) -> str:
        return f"{type(self).__name__}[{self.value!r}]"


class LayoutMap(_Marker):
    """``LayoutMap[(2, 1, 0)]``: the layout the kernel prefers (a mismatch only warns)."""

    key = "layout"


class Alignment(_Marker):
    """``Alignment[64]``: the alignment in bytes the kernel prefers (a mismatch only warns)."""

    key = "alignment"


class DefaultParameters(_Marker):
    """``DefaultParameters["gt:cpu_ifirst"]``: layout and alignment of a preset (or "C"/"F")."""

    key = "defaults"


@dataclass(frozen=True)
class FieldAnnotation:
    """A field parameter of a stencil: dtype, dims, extent, intent, data-dim shape and the
    layout and alignment the kernel prefers."""

    dtype: np.dtype[Any]
    dims: str = "IJK"
    extent: Extent = Extent()
    intent: str | None = None
    data_shape: tuple[int, ...] | None = None
    layout: tuple[int, ...] | None = None
    alignment: int | None = None

    @classmethod
    def from_params(cls, params: Any) -> FieldAnnotation:
        """Build from the contents of ``Field[...]``: dtype first, then in any order a dims
        string, an Extent, an intent ("in", "out", "inout"), a tuple of data-dim extents,
        ``LayoutMap[...]``, ``Alignment[...]`` and ``DefaultParameters[...]``."""
        params = params if isinstance(params, tuple) else (params,)
        try:
            dtype = np.dtype(params[0])
        except TypeError:
            raise GridbufTypeError(f"invalid type for Field dtype ({params[0]!r}): expected a NumPy dtype") from None
        ann = cls(dtype)
        defaults = None
        for p in params[1:]:
            if isinstance(p, str) and p in ("in", "out", "inout"):
                ann = replace(ann, intent=p)
            elif isinstance(p, str):
                ann = replace(ann, dims="".join(normalize_dims(p, None, "Field dims")))
            elif isinstance(p, Extent):
                ann = replace(ann, extent=p)
            elif isinstance(p, tuple) and all(isinstance(x, int) for x in p):
                ann = replace(ann, data_shape=p)
            elif isinstance(p, LayoutMap):
                ann = replace(ann, layout=tuple(p.value))
            elif isinstance(p, Alignment):
                ann = replace(ann, alignment=int(p.value))
            elif isinstance(p, DefaultParameters):
                defaults = p.value
            else:
                raise GridbufTypeError(f"invalid Field annotation parameter {p!r}")
        if defaults is not None:
            preset = _gridbuf.preset(defaults)
            if ann.layout is None:
                ann = replace(ann, layout=preset.layout_map(ann.dims))
            if ann.alignment is None and preset.alignment > 1:
                ann = replace(ann, alignment=preset.alignment)
        return ann

    def describe(self, name: str, intent: str) -> dict[str, Any]:
        """The field description the Rust binder takes."""
        extent = [self.extent.pair(d) if d in "IJK" else (0, 0) for d in _split_dims(self.dims)]
        return {
            "name": name,
            "dtype": self.dtype,
            "dims": self.dims,
            "extent": extent,
            "intent": self.intent or intent,
            "data_shape": self.data_shape,
            "layout": self.layout,
            "alignment": self.alignment,
        }


def _split_dims(dims: str) -> tuple[str, ...]:
    return tuple(dims)


def _written_names(func: Callable[..., Any]) -> tuple[set[str], set[str]]:
    """Names assigned through a subscript (``out[...] = ...``) and names read anywhere."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    except (OSError, TypeError, SyntaxError):
        return set(), set()
    written: set[str] = set()
    read: set[str] = set()
    # The Name under a subscript assignment target (`out` in `out[...] = x`) is not a read.
    # Neither is reading an attribute such as `out.shape`.
    store_bases = {
        id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store)
    } | {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
            if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Subscript) and isinstance(node.target.value, ast.Name):
                read.add(node.target.value.id)
        for t in targets:
            if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
                written.add(t.value.id)
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and isinstance(node.value, ast.Name):
            read.add(node.value.id)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and id(node) not in store_bases:
            read.add(node.id)
    return written, read


def stencil(func: Callable[..., Any] | None = None, *, name: str | None = None, device: str = "cpu") -> Any:
    """Turn a Python function into a stencil with gridbuf's argument binder in front.

    Positional parameters annotated ``gb.Field[dtype, dims, ...]`` are fields; keyword-only
    parameters are scalars. At each call every field arrives as a NumPy view in the kernel's
    dims order covering the domain widened by the field's extent (index 0 of an input with
    extent 1 is one point before the domain); outputs cover exactly the domain. A field the body
    assigns through a subscript (``out[...] = ...``) is an output (``"inout"`` if it is also
    read), the others are inputs, unless the annotation gives the intent.

    Parameters
    ----------
    func : callable
        The kernel.
    name : str, optional
        Name used in messages; default the function's name.
    device : {"cpu", "gpu"}
        Where the kernel runs (which memory its arguments must be in).

    Returns
    -------
    Stencil
        Callable as ``st(*fields, origin=None, domain=None, validate_args=True, **scalars)``,
        with ``st.bind(...)`` for repeated calls on the same arrays.
    """
    if func is None:
        return lambda f: stencil(f, name=name, device=device)
    try:
        annotations = inspect.get_annotations(func, eval_str=True)
    except Exception as exc:  # noqa: BLE001 - report any failure to evaluate annotations
        raise GridbufTypeError(f"invalid stencil {func.__name__!r}: its annotations cannot be evaluated ({exc})") from None
    written, read = _written_names(func)
    fields: list[dict[str, Any]] = []
    scalars: list[str] = []
    for p in inspect.signature(func).parameters.values():
        ann = annotations.get(p.name)
        if p.kind is inspect.Parameter.KEYWORD_ONLY:
            scalars.append(p.name)
        elif p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
            if not isinstance(ann, FieldAnnotation):
                raise GridbufTypeError(
                    f"invalid stencil {func.__name__!r}: positional parameter {p.name!r} must be annotated gb.Field[dtype, dims, ...]"
                    " (scalars are keyword-only parameters)"
                )
            intent = ("inout" if p.name in read else "out") if p.name in written else "in"
            fields.append(ann.describe(p.name, intent))
        else:
            raise GridbufTypeError(f"invalid stencil {func.__name__!r}: *args and **kwargs are not supported")
    return _gridbuf.python_stencil(name or func.__name__, func, fields, scalars, device)
