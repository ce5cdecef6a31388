"""The gtscript frontend: parses a stencil definition's source with :mod:`ast`, inlines
``gtscript.function`` helpers, substitutes externals and lowers the body to the IR text the
Rust core compiles (see ``gridbuf::gtscript::ir``).

:class:`Lowering` reads the parameters and writes the program's head; the body is lowered by
its mixins, one concern each: statements and control flow (``_lower_statements``),
expressions and field reads (``_lower_expressions``), calls and inlined functions
(``_lower_calls``), over the shared state and constants of ``_lower_base``."""

from __future__ import annotations

import enum
import gc
import inspect
import sys
from typing import Any

import numpy as np

from ..errors import GridbufTypeError, GridbufValueError
from ._irtext import _fields_and_scalars, _fmt_stmt, share_across
from ._lower_base import _dtype, _float64_value
from ._lower_calls import CallsMixin
from ._lower_expressions import ExpressionsMixin
from ._lower_statements import StatementsMixin
from ._values import FieldType, TableType, _Ctx, _Ref, _source, _Table


#: Python's recursion limit while a definition is lowered: the lowering recurses along the
#: definition's expressions and through every inlined ``gtscript.function`` (about eight frames
#: per function), so a chain of a few hundred distinct functions (f2 calls f1, which calls f0)
#: needs more than the default 1000. Python-to-Python calls use no C stack on CPython 3.11+.
_RECURSION_LIMIT = 20_000


class Lowering(StatementsMixin, ExpressionsMixin, CallsMixin):
    """Lowers one stencil definition to the IR text."""

    def lower(self) -> str:
        """The IR text of the definition (see `_lower`), with Python's recursion limit raised
        to `_RECURSION_LIMIT` meanwhile; a definition that still exceeds it is refused."""
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, _RECURSION_LIMIT))
        # The lowering allocates many short-lived tuples and makes no cycles that need
        # collecting meanwhile: the cyclic collector, which they would trigger over the
        # caller's whole heap (a model's every stencil and array), waits until it ends.
        collecting = gc.isenabled()
        gc.disable()
        try:
            return self._lower()
        except RecursionError:
            raise GridbufValueError(
                f"invalid stencil definition {self.name!r}: its expressions and gtscript function calls nest deeper than Python's recursion "
                f"allows (limit {max(limit, _RECURSION_LIMIT)} frames while lowering; about eight per inlined function): split it into fewer nested calls"
            ) from None
        finally:
            sys.setrecursionlimit(limit)
            if collecting:
                gc.enable()

    # -- parameters ------------------------------------------------------------------------
    def _lower(self) -> str:
        fdef, first = _source(self.definition)
        ctx = _Ctx(self.definition, first)
        try:
            annotations = dict(inspect.get_annotations(self.definition))
        except Exception as exc:  # noqa: BLE001 - any failure to read annotations
            raise GridbufTypeError(f"invalid stencil definition {self.name!r}: its annotations cannot be read ({exc})") from None
        args = fdef.args
        if args.vararg or args.kwarg or args.posonlyargs:
            raise self.error(ctx, fdef, "*args, **kwargs and positional-only parameters are not supported")
        for a in args.args + args.kwonlyargs:
            ann = self.annotation(ctx, a, annotations.get(a.arg))
            if isinstance(ann, FieldType):
                ann = FieldType(self.dtype_of(ctx, a, ann.symbol or ann.dtype, f"field {a.arg!r}"), ann.axes, ann.data_shape)
                ctx.local[a.arg] = _Ref("f", len(self.fields))
                self.fields.append((a.arg, ann))
            elif isinstance(ann, TableType):
                # Read at constant indices only (`t.A[2]`): each element read is a hidden scalar
                # parameter, taken from the table at call time.
                table = TableType(self.dtype_of(ctx, a, ann.dtype, f"GlobalTable {a.arg!r}"), ann.shape)
                ctx.local[a.arg] = _Table(a.arg, table)
                self.tables[a.arg] = table
            elif ann is None or ann in (float, int, bool) or (isinstance(ann, type) and issubclass(ann, (np.generic, enum.IntEnum))) or isinstance(ann, np.dtype):
                ctx.local[a.arg] = ("s", len(self.scalars))
                self.scalars.append(a.arg)
                self.scalar_types.append(self.dtype_of(ctx, a, float if ann is None else ann, f"scalar parameter {a.arg!r}"))
            else:
                raise self.error(ctx, a, f"parameter {a.arg!r} has the annotation {ann!r}: expected Field[...] or a scalar type")
            self.params.append(a.arg)
        if not self.fields:
            raise self.error(ctx, fdef, "a stencil needs at least one Field parameter")
        for alias, target in self.aliases.items():
            ctx.local[alias] = ctx.local[target]  # the alias's own field stays unused
        body: list[Any] = []
        self.lines = body
        for stmt in fdef.body:
            self.top_stmt(ctx, stmt)
        body = self.lines = share_across(body, self.temps, lambda e: np.dtype(np.float64) if _float64_value(self, e) else _dtype(self, e))
        # Fields the body never reads or writes (GT4Py's AccessKind.NONE, e.g. every use pruned by
        # externals) are left out of the program: they may be passed as None and do not bound
        # the domain, as in GT4Py.
        # Scalars likewise (GT4Py neither checks nor needs an unused scalar parameter).
        used_f, used_s_set = _fields_and_scalars(body)
        used = sorted(used_f)
        keep = used if used else list(range(len(self.fields)))
        remap = {old: new for new, old in enumerate(keep)}
        self.unused_fields = [n for i, (n, _) in enumerate(self.fields) if i not in remap]
        used_s = sorted(used_s_set)
        remap_s = {old: new for new, old in enumerate(used_s)}
        self.unused_scalars = [n for i, n in enumerate(self.scalars) if i not in remap_s]
        head = [f"stencil {self.name.replace(' ', '_')}"]
        for i in keep:
            n, f = self.fields[i]
            head.append(" ".join(["field", n, f.dtype.name, f.axes, *map(str, f.data_shape)]))
        head += [f"scalar {self.scalars[i]} {self.scalar_types[i].name}" for i in used_s]
        for i, t in enumerate(self.temps):
            ty, axes = self.temp_types.get(i, (None, "IJK"))
            head.append(f"temp {t} {ty.name if ty is not None else 'auto'} {axes}")
        text = [item if isinstance(item, str) else _fmt_stmt(item, (remap, remap_s)) for item in body]
        return "\n".join(head + text) + "\n"
