"""A drop-in for the core of ``gt4py.cartesian.gtscript`` that runs stencils in gridbuf's Rust
core, with no compile step.

Replace ``from gt4py.cartesian import gtscript`` with ``from gridbuf import gtscript`` and the
same definitions run: the source is parsed once, lowered to a small IR and handed to Rust, which
plans it (extents of temporaries, K-loop order, tiles, sweeps), compiles each statement to
machine code (Cranelift; ``GRIDBUF_GTSCRIPT_JIT=0`` keeps everything on the tape interpreter)
and runs it in tiles over all cores (``GRIDBUF_GTSCRIPT_SWEEP=0`` turns the plane-by-plane
sweeps off, for comparison; both switches are read when a stencil is defined). Calls go through gridbuf's argument binder (``origin=``,
``domain=``, ``validate_args=``) exactly like :func:`gridbuf.stencil` kernels.

Supported subset: ``Field[dtype]``, ``Field[IJ, dtype]``, ``Field[K, dtype]``,
``Field[IJK, (dtype, (n,))]`` (float64 or float32, one dtype per stencil), typed scalar
parameters, ``with computation(PARALLEL|FORWARD|BACKWARD), interval(...)`` blocks (also nested
``with interval`` blocks), assignments to fields and temporaries at offset zero, relative
offsets, data-dim indices, arithmetic, comparisons, ``and``/``or``/``not``, ``x if c else y``,
``if``/``elif``/``else``, ``**``, GT4Py's native math functions (imported or bare), ``gtscript.function`` helpers and externals
(``from __externals__ import NAME``). Data-dim fields (vectors ``(dtype, (n,))`` and matrices
``(dtype, (r, c))``) can also be used whole, as in GT4Py, on the right of an assignment to a
whole data-dim field of the same shape (``out = a``, ``out[0, 0, 0] = m @ v``), which writes
one component after the other: element-wise ``+ - * / ** %`` between vectors of one length or
a vector and a scalar (also unary ``-``, and scalar subexpressions, which GT4Py 1.1.12 fails
on), matrix ``@`` vector, ``m.T``, and a scalar assigned to every component. Matrix @ matrix,
vector @ vector, element-wise operations on matrices, math functions, ``x if c else y`` and
temporaries of whole vectors, and whole-vector assignments inside ``if`` are rejected, as GT4Py
rejects them; so is a component (``a[0, 0, 0][1]``) on the right of a whole-vector assignment,
which GT4Py reads as the whole vector (assign it to a temporary first).

Compile-time control and the remaining names: ``if __INLINED(COND):`` (one branch kept
at definition, COND by its truth value), ``compile_assert(COND)`` (a false one is a definition error
naming the line), fields and scalars the kept code never uses left out of the program (they may
be passed as ``None``, as GT4Py's AccessKind.NONE arguments; ``None`` for a used one is a
GridbufValueError at call, before anything runs), ``if``/``elif``/``else`` and augmented
assignments in ``gtscript.function`` helpers (the condition is computed once into a mask
temporary; locals keep the type of their first value, as GT4Py's function temporaries, and stay
expressions selected by the mask where that type provably does not change; a local assigned in one
branch only reads zero where no branch assigned it, where GT4Py's temporary holds uninitialised
memory (a local whose type the frontend cannot tell stays unreadable after the ``if``); one
``return``, at the end; tuple assignments one
target after the other, as GT4Py unrolls them),
``IK``/``JK`` fields (read with two offsets; never written, as in GT4Py), ``GlobalTable`` read at
constant indices (``t.A[i, j]``: each element read is a hidden scalar parameter taken from the
table at call time), ``v.A[i]`` on data-dim fields, and :func:`lazy_stencil`. Every public name of
``gt4py.cartesian.gtscript`` exists here and importing never fails. Horizontal regions
(``with horizontal(region[I[0], J[-1] - 1 :])``, bounds in place or as externals, in functions
too) and ``while`` loops (nested, in ``if``, in functions) run as GT4Py's numpy backend runs
them. What gridbuf cannot run yet - axis positions (``I[0] + 1``) used in an expression,
a table read at a run-time index, interval bounds known only at run time (which
GT4Py's numpy backend refuses too) - is refused when the stencil is defined.

Anything else is rejected when the stencil is defined, with a
:class:`gridbuf.GridbufValueError` naming the construct and the line.
"""

from __future__ import annotations

import builtins as _b
import collections
import inspect
import numbers
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Dict, Type, Union  # noqa: F401, UP035 - GT4Py's gtscript exports these names

import numpy as np

from .. import _gridbuf
from ..errors import GridbufTypeError, GridbufValueError
from ._frontend import Lowering
from . import _snapshot
from ._values import K_LEVELS_FIELD as _K_LEVELS_FIELD
from ._values import FieldType, TableType
from ._values import bounded_insert as _bounded_insert

if TYPE_CHECKING:  # pragma: no cover
    from typing import Literal

__all__ = [
    "BACKWARD", "FORWARD", "PARALLEL", "I", "J", "K", "IJ", "IK", "JK", "IJK", "Field", "GTStencil",
    "LazyStencil", "Sequence", "abs", "acos", "acosh", "asin", "asinh", "atan",
    "atanh", "cbrt", "ceil", "compile_assert", "computation", "cos", "cosh", "erf", "erfc", "exp",
    "externals", "float32", "float64", "floor", "function", "gamma", "horizontal", "int32", "int64",
    "interval", "isfinite", "isinf", "isnan", "lazy_stencil", "log", "log10", "max", "min", "mod",
    "region", "round", "round_away_from_zero", "sin", "sinh", "sqrt", "stencil", "tan", "tanh",
    "trunc", "__INLINED", "__externals__", "__gtscript__",
]  # fmt: skip


class _Order:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


#: ``computation(PARALLEL)``: every level of the interval is computed independently of the others.
PARALLEL = _Order("PARALLEL")
#: ``computation(FORWARD)``: the levels of the interval are computed one after the other, in increasing K.
FORWARD = _Order("FORWARD")
#: ``computation(BACKWARD)``: the levels of the interval are computed one after the other, in decreasing K.
BACKWARD = _Order("BACKWARD")


class AxisIndex:
    """``I[0]``, ``J[-1] + 2``: a position relative to the compute domain's start (index >= 0)
    or end (index < 0), as GT4Py's; the bounds of horizontal regions."""

    def __init__(self, axis: str, index: int, offset: int = 0) -> None:
        self.axis, self.index, self.offset = axis, index, offset

    def __repr__(self) -> str:
        return f"AxisIndex(axis={self.axis}, index={self.index}, offset={self.offset})"

    def __eq__(self, other: object) -> bool:
        return repr(self) == repr(other)

    def __hash__(self) -> int:
        return hash(repr(self))

    def __str__(self) -> str:
        return f"{self.axis}[{self.index}] + {self.offset}"

    def __add__(self, offset: int) -> AxisIndex:
        if not isinstance(offset, int):
            raise TypeError(f"Can only add type int, got {type(offset)}")
        return AxisIndex(self.axis, self.index, self.offset + offset)

    __radd__ = __add__

    def __sub__(self, offset: int) -> AxisIndex:
        return self + (-offset)


class AxisInterval:
    """``I[1:3]``: a slice of an axis, as GT4Py's."""

    def __init__(self, axis: str, start: Any, end: Any) -> None:
        self.axis, self.start, self.end = axis, start, end

    def __repr__(self) -> str:
        return f"AxisInterval(axis={self.axis}, start={self.start}, end={self.end})"

    def __str__(self) -> str:
        return f"{self.axis}[{self.start}:{self.end}]"

    def __len__(self) -> int:
        return int(self.end - self.start)


class ShiftedAxis:
    """``I + 1``: an axis shifted by a constant, as GT4Py's."""

    def __init__(self, name: str, shift: int) -> None:
        self.name, self.shift = name, shift

    def __repr__(self) -> str:
        return f"ShiftedAxis(name={self.name}, shift={self.shift})"

    def __str__(self) -> str:
        return f"{self.name}+{self.shift}"

    def __add__(self, shift: int) -> ShiftedAxis:
        if not isinstance(shift, int):
            raise TypeError(f"Can only add type int, got {type(shift)}")
        return ShiftedAxis(self.name, self.shift + shift)

    def __sub__(self, shift: int) -> ShiftedAxis:
        return self + (-shift)


class Axis:
    """A domain axis, ``I``, ``J`` or ``K``; ``I[0]``, ``I[1:3]`` and ``I + 1`` as in GT4Py."""

    def __init__(self, name: str) -> None:
        self.name = name

    @property
    def __gt_axis_name__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return self.name

    def __str__(self) -> str:
        return self.name

    def __getitem__(self, interval: Any) -> AxisIndex | AxisInterval:
        if isinstance(interval, slice):
            return AxisInterval(self.name, interval.start, interval.stop)
        if isinstance(interval, int):
            return AxisIndex(self.name, interval)
        raise TypeError("Unrecognized index type")

    def __add__(self, shift: int) -> ShiftedAxis:
        if not isinstance(shift, int):
            raise TypeError(f"Can only add type int, got {type(shift)}")
        return ShiftedAxis(self.name, shift)

    def __sub__(self, shift: int) -> ShiftedAxis:
        return self + (-shift)


_Axis = Axis
#: The I axis; ``I[0]``, ``I[-1] + 1``: positions for horizontal regions.
I = Axis("I")  # noqa: E741 - GT4Py's name
#: The J axis; ``J[0]``, ``J[-1] + 1``: positions for horizontal regions.
J = Axis("J")
#: The K axis: ``Field[K, np.float64]`` is a field with one value per level.
K = Axis("K")
#: ``Field[IJ, np.float64]``: a field with one value per column.
IJ = (I, J)
#: ``Field[IK, np.float64]``: a field without a J axis, read with two offsets.
IK = (I, K)
#: ``Field[JK, np.float64]``: a field without an I axis, read with two offsets.
JK = (J, K)
#: ``Field[IJK, (np.float64, (3,))]``: the three axes, spelt out for data-dim fields.
IJK = (I, J, K)
_AXIS_SETS = {(I, J, K): "IJK", (I, J): "IJ", (K,): "K", (I,): "I", (J,): "J", (I, K): "IK", (J, K): "JK"}


def mask_from_axes(axes: Any) -> list[bool]:
    """``[has I, has J, has K]`` of an axis or axes, as GT4Py's."""
    if isinstance(axes, Axis):
        axes = (axes,)
    names = [a.name for a in axes]
    return [a in names for a in ("I", "J", "K")]


def _axes(spec: Any) -> str:
    spec = spec if isinstance(spec, tuple) else (spec,)
    key = tuple(spec)
    if key in _AXIS_SETS:
        return _AXIS_SETS[key]
    raise GridbufTypeError(f"invalid Field axes {spec!r}: expected IJK, IJ or K")


class Field:
    """``Field[dtype]``, ``Field[IJ, dtype]``, ``Field[K, dtype]``, ``Field[IJK, (dtype, (n,))]``."""

    def __class_getitem__(cls, params: Any) -> FieldType:
        axes = "IJK"
        if isinstance(params, tuple) and len(params) == 2:
            first = params[0]
            if isinstance(first, _Axis) or (isinstance(first, tuple) and first and all(isinstance(a, _Axis) for a in first)):
                axes, params = _axes(first), params[1]
        data_shape: tuple[int, ...] = ()
        if isinstance(params, tuple) and len(params) == 2 and isinstance(params[1], tuple):
            params, data_shape = params[0], tuple(int(n) for n in params[1])
        try:
            dtype = np.dtype(params)
        except TypeError:
            if isinstance(params, str):
                # A symbol given at stencil creation: `dtypes={"DT": np.float32}`.
                return FieldType(np.dtype(np.float64), axes, data_shape, symbol=params)
            raise GridbufTypeError(f"invalid Field dtype {params!r}: expected a NumPy dtype") from None
        return FieldType(dtype, axes, data_shape)


class _GlobalTableMaker:
    """``GlobalTable[(dtype, (n, ...))]``: an array without spatial axes, read with ``t.A[i]``."""

    def __getitem__(self, spec: Any) -> TableType:
        if not (isinstance(spec, tuple) and len(spec) == 2):
            raise GridbufTypeError("GlobalTable is defined by a tuple (type, [axes_size..])")
        dtype, shape = spec
        shape = shape if isinstance(shape, tuple) else (shape,)
        return TableType(np.dtype(dtype), tuple(int(n) for n in shape))


GlobalTable = _GlobalTableMaker()


class _SequenceMaker:
    """``Sequence[dtype]``: GT4Py's descriptor, kept for its name (GT4Py uses it nowhere)."""

    def __getitem__(self, dtype: Any, length: Any = None) -> Any:
        return dtype, length


#: GT4Py's ``Sequence[dtype]`` descriptor, kept for its name (GT4Py uses it nowhere).
Sequence = _SequenceMaker()
#: ``from __externals__ import NAME`` in a definition reads the external ``NAME`` given to
#: :func:`stencil`; the module attribute itself is a placeholder, as in GT4Py.
__externals__ = "Placeholder"
#: ``from __gtscript__ import ...`` in a definition is accepted and ignored, as GT4Py's
#: placeholder module.
__gtscript__ = "Placeholder"


def externals(*args: Any) -> Any:
    """GT4Py's placeholder: externals are imported with ``from __externals__ import NAME``."""
    return args


def horizontal(*args: Any) -> Any:
    """``with horizontal(region[...], ...)``: GT4Py's horizontal regions, inside a stencil
    definition or a ``gtscript.function``: the statements of the block run only in the regions'
    boxes, positioned relative to the compute domain (``I[0] + n`` from its first point,
    ``I[-1] + n`` from its last)."""
    raise GridbufValueError("horizontal(...) can only be used inside a gtscript stencil definition")


class _Region:
    def __getitem__(self, *args: Any) -> Any:
        """``region[I[0], :]``: a region of the parallel axes, for ``horizontal``."""
        return args


#: ``region[I[0], :]``, ``region[:, J[-1] - 1 : J[-1] + 2]``: a box of the compute domain's I
#: and J axes, for ``with horizontal(...)``.
region = _Region()


def __INLINED(compile_if_expression: Any) -> Any:  # noqa: N802 - GT4Py's name
    """``if __INLINED(COND):``: the condition is evaluated when the stencil is defined and only the
    chosen branch is compiled."""
    return compile_if_expression


def compile_assert(expr: Any) -> None:
    """``compile_assert(COND)``: a definition error, naming the line, if COND is false."""


#: NumPy's ``int32``: a field or scalar type, a typed temporary (``tmp: int32 = ...``) or a cast.
int32 = np.int32
#: NumPy's ``int64``: a field or scalar type, a typed temporary or a cast.
int64 = np.int64
#: NumPy's ``float32``: a field or scalar type, a typed temporary or a cast.
float32 = np.float32
#: NumPy's ``float64``: a field or scalar type, a typed temporary or a cast.
float64 = np.float64


def computation(order: Any) -> Any:
    """Only meaningful inside a stencil definition."""
    raise GridbufValueError("computation(...) can only be used inside a gtscript stencil definition")


def interval(*args: Any) -> Any:
    """Only meaningful inside a stencil definition."""
    raise GridbufValueError("interval(...) can only be used inside a gtscript stencil definition")


# The math functions of stencil definitions (GT4Py's names), and the tables the frontend finds
# them by (`_math_functions`).
from ._math_functions import (  # noqa: A004 - GT4Py's names
    abs as abs,
    min as min,
    max as max,
    mod as mod,
    sqrt as sqrt,
    exp as exp,
    log as log,
    log10 as log10,
    sin as sin,
    cos as cos,
    tan as tan,
    asin as asin,
    acos as acos,
    atan as atan,
    sinh as sinh,
    cosh as cosh,
    tanh as tanh,
    asinh as asinh,
    acosh as acosh,
    atanh as atanh,
    gamma as gamma,
    cbrt as cbrt,
    erf as erf,
    erfc as erfc,
    floor as floor,
    ceil as ceil,
    trunc as trunc,
    round as round,
    round_away_from_zero as round_away_from_zero,
    isfinite as isfinite,
    isnan as isnan,
    isinf as isinf,
)


def function(func: Callable[..., Any]) -> Callable[..., Any]:
    """Mark ``func`` as a gtscript function: calls in a stencil are inlined."""
    func.__gtscript_function__ = True  # type: ignore[attr-defined]
    return func


def _given_origins(origin: Any) -> dict[str, tuple[int, ...]]:
    """A call's ``origin`` argument as GT4Py's ``exec_info`` reports it: a tuple under
    ``"_all_"``, a dict as given, nothing for None."""
    if origin is None:
        return {}
    return dict(origin) if isinstance(origin, dict) else {"_all_": tuple(origin)}


def _checked_exec_info(name: str, exec_info: Any) -> dict[str, Any] | None:
    """A call's ``exec_info``: None, or the dict GT4Py's stencils fill with timings, the domain
    and the origins; anything else is refused before the call runs."""
    if exec_info is not None and not isinstance(exec_info, dict):
        raise GridbufTypeError(f"invalid exec_info of stencil {name!r} ({type(exec_info).__name__}): expected a dict or None")
    return exec_info


def _copy_of(array: Any) -> np.ndarray:
    """A copy of `array` (a call's argument), its axes in the same memory order."""
    return np.array(np.asarray(array), order="K", copy=True)


# The variants of stencils for calls that pass one array as several fields (`_variant`), by
# definition, name, IR, layout map, warnings and alias map: the IR holds every external's
# effect on the definition, so stencils that agree on all of these lower each alias map alike.
# At most `_VARIANTS_KEPT`, the oldest dropped first (each stencil keeps its own in `_aliased`).
_VARIANTS: dict[tuple[Any, ...], Any] = {}
_VARIANTS_KEPT = 256


class GTStencil:
    """A gtscript stencil run by gridbuf: call it like a GT4Py stencil object.

    ``st(*args, origin=None, domain=None, validate_args=True, exec_info=None, **kwargs)`` with
    fields and scalar parameters given positionally or by name.
    """

    def __init__(
        self,
        definition: Callable[..., Any],
        externals: dict[str, Any] | None,
        name: str | None,
        dtypes: dict[str, Any] | None = None,
        *,
        layout_map: Callable[[tuple[str, ...]], tuple[int, ...]] | None = None,
        warnings: Literal["gridbuf", "gt4py"] = "gridbuf",
        aliases: dict[str, str] | None = None,
    ) -> None:
        lowering = Lowering(definition, externals, name, dtypes, aliases)
        self._build_args = (definition, externals, name, dtypes, layout_map, warnings)
        # The variants for calls that pass one array as several fields, by alias map: the
        # stencil with them as one field, or the fields to bind to a copy (`_snapshot`).
        self._aliased: dict[frozenset[tuple[str, str]], GTStencil | _snapshot.CopyPlan] = {}
        self.ir: str = lowering.lower()
        # Fields the body never reads or writes (e.g. uses pruned by externals): left out of the
        # program, so that they may be passed as None, as GT4Py allows.
        self.unused_fields: tuple[str, ...] = tuple(lowering.unused_fields)
        self._unused_set = frozenset(self.unused_fields)
        self.unused_scalars: tuple[str, ...] = tuple(lowering.unused_scalars)
        self._tables = dict(lowering.tables)
        # Integer scalar parameters that index data dims at run time, and how many components
        # each may name: checked at every call, so no read or write leaves the data dims.
        self._index_params = dict(lowering.index_params)
        self._lowered_aliases: dict[str, str] = dict(lowering.aliases)
        self._table_reads = dict(lowering.table_reads)
        self.definition_func = definition
        self.__name__ = self.name = lowering.name
        self.__doc__ = definition.__doc__
        self._params = lowering.params
        self._param_set = frozenset(self._params)
        self._defaults: dict[str, Any] = {
            n: p.default for n, p in inspect.signature(definition).parameters.items() if p.default is not inspect.Parameter.empty
        }
        #: Every field parameter's type (dtype resolved), in parameter order, used or not.
        self.field_types: dict[str, FieldType] = {n: t for n, t in lowering.fields if n != _K_LEVELS_FIELD}
        #: GT4Py's access kind of each field the stencil uses: "read", "write" or "readwrite".
        self.field_access: dict[str, str] = {lowering.fields[i][0]: k for i, k in lowering.field_access.items()}
        #: Every scalar parameter's dtype, in parameter order, used or not.
        self.scalar_types: dict[str, np.dtype[Any]] = dict(zip(lowering.scalars, lowering.scalar_types))
        self._program = _gridbuf.gtscript_compile(self.ir)
        fields = []
        for f in self._program.fields:
            f = dict(f)
            f["dtype"] = np.dtype(f["dtype"])
            if layout_map is not None:
                # The layout the binder warns about when a field does not follow it (dims as
                # GT4Py names them: the axes, then the data dims "0", "1", ...).
                f["layout"] = tuple(layout_map(tuple(f["dims"])))
            fields.append(f)
        if layout_map is not None:
            # The code calls compile on first need, compiled now for the layout the backend
            # allocates: the first call runs as fast as later ones (a model's first step).
            self._program.prepare(tuple(layout_map(("I", "J", "K"))))
        self.field_names: tuple[str, ...] = tuple(f["name"] for f in fields)
        # `K` read as a value: the hidden field of level numbers the program reads it from.
        self._k_levels = _K_LEVELS_FIELD in self.field_names
        self._k_level_numbers: np.ndarray | None = None
        self.scalar_names: tuple[str, ...] = tuple(self._program.scalars)
        self.fields = fields
        self._stencil = _gridbuf.python_stencil(self.name, self._program, fields, list(self.scalar_names), warnings=warnings)
        #: The fewest K levels a call may have, from the intervals.
        self.min_k: int = self._program.min_k

    def __call__(self, *args: Any, origin: Any = None, domain: Any = None, validate_args: bool = True, exec_info: Any = None, **kwargs: Any) -> None:
        self._call(args, kwargs, origin, domain, validate_args, _checked_exec_info(self.name, exec_info))

    def _call(self, args: tuple[Any, ...], kwargs: dict[str, Any], origin: Any, domain: Any, validate_args: bool, exec_info: dict[str, Any] | None) -> None:
        """A call with its arguments as the caller passed them (``exec_info`` checked): the
        GT4Py backend's stencil objects call it with theirs, not packed again."""
        impl, fields, scalars, checked = self._arguments(args, kwargs, origin, domain)
        if exec_info is None:
            impl._stencil(*fields, origin=checked, domain=domain, validate_args=validate_args, **scalars)
            return
        # GT4Py's ``exec_info``: the domain and the origins, given and resolved, as the call's
        # own binding resolved them (no second resolution).
        impl._stencil(*fields, origin=checked, domain=domain, validate_args=validate_args, resolved_into=exec_info, **scalars)
        exec_info["origin"] = {**_given_origins(origin), **impl._named_origins(exec_info["origin"])}

    @property
    def tier_two(self) -> str:
        """Where tier two stands: C compiled in the background from the stencil's first call
        (``GRIDBUF_TIER2=define``: when it is defined; ``GRIDBUF_TIER2=0``: never) and swapped
        in while calls run.

        Returns
        -------
        str
            ``"idle"`` (not started), ``"pending"``, ``"ready: N"`` (N compiled functions
            replaced), ``"failed: <why>"`` (the stencil keeps its first-tier code) or ``"none"``
            (no machine code at all).
        """
        return str(self._program.tier_two)

    def wait_tier_two(self, timeout: float = 60.0) -> str:
        """Waits up to `timeout` seconds while tier two is pending.

        Parameters
        ----------
        timeout : float
            Seconds to wait at most.

        Returns
        -------
        str
            Where it stands, as :attr:`tier_two`.
        """
        return str(self._program.wait_tier_two(float(timeout)))

    def resolve(self, *args: Any, origin: Any = None, domain: Any = None, validate_args: bool = True, **kwargs: Any) -> tuple[tuple[int, ...], dict[str, tuple[int, ...]]]:
        """The compute domain and each field's origin (per dim of the field, data dims 0) that a
        call with these arguments runs with, as the binder checked them; nothing runs.

        Returns
        -------
        tuple
            ``(domain, origins)``: the domain per domain dim, and a dict from each field the
            stencil uses to its origin.
        """
        impl, fields, _, origin = self._arguments(args, kwargs, origin, domain)
        dom, origins = impl._stencil.resolve(*fields, origin=origin, domain=domain, validate_args=validate_args)
        return dom, impl._named_origins(origins)

    def _named_origins(self, origins: dict[str, tuple[int, ...]]) -> dict[str, tuple[int, ...]]:
        """The binder's origins by program field as origins by parameter: the hidden K-levels
        field left out, each field lowered into another under that one's origin."""
        origins.pop(_K_LEVELS_FIELD, None)
        for alias, target in self._lowered_aliases.items():
            origins[alias] = origins[target]
        return origins

    def _aliases(self, values: dict[str, Any], origin: Any) -> dict[str, str] | None:
        """The fields of a call that are the same array as an earlier one (``stencil(q, q)``, as
        NDSL calls a stencil), each with that field, when they may share one program field: the
        same type and the same origin. GT4Py's backends run such a call on the one array, every
        statement seeing the others' writes; the program with the two fields as one computes
        exactly that, under every rule of an ordinary program (a read at an offset of what a
        PARALLEL statement writes is refused as usual). None when no array repeats."""
        seen: dict[int, str] = {}
        out: dict[str, str] = {}
        for f in self.field_names:
            v = values.get(f)
            if v is None:
                continue
            first = seen.setdefault(id(v), f)
            if first == f:
                continue
            same_origin = not isinstance(origin, dict) or origin.get(f, origin.get("_all_")) == origin.get(first, origin.get("_all_"))
            if self.field_types.get(f) == self.field_types.get(first) and same_origin:
                out[f] = first
        return out or None

    def _arguments(self, args: tuple[Any, ...], kwargs: dict[str, Any], origin: Any, domain: Any = None) -> tuple[GTStencil, list[Any], dict[str, Any], Any]:
        """The stencil that runs a call (this one, or its variant for a call that passes one
        array as several fields), its fields (in its program's order), scalars and origin,
        checked."""
        copy_plan: _snapshot.CopyPlan | None = None
        if len(args) > len(self._params):
            raise GridbufTypeError(f"stencil {self.name!r} takes {len(self._params)} arguments ({', '.join(self._params)}), got {len(args)}")
        values = dict(zip(self._params, args))
        # Set operations first (every call pays them), the loop naming the bad keyword only
        # where they fail.
        if kwargs and not (kwargs.keys() <= self._param_set and kwargs.keys().isdisjoint(values)):
            self._refuse_keywords(values, kwargs)
        values.update(kwargs)
        if len(values) < len(self._params):
            missing = [p for p in self._params if p not in values]
            for p in list(missing):
                # A parameter left out takes the definition's default (`par2=7.0`), as in GT4Py's
                # call signature (which also requires every parameter without one, used or not).
                if p in self._defaults:
                    values[p] = self._defaults[p]
                    missing.remove(p)
            if missing:
                raise GridbufTypeError(f"stencil {self.name!r} misses the arguments {', '.join(map(repr, missing))}")
        for t, tt in self._tables.items():
            table = values[t]
            if not isinstance(table, np.ndarray) or table.shape != tt.shape or table.dtype != tt.dtype:
                what = type(table).__name__ if not isinstance(table, np.ndarray) else f"an array of {table.dtype}, shape {table.shape}"
                raise GridbufTypeError(f"invalid GlobalTable {t!r} of stencil {self.name!r} ({what}): expected a NumPy array of {tt.dtype}, shape {tt.shape}")
        for s, (t, idx) in self._table_reads.items():
            values[s] = values[t][idx]
        scalars = {}
        for s in self.scalar_names:
            v = values[s]
            if not isinstance(v, (int, float, np.number, np.bool_)) or isinstance(v, np.ndarray):
                raise GridbufTypeError(f"invalid type for scalar parameter {s!r} of stencil {self.name!r} ({type(v).__name__}): expected a real number")
            scalars[s] = v
        for s, n in self._index_params.items():
            v = scalars[s]
            if not 0 <= v < n:
                raise GridbufValueError(f"invalid value for scalar parameter {s!r} of stencil {self.name!r} ({v!r}): it indexes data dims of {n} components, so it must be from 0 to {n - 1}")
        # The hidden field of K levels (last, when `K` is a value) is added below.
        fields = [values[f] for f in self.field_names[: len(self.field_names) - self._k_levels]]
        if len(set(map(id, fields))) < len(fields):
            aliases = self._aliases(values, origin)
            if aliases is not None:
                variant = self._variant(aliases)
                if isinstance(variant, GTStencil):
                    return variant._arguments(args, kwargs, origin, domain)
                copy_plan = variant
        for f, v in zip(self.field_names, fields):
            if type(v) is np.ndarray:
                continue
            if v is None:
                # A ValueError, as GT4Py's argument check raises for it.
                raise GridbufValueError(f"field {f!r} of stencil {self.name!r} is None, but the stencil uses it: only a field whose every use the externals prune may be None")
            if isinstance(v, (int, float, np.number)):
                raise GridbufTypeError(f"invalid type for field {f!r} of stencil {self.name!r} ({type(v).__name__}): expected an array")
        if isinstance(origin, dict) and not self._unused_set.isdisjoint(origin):
            # A field the program left out takes no origin (the binder refuses other unknown names).
            origin = {k: v for k, v in origin.items() if k not in self._unused_set}
        if self._k_levels:
            levels, origin = self._k_level_field(fields, origin)
            fields.append(levels)
        if copy_plan is not None:
            fields = self._with_copies(copy_plan, fields, origin, domain)
        return self, fields, scalars, origin

    def _refuse_keywords(self, values: dict[str, Any], kwargs: dict[str, Any]) -> None:
        """Raises for the first keyword of `kwargs` that names no parameter, or one `values`
        (the positional arguments) already has."""
        for k in kwargs:
            if k not in self._param_set:
                raise GridbufTypeError(f"stencil {self.name!r} has no parameter {k!r} (parameters: {', '.join(self._params)})")
            if k in values:
                raise GridbufTypeError(f"stencil {self.name!r} got parameter {k!r} twice")

    def _with_copies(self, plan: _snapshot.CopyPlan, fields: list[Any], origin: Any, domain: Any) -> list[Any]:
        """`fields` with those of `plan` bound to a copy of their array (one per array), taken
        now, where the plan is exact for the call's domain; else the call is refused."""
        out = list(fields)
        copies: dict[int, Any] = {}
        for f in plan.readers:
            i = self.field_names.index(f)
            v = out[i]
            if id(v) not in copies:
                copies[id(v)] = _copy_of(v)
            out[i] = copies[id(v)]
        dom, _ = self._stencil.resolve(*out, origin=origin, domain=domain, validate_args=True)
        if not plan.exact((dom[0], dom[1])):
            names = ", ".join(repr(f) for f in plan.readers)
            raise GridbufValueError(
                f"stencil {self.name!r} called with one array as the fields {names} and a field it writes, on a domain of {tuple(dom)}: "
                "there a read of it reaches a point a statement before it writes (GT4Py's numpy backend would read the new value, "
                "which gridbuf cannot run as one field); pass separate arrays, e.g. a copy"
            )
        return out

    def _variant(self, aliases: dict[str, str]) -> GTStencil | _snapshot.CopyPlan:
        """How this stencil runs a call with the fields of `aliases` as one array (decided once
        per alias map): built with them as one field, or else, where that is refused, this
        stencil with the fields that only read the array bound to a copy of it, for the domains
        where no read reaches what a statement before it wrote (`_snapshot.CopyPlan`: there it
        reads what GT4Py's numpy backend reads).

        Stencil objects of one definition lowered to the same IR share their variants
        (`_VARIANTS`): a model builds many (PyFV3's dycore, 35 variants of 13 on one rank, each
        lowered twice at its first call)."""
        key = frozenset(aliases.items())
        variant = self._aliased.get(key)
        if variant is None:
            definition, _, _, _, layout_map, warnings = self._build_args
            shared_key = (definition, self.name, self.ir, layout_map, warnings, key)
            variant = _VARIANTS.get(shared_key)
            if variant is None:
                variant = self._new_variant(aliases)
                _bounded_insert(_VARIANTS, shared_key, variant, _VARIANTS_KEPT)
            self._aliased[key] = variant
        return variant

    def _new_variant(self, aliases: dict[str, str]) -> GTStencil | _snapshot.CopyPlan:
        """`_variant`'s answer, made: the stencil built with the fields of `aliases` as one,
        else the copy plan; an error naming the fields where neither is possible."""
        definition, externals, name, dtypes, layout_map, warnings = self._build_args
        try:
            return GTStencil(definition, externals, name, dtypes, layout_map=layout_map, warnings=warnings, aliases=aliases)
        except GridbufValueError as exc:
            plan = self._readers_of_copies(aliases)
            if plan is None:
                pairs = ", ".join(f"{a!r} and {t!r}" for a, t in aliases.items())
                raise GridbufValueError(
                    f"stencil {self.name!r} called with one array as the fields {pairs}: with them as one field it is not a stencil gridbuf runs ({exc}); pass separate arrays, e.g. a copy"
                ) from None
            return plan

    def _readers_of_copies(self, aliases: dict[str, str]) -> _snapshot.CopyPlan | None:
        """How the fields of `aliases` (groups of fields passed one array) may read a copy of
        it: in each group one field written and the others only read (`_snapshot`). None where
        some group is not so."""
        definition, externals, name, dtypes, _, _ = self._build_args
        lowering = Lowering(definition, externals, name, dtypes)
        lowering.lower()
        index = {n: i for i, (n, _) in enumerate(lowering.fields)}
        groups: dict[str, list[str]] = {}
        for alias, target in aliases.items():
            groups.setdefault(target, [target]).append(alias)
        readers: list[str] = []
        pairs = []
        for members in groups.values():
            written = [f for f in members if self.field_access.get(f) in ("write", "readwrite")]
            if len(written) != 1:
                return None
            for f in members:
                if f == written[0] or f not in self.field_access:
                    continue
                found = _snapshot.accesses(lowering.lines, index[f], index[written[0]])
                if found is None:
                    return None
                pairs.append(found)
                readers.append(f)
        return _snapshot.CopyPlan(tuple(readers), pairs)

    def _k_level_field(self, fields: list[Any], origin: Any) -> tuple[np.ndarray, dict[str, Any]]:
        """The hidden field of K level numbers (``K`` read as a value) and the call's origin with
        it at origin 0: level ``k`` of the domain reads ``k``. It is at least as long as the
        longest axis of any argument, so it never bounds the domain (one array, grown when a
        call needs more)."""
        n = _b.max((_b.max(np.shape(f), default=1) for f in fields if f is not None), default=1)
        levels = self._k_level_numbers
        if levels is None or len(levels) < n:
            levels = np.arange(n, dtype=np.int64)
            levels.flags.writeable = False
            self._k_level_numbers = levels
        if origin is None:
            return levels, {_K_LEVELS_FIELD: (0,)}
        if isinstance(origin, dict):
            return levels, {**origin, _K_LEVELS_FIELD: (0,)}
        return levels, {"_all_": origin, _K_LEVELS_FIELD: (0,)}

    def __repr__(self) -> str:
        return f"GTStencil({self.name!r}, fields={self.field_names}, scalars={self.scalar_names})"


def literal_dtypes(dtypes: dict[Any, Any] | None, int_precision: int | None = None, float_precision: int | None = None) -> dict[Any, Any]:
    """``dtypes`` with GT4Py's literal precisions added as its type-keyed entries: the types of
    Python ``int`` and ``float`` literals and externals are ``dtypes[int]`` and
    ``dtypes[float]`` where given, else ``literal_int_precision`` and
    ``literal_float_precision`` bits (64 by default), as GT4Py's frontend decides them."""
    out = dict(dtypes or {})
    for kind, bits, names in ((int, int_precision, {32: np.int32, 64: np.int64}), (float, float_precision, {32: np.float32, 64: np.float64})):
        if bits is None:
            continue
        if bits not in names:
            raise GridbufValueError(f"invalid literal_{kind.__name__}_precision ({bits!r}): expected 32 or 64")
        out.setdefault(kind, names[bits])
    return out


def stencil(
    backend: Any = None,
    definition: Callable[..., Any] | None = None,
    *,
    externals: dict[str, Any] | None = None,
    name: str | None = None,
    dtypes: dict[str, Any] | None = None,
    **kwargs: Any,
) -> Any:
    """Build a stencil from a gtscript definition, as ``gt4py.cartesian.gtscript.stencil``.

    Parameters
    ----------
    backend : str, optional
        Accepted for compatibility and ignored: gridbuf runs every stencil the same way.
    definition : callable, optional
        The definition; without it, returns a decorator.
    externals : dict, optional
        Compile-time constants and gtscript functions for ``from __externals__ import ...``.
    name : str, optional
        Name used in messages.
    dtypes : dict, optional
        Dtypes of symbols used in annotations (``Field["DT"]``, ``s: "DT"``), as in GT4Py; type
        keys give the dtypes of Python literals and externals (``{float: np.float32}``).
    **kwargs
        ``literal_int_precision`` and ``literal_float_precision`` (32 or 64) as in GT4Py;
        other GT4Py options (``rebuild``, ``build_info``, ...) are accepted and ignored.

    Returns
    -------
    GTStencil or callable
        The stencil, or a decorator that builds it.
    """
    if definition is None and callable(backend) and not isinstance(backend, str):
        definition, backend = backend, None
    dtypes = literal_dtypes(dtypes, kwargs.get("literal_int_precision"), kwargs.get("literal_float_precision"))
    if definition is None:
        return lambda d: GTStencil(d, externals, name, dtypes)
    if not inspect.isfunction(definition):
        raise GridbufTypeError(f"invalid type for definition ({definition!r}): expected a Python function")
    return GTStencil(definition, externals, name, dtypes)


class LazyStencil:
    """A stencil built on first use (a call, ``.build()`` or ``.implementation``), as GT4Py's
    ``lazy_stencil`` returns. The definition is checked when it is created (``check_syntax``)."""

    def __init__(self, definition: Callable[..., Any], externals: dict[str, Any] | None, name: str | None, dtypes: dict[str, Any] | None, backend: Any = None) -> None:
        self.definition_func = definition
        self.backend = backend
        self._args = (externals, name, dtypes)
        self._impl: GTStencil | None = None
        self.__name__ = name or definition.__name__
        self.__doc__ = definition.__doc__

    def check_syntax(self) -> None:
        """Lowers the definition: definition errors are raised here, before any build."""
        externals, name, dtypes = self._args
        Lowering(self.definition_func, externals, name, dtypes).lower()

    def build(self) -> GTStencil:
        """The built stencil (built once)."""
        if self._impl is None:
            self._impl = GTStencil(self.definition_func, *self._args)
        return self._impl

    @property
    def implementation(self) -> GTStencil:
        return self.build()

    @property
    def field_info(self) -> Any:
        return self.build().fields

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        self.build()(*args, **kwargs)

    def run(self, *args: Any, **kwargs: Any) -> None:
        self.build()(*args, **kwargs)

    def __repr__(self) -> str:
        return f"LazyStencil({self.__name__!r}, built={self._impl is not None})"


DaCeLazyStencil = LazyStencil


def lazy_stencil(
    backend: Any = None,
    definition: Callable[..., Any] | None = None,
    *,
    externals: dict[str, Any] | None = None,
    name: str | None = None,
    dtypes: dict[str, Any] | None = None,
    eager: bool = False,
    check_syntax: bool = True,
    **kwargs: Any,
) -> Any:
    """Like :func:`stencil`, but the stencil is built on first call or ``.build()``, as
    ``gt4py.cartesian.gtscript.lazy_stencil``. ``check_syntax=True`` (the default) checks the
    definition at once; ``eager=True`` builds at once and returns the :class:`GTStencil`."""
    if definition is None and callable(backend) and not isinstance(backend, str):
        definition, backend = backend, None
    dtypes = literal_dtypes(dtypes, kwargs.get("literal_int_precision"), kwargs.get("literal_float_precision"))

    def decorator(d: Callable[..., Any]) -> Any:
        if not inspect.isfunction(d):
            d = getattr(d, "definition_func", d)
        if not inspect.isfunction(d):
            raise GridbufTypeError(f"invalid type for definition ({d!r}): expected a Python function")
        lazy = LazyStencil(d, externals, name, dtypes, backend)
        if eager:
            return lazy.build()
        if check_syntax:
            lazy.check_syntax()
        return lazy

    return decorator if definition is None else decorator(definition)


# GT4Py's sets of gtscript names, with the same contents.
MATH_BUILTINS = {
    "abs", "min", "max", "mod", "sin", "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos", "atan",
    "asinh", "acosh", "atanh", "sqrt", "exp", "log", "log10", "gamma", "cbrt", "isfinite", "isinf",
    "isnan", "floor", "ceil", "trunc", "erf", "erfc", "round", "round_away_from_zero",
}  # fmt: skip
TYPE_HINT_AND_CAST_BUILTINS = {"int32", "int64", "float32", "float64", "int", "float"}
builtins = {
    "I", "J", "K", "IJ", "IK", "JK", "IJK", "FORWARD", "BACKWARD", "PARALLEL", "Field", "Sequence",
    "externals", "computation", "interval", "horizontal", "region", "__gtscript__", "__externals__",
    "__INLINED", "compile_assert", *MATH_BUILTINS, *TYPE_HINT_AND_CAST_BUILTINS,
}  # fmt: skip
IGNORE_WHEN_INLINING = {*MATH_BUILTINS, *TYPE_HINT_AND_CAST_BUILTINS, "compile_assert"}
IGNORE_IN_ALL = {"int", "float"}

# GT4Py's `gtscript.gt_definitions` is its build-options module; gridbuf has no build step, so
# this stands in for the name only.
gt_definitions = types.ModuleType("gridbuf.gtscript.gt_definitions", "Placeholder for GT4Py's build definitions: gridbuf has no build step.")
