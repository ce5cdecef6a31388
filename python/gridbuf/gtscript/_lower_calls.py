"""Lowering of calls (:class:`CallsMixin`): the gtscript math functions and builtins,
conversions (``float32(x)``, ``int(x)``), and ``gtscript.function`` helpers inlined, with their
locals, ``if``, loops and regions lowered as GT4Py does (a local whose type may change becomes a
temporary typed by its first value)."""

from __future__ import annotations

import ast
import builtins
import dataclasses
import inspect
import io
import pickle
from collections.abc import Callable
from typing import Any, TypeGuard

import numpy as np

from ..errors import GridbufValueError
from . import _vectors
from ._gt4py_objects import is_gtscript_function
from ._irtext import _LEAVES, _SHIFTED_NODES, Expr, _costly, _neighbourhood, _shape, _temps_read
from ._lower_base import _BINOPS, _dtype, _load, _LoweringBase
from ._lower_statements import _guard_levels
from ._math_functions import MATH as _MATH
from ._values import _CASTS, _Ctx, _describe, _Ref, _source, _Table, _Undefined

_UNARY_FUNCS = (
    "abs", "sqrt", "exp", "log", "log10", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh",
    "tanh", "asinh", "acosh", "atanh", "gamma", "cbrt", "erf", "erfc", "floor", "ceil", "trunc", "round",
    "round_away_from_zero", "isfinite", "isnan", "isinf",
)  # fmt: skip
_BINARY_FUNCS = ("min", "max", "mod", "pow")


class CallsMixin(_LoweringBase):
    """Calls: math functions, conversions and inlined ``gtscript.function`` helpers."""

    def call(self, ctx: _Ctx, node: ast.Call) -> Any:
        f = node.func
        if isinstance(f, ast.Name) and f.id == "__INLINED":
            if len(node.args) != 1 or node.keywords:
                raise self.error(ctx, node, "__INLINED takes one argument")
            v = self.py_const(ctx, node.args[0], "__INLINED")
            if not isinstance(v, (bool, int, float, np.number)):
                raise self.error(ctx, node, f"{ast.unparse(node)} is {v!r}, not a number a stencil can compute with")
            return self.lit(v)
        if isinstance(f, ast.Name) and f.id == "compile_assert":
            raise self.error(ctx, node, "compile_assert(...) is a statement, not a value")
        if isinstance(f, ast.Attribute) and f.attr == "at" and isinstance(base := self.value(ctx, f.value), _Ref):
            return self.at_k(ctx, node, base)
        if isinstance(f, ast.Name) and f.id in _CASTS and f.id not in ctx.local and f.id not in ctx.globals:
            return self.cast(ctx, node, np.dtype(_CASTS[f.id]))
        try:
            fn = self.const(ctx, node.func) if not isinstance(node.func, ast.Name) else self.lookup(ctx, node.func.id, node.func)
        except GridbufValueError:
            raise
        except Exception:  # noqa: BLE001
            raise self.error(ctx, node, f"call of {ast.unparse(node.func)!r}") from None
        name = _MATH.get(id(fn))
        if fn is builtins.abs:
            name = "abs"
        elif fn is builtins.min:
            name = "min"
        elif fn is builtins.max:
            name = "max"
        if name is not None:
            if node.keywords:
                raise self.error(ctx, node, f"keyword arguments to {name}")
            args = [self.expr(ctx, a) for a in node.args]
            if name in _UNARY_FUNCS:
                if len(args) != 1:
                    raise self.error(ctx, node, f"{name} takes one argument")
                return (name, args[0])
            if name in ("min", "max") and len(args) >= 2:
                out = args[0]
                for a in args[1:]:
                    out = (name, out, a)
                return out
            if len(args) != 2:
                raise self.error(ctx, node, f"{name} takes two arguments")
            return (name, args[0], args[1])
        if is_gtscript_function(fn):
            return self.inline(ctx, node, fn)
        if fn in (float, int, bool) or (isinstance(fn, type) and issubclass(fn, np.generic)):
            return self.cast(ctx, node, np.dtype(_CASTS.get(getattr(fn, "__name__", ""), fn)))
        raise self.error(ctx, node, f"call of {ast.unparse(node.func)!r}: only the gtscript math functions and gtscript.function helpers can be called")

    def cast(self, ctx: _Ctx, node: ast.Call, dt: np.dtype[Any]) -> Expr:
        """`float32(x)`, `int(x)`, `np.float64(x)`, ...: a conversion (C's, as NumPy's `astype`)."""
        if len(node.args) != 1 or node.keywords:
            raise self.error(ctx, node, f"the conversion {ast.unparse(node.func)} takes one argument")
        dt = self.dtype_of(ctx, node, dt, f"the conversion {ast.unparse(node.func)}")
        return ("cast", dt.name, self.expr(ctx, node.args[0]))

    def inline(self, ctx: _Ctx, node: ast.Call, fn: Callable[..., Any]) -> Any:
        if fn not in self.sources:
            # The signature kept with the source: pace's satadjust calls its functions 733
            # times (its lowering 151 -> 147 ms).
            self.sources[fn] = (*_source(fn), inspect.signature(fn))
        fdef, first, sig = self.sources[fn]
        try:
            bound = sig.bind(*node.args, **{k.arg: k.value for k in node.keywords if k.arg})
        except TypeError as exc:
            raise self.error(ctx, node, f"call of {fn.__name__}: {exc}") from None
        local: dict[str, Any] = {}
        for pname, p in sig.parameters.items():
            if pname in bound.arguments:
                arg = bound.arguments[pname]
                if isinstance(arg, ast.Name) and isinstance(ctx.local.get(arg.id), _Table):
                    local[pname] = ctx.local[arg.id]  # a GlobalTable, read as t.A[...] inside
                    continue
                local[pname] = self.value(ctx, arg)
                if isinstance(local[pname], list):
                    raise self.error(ctx, node, f"tuple argument to {fn.__name__}")
            elif p.default is not inspect.Parameter.empty:
                local[pname] = p.default
        if fn in self.inlining:
            chain = " -> ".join(f.__name__ for f in [*self.inlining[self.inlining.index(fn) :], fn])
            raise self.error(ctx, node, f"{fn.__name__} calls itself ({chain}): gtscript functions cannot be recursive (GT4Py refuses it too)")
        # A call whose body only computed a value (no IR line, temporary, hidden parameter or
        # field, and no answer that depends on the lines lowered so far) gives the same value
        # for the same function and arguments (pace's satadjust makes 733 calls of 150 distinct
        # (function, arguments) pairs), the arguments known by their pickled bytes, which tell
        # `1` from `1.0` and `float32(0.1)` from `0.1` (their text does not under NumPy 1).
        # Not in loops or regions, where a value depends on more than its arguments.
        key = None
        if not (self.loop_depth or self.region is not None):
            args = tuple((k, self._bytes(v)) for k, v in local.items())
            key = (fn, args) if all(b is not None for _, b in args) else None
        hit = self.inlined.get(key) if key is not None else None
        if hit is not None:
            # A new tuple per call, as lowering the body makes: callers tell a local's first
            # value from a later one by identity (`func_local`).
            ret = hit if hit[0] in _LEAVES else tuple(list(hit))
            return self.spill(ctx, node, fn, ret)
        inner = _Ctx(fn, first, local)
        before = self._state_size()
        # A chain of distinct functions may be long: the expression nesting is counted per
        # function body, and Python's recursion limit is raised while lowering (`Lowering.lower`).
        self.inlining.append(fn)
        depth, self.depth = self.depth, 0
        try:
            ret = self.func_block(inner, fdef.body, top=True)
        finally:
            self.inlining.pop()
            self.depth = depth
        if ret is None:
            raise self.error(inner, fdef, f"gtscript function {fn.__name__} returns no value")
        if key is not None and isinstance(ret, tuple) and ret and self._state_size() == before:
            self.inlined[key] = ret
        return self.spill(ctx, node, fn, ret)

    def _bytes(self, v: Any) -> bytes | None:
        """`v` pickled (None where it cannot be), kept by identity in `arg_bytes`: a function's
        arguments are often one local's value passed again (expressions are never changed)."""
        hit = self.arg_bytes.get(id(v))
        if hit is not None and hit[0] is v:
            return hit[1]
        buf = io.BytesIO()
        try:
            _ArgPickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(v)
            data: bytes | None = buf.getvalue()
        except Exception:  # noqa: BLE001 - any object a binding may hold; such a call is not kept
            data = None
        self.arg_bytes[id(v)] = (v, data)
        return data

    def _state_size(self) -> tuple[Any, ...]:
        """What a call of a function may change in the lowering besides its value: IR lines,
        temporaries, masks, hidden parameters and fields, and `shifted_local`'s reuses."""
        return (len(self.lines), len(self.temps), self.masks, len(self.table_reads), len(self.index_params), self.k_levels_field, len(self.fields), self.shifted_hits)

    def spill(self, ctx: _Ctx, node: ast.AST, fn: Callable[..., Any], ret: Any) -> Any:
        """A function's value deeper than `_SPILL_DEPTH` or larger than `_SPILL_NODES` nodes (its
        calls inlined, arguments read more than once copied) goes to a temporary of its type,
        read where the call was: so a chain of functions each wrapping the last one's value makes
        a chain of statements, not one expression as deep as the chain (which the IR refuses
        past 200 levels) or as large as 2**n (`sq(sq(...))` with `sq(x) = x * x`). So does a
        value of more than `_SHIFTED_NODES` nodes over a neighbourhood (reads at two or more
        horizontal offsets: PyFV3's PPM slope `dm_jord8plus(q)`), as GT4Py's function
        temporary: its readers take it at several offsets and in several statements, each
        computing the whole neighbourhood again (`yppm.compute_y_flux` at C12: 0.97 -> 0.44 ms
        per call; a point's value, pace's physics, stays in place, where the core's inliner and
        `share_across` already weigh it; so does one inside a region, where the temporary would
        exist only in the region while its readers may take it at neighbouring points). The same
        arithmetic on the same values: done only where the value's type is plain (one float type
        throughout, or a boolean; see `_dtype`), so the temporary holds exactly the value, and
        never for values with reads at run-time K levels (whose guards depend on where they are
        used) or inside `while` loops (whose condition and body statements repeat). The core's
        inliner puts it back where its cost model allows."""
        if self.loop_depth or not (isinstance(ret, tuple) and ret and isinstance(ret[0], str)) or ret[0] in _LEAVES:
            return ret
        depth, size, kread = _shape(ret, self.shapes)
        large = depth > _SPILL_DEPTH or size > _SPILL_NODES
        spread = self.region is None and size > _SHIFTED_NODES and _neighbourhood(ret, self.read_offsets)
        if kread or not (large or spread):
            return ret
        dt = _dtype(self, ret)
        if dt is None:
            return ret
        index = self.typed_temp(f"__{fn.__name__}_value", dt)
        mask = self.statement_mask
        # Under a mask, the call's value is read only where it holds (a masked assignment, a
        # local first assigned there, a nested test and-ed with it): computed only there, as
        # GT4Py's `if` does (pace's icloud took gmlt's `pow` at every point), zero elsewhere.
        self.emit(ctx, node, ("t", index), ret if mask is None else ("sel", mask, ret, ("cast", dt.name, ("c", 0))))
        return ("t", index, (0, 0, 0))

    def func_block(self, inner: _Ctx, body: list[ast.stmt], top: bool, mask: Expr | None = None) -> Any:
        """`func_statements`; under a mask (an `if` branch, a loop body), the locals that read
        as a constant they were assigned in it (`forward`) read their temporaries again after
        it."""
        if mask is None:
            return self.func_statements(inner, body, top, mask)
        inner.forwarding.append(set())
        try:
            return self.func_statements(inner, body, top, mask)
        finally:
            for name in inner.forwarding.pop():
                _unforwarded(inner, name)

    def func_statements(self, inner: _Ctx, body: list[ast.stmt], top: bool, mask: Expr | None) -> Any:
        """Lowers the statements of an inlined function; returns the value of its `return`
        (None if there is none). As in GT4Py, a function's locals are temporaries typed by their
        first assignment (a parameter's: its argument's): a new local assigned once,
        unconditionally, stays an expression (the same thing, computed in place); a local or
        parameter assigned again or inside an `if` becomes a temporary, whose later assignments
        are cast to its type (`z = int_field; z *= 2.5` truncates), and an `if` writes it under a
        mask computed once, like the stencil's `if`."""
        caller = self.statement_mask
        try:
            return self._func_statements(inner, body, top, mask, caller)
        finally:
            self.statement_mask = caller

    def _func_statements(self, inner: _Ctx, body: list[ast.stmt], top: bool, mask: Expr | None, caller: Expr | None) -> Any:
        for s in body:
            self.statement_mask = caller if mask is None else mask
            if isinstance(s, ast.ImportFrom):
                self.import_from(inner, s)
            elif isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) or isinstance(s, ast.Pass):
                continue
            elif self.compile_assert(inner, s):
                continue
            elif isinstance(s, ast.Assign) and len(s.targets) == 1:
                self.func_assign(inner, s, s.targets[0], s.value, mask)
            elif isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name):
                if type(s.op) not in _BINOPS:
                    raise self.error(inner, s, f"augmented assignment with {type(s.op).__name__}")
                value = ast.BinOp(left=_load(s.target), op=s.op, right=s.value)
                ast.copy_location(value, s)
                self.func_assign(inner, s, s.target, value, mask)
            elif isinstance(s, ast.If):
                if self.inlined_test(inner, s.test):
                    ret = self.func_block(inner, s.body if self.const_cond(inner, s.test) else s.orelse, top, mask)
                    if ret is not None:
                        return ret
                    continue
                self.func_if(inner, s, mask)
            elif isinstance(s, ast.Return) and s.value is not None:
                if not top or mask is not None:
                    raise self.error(inner, s, "a return statement inside an if in a gtscript function: GT4Py allows one return statement, at the function's end")
                v = self.value(inner, s.value)
                if isinstance(v, list):
                    return [self.as_expr(inner, s, x) for x in v]
                if _vectors.is_vector(self, v):
                    return _vectors.lift(self, inner, s, v)  # a whole vector, for the caller's expression
                return self.as_expr(inner, s, v)
            elif isinstance(s, ast.With):
                self.func_locals_to_temps(inner, s, s.body)
                if not self.regions(inner, s, lambda: self.func_body(inner, s, s.body, mask, region=True)):
                    raise self.error(inner, s, "a `with` block in a gtscript function (only `with horizontal(region[...])`)")
            elif isinstance(s, ast.While):
                self.func_locals_to_temps(inner, s, s.body)
                self.loop(inner, s, mask, lambda m: self.func_body(inner, s, s.body, m))
            else:
                raise self.error(inner, s, f"{_describe(s) if not isinstance(s, ast.AugAssign) else 'an augmented assignment to a subscript'} in a gtscript function")
        return None

    def func_body(self, inner: _Ctx, s: ast.stmt, body: list[ast.stmt], mask: Expr | None, region: bool = False) -> None:
        """The body of a region or loop in a function. A local first assigned in a loop cannot
        be read after it (it holds a value only as long as the loop ran); one first assigned in
        a region becomes a temporary (`region_local`)."""
        before = {n for n, v in inner.local.items() if not isinstance(v, _Undefined)}
        start = len(self.lines)
        if self.func_block(inner, body, top=False, mask=mask) is not None:
            raise self.error(inner, s, "a return statement inside a region or loop of a gtscript function")
        line = inner.line0 + s.lineno - 1
        for name in sorted(set(inner.local) - before):
            if not (region and self.region_local(inner, s, name, mask, start)):
                inner.local[name] = _Undefined(name, line)

    def region_local(self, inner: _Ctx, s: ast.stmt, name: str, mask: Expr | None, start: int) -> bool:
        """A local first assigned in a horizontal region of a function (PyFV3's ``yt_bl`` and
        ``dm_left`` in ``yppm.bl_br_edges``, assigned in several edge regions and read in a
        later region covering them): as GT4Py's function temporaries, a temporary of its
        value's type, written where the region runs (and its mask holds). Elsewhere GT4Py's
        temporary holds uninitialised memory (zeros where NumPy's allocation is fresh): here it
        holds zero, set before the region (``start`` in the IR lines). False where the value is
        not a plain typed expression (the local stays unreadable after the region)."""
        value = inner.local[name]
        if isinstance(value, _Undefined):
            return False
        if _own_temporary(value, inner):
            return True  # already a temporary of this function, written under the region
        if isinstance(value, list) or _vectors.is_vector(self, value):
            return False
        return self.zero_filled_local(inner, s, name, self.as_expr(inner, s, value), mask, start)

    def zero_filled_local(self, inner: _Ctx, s: ast.stmt, name: str, value: Expr, mask: Expr | None, start: int) -> bool:
        """The local `name` as a temporary of `value`'s type, zero from the IR line `start` on
        (a constant, so it may go before the statements lowered since), `value` where `mask`
        holds (everywhere where it is None). False where the type is not known."""
        dt = _dtype(self, value)
        if dt is None:
            return False
        index = self.typed_temp(f"__{inner.name}_{name}", dt)
        inner.temps.add(index)
        line = inner.line0 + s.lineno - 1
        self.lines.insert(start, (line, ("t", index), ("cast", dt.name, ("c", 0))))
        old: Expr = ("t", index, (0, 0, 0))
        self.emit(inner, s, ("t", index), value if mask is None else ("sel", mask, value, old))
        inner.local[name] = _Ref("t", index)
        return True

    def func_locals_to_temps(self, inner: _Ctx, s: ast.stmt, body: list[ast.stmt]) -> None:
        """Locals a region or loop assigns keep their value where (or when) it does not run:
        each that is still an expression becomes a temporary holding it, first."""
        for name in sorted(_assigned_locals(body)):
            cur = _unforwarded(inner, name)
            if cur is None or isinstance(cur, _Undefined) or _own_temporary(cur, inner):
                continue
            value = self.as_expr(inner, s, cur)
            index = len(self.temps)
            self.temps.append(f"__{inner.name}_{name}{index}")
            inner.temps.add(index)
            self.emit(inner, s, ("t", index), value)
            inner.local[name] = _Ref("t", index)

    def func_assign(self, inner: _Ctx, s: ast.stmt, t: ast.expr, v: ast.expr, mask: Expr | None) -> None:
        if isinstance(t, ast.Name):
            self.func_local(inner, s, t.id, self.expr(inner, v), mask)
        elif isinstance(t, ast.Tuple) and all(isinstance(e, ast.Name) for e in t.elts) and isinstance(v, ast.Tuple) and len(v.elts) == len(t.elts):
            # One assignment after the other, as GT4Py unrolls it: `lo, hi = hi, lo` gives both hi.
            for e, x in zip(t.elts, v.elts):
                self.func_local(inner, s, e.id, self.expr(inner, x), mask)  # type: ignore[attr-defined]
        elif isinstance(t, ast.Tuple) and all(isinstance(e, ast.Name) for e in t.elts):
            vals = self.value(inner, v)
            if not isinstance(vals, list) or len(vals) != len(t.elts):
                raise self.error(inner, s, "tuple assignment needs as many values as targets")
            for e, x in zip(t.elts, vals):
                self.func_local(inner, s, e.id, self.as_expr(inner, s, x), mask)  # type: ignore[attr-defined]
        else:
            raise self.error(inner, s, "assignment to something other than a local name in a gtscript function")

    def func_local(self, inner: _Ctx, s: ast.stmt, name: str, value: Expr, mask: Expr | None) -> None:
        """Assigns `value` to the function local `name` (under `mask` inside an `if`)."""
        inner.written.add(name)
        cur = _unforwarded(inner, name)
        if _own_temporary(cur, inner):
            self.freeze_readers(inner, s, name, cur.index, mask)
            old: Expr = ("t", cur.index, (0, 0, 0))
            self.emit(inner, s, ("t", cur.index), value if mask is None else ("sel", mask, value, old))
            self.forward(inner, s, name, cur, value, mask)
            return
        if isinstance(cur, _Undefined):
            cur = cur.value  # set by the other branch of an `if` (None: by neither)
        if cur is None:
            # A new local: an expression computed in place. Under a mask, the points the mask
            # leaves out are never read: either the other branch assigns them too, or the local
            # cannot be read after the `if`.
            inner.local[name] = value
            if mask is not None:
                inner.masks[name] = (mask, value)
            return
        before = self.as_expr(inner, s, cur)
        dt = _dtype(self, before)
        first = inner.masks.get(name)
        if mask is not None and dt is not None and first is not None and first[1] is cur and _costly(before, {}):
            # Set in one branch of an `if` and now in the other: the first value is read only
            # where its branch's mask holds (elsewhere, outside the `if`, the local is never
            # read), so its math is computed only there (pace's icloud took `psacw`'s exp and
            # log wherever `qlz > QRMIN` failed, the points outside its branch included).
            before = ("sel", first[0], _guard_levels(before, first[0], self.shapes), ("cast", dt.name, ("c", 0)))
        new = value if mask is None else ("sel", mask, value, before)
        if dt is not None and dt == _dtype(self, value) and _shape(new, self.shapes)[1] <= _SPILL_NODES:
            # Same type: no cast, the new value stays an expression.
            inner.local[name] = new
            self.forward(inner, s, name, new, value, mask)
            return
        # Another type, or one this frontend cannot tell: a temporary typed by the earlier value
        # (GT4Py's function temporaries), to which the new one is cast. Also where the new value
        # would grow past `_SPILL_NODES` nodes: under a mask it holds the old value twice (in
        # the value and as the else), so n `if`s reassigning a local made 2**n nodes (18 took
        # 8 s and 24 MB of IR); as a temporary it is read once.
        index = len(self.temps)
        self.temps.append(f"__{inner.name}_{name}{index}")
        inner.temps.add(index)
        ref: Expr = ("t", index, (0, 0, 0))
        first = inner.masks.get(name)
        if first is not None and first[1] is cur:
            # The earlier value is read only where the mask it was assigned under holds.
            self.emit(inner, s, ("t", index), ("sel", first[0], _guard_levels(before, first[0], self.shapes), ref))
        else:
            self.emit(inner, s, ("t", index), before)
        inner.local[name] = _Ref("t", index)
        self.emit(inner, s, ("t", index), value if mask is None else ("sel", mask, value, ref))
        self.forward(inner, s, name, inner.local[name], value, mask)

    def forward(self, inner: _Ctx, s: ast.stmt, name: str, after: Any, value: Expr, mask: Expr | None) -> None:
        """After the local `name` is assigned `value` under `mask` (so that it reads `after`, its
        temporary or a select): where `value` is a constant of the local's type, the rest of the
        branch reads the local as that constant, which is its value wherever the branch's results
        are kept, and `after` again once the branch ends (pace's ``qs_table2_fn`` reassigns
        ``tem0 = tem_lower(1598)`` and takes the table's ``exp`` of it in the same branch: the C
        compiler then folds it, as it does GT4Py's, instead of keeping a call it cannot prove
        constant)."""
        if mask is None or not inner.forwarding or not _constant(value):
            return
        dt = _dtype(self, value)
        if dt is None or dt != _dtype(self, self.as_expr(inner, s, after)):
            return
        inner.local[name] = value
        inner.forwarded[name] = (after, value)
        inner.forwarding[-1].add(name)

    def freeze_readers(self, inner: _Ctx, s: ast.stmt, name: str, index: int, mask: Expr | None) -> None:
        """Before the temporary `index` (the local `name`) is assigned again: the other locals
        that are still expressions reading it get temporaries of their own, holding the value
        they had (`w = z; z = z + 1; return w` returns the old z)."""
        for other, v in list(inner.local.items()):
            if other == name or not (isinstance(v, tuple) and v and v[0] not in ("c", "s")) or index not in _temps_read(v, self.temps_read):
                continue
            t = len(self.temps)
            self.temps.append(f"__{inner.name}_{other}{t}")
            inner.temps.add(t)
            first = inner.masks.get(other)
            if first is not None and first[1] is v:
                # A local first assigned under a mask is read only where it holds (see
                # `func_local`): computed only there (pace's saturation adjustment computed a
                # table's exp for a single index at every point).
                self.emit(inner, s, ("t", t), ("sel", first[0], _guard_levels(v, first[0], self.shapes), ("t", t, (0, 0, 0))))
            else:
                self.emit(inner, s, ("t", t), _guard_levels(v, mask, self.shapes))
            inner.local[other] = _Ref("t", t)

    def func_if(self, inner: _Ctx, s: ast.If, mask: Expr | None) -> None:
        """An `if` on values computed at run time in a gtscript function: its condition is
        computed once, before either branch, into a mask temporary (as for the stencil's `if`,
        and as GT4Py does); the locals the branches assign are selected by it. A local first
        assigned in one branch only cannot be read after the `if` (nor in the other branch)."""
        start = len(self.lines)  # where a local first assigned in one branch starts at zero
        m, m2 = self.branch_masks(inner, s, mask)
        before = {n for n, v in inner.local.items() if not isinstance(v, _Undefined)}
        outer_written = inner.written
        inner.written = set()
        known = self.known_in_branch(inner, s)
        outside = {name: inner.local[name] for name in known}
        inner.local.update(known)
        try:
            self.func_block(inner, s.body, top=False, mask=m)
        finally:
            inner.local.update(outside)
        then = inner.written
        line = inner.line0 + s.lineno - 1
        for name in then - before:
            inner.local[name] = _Undefined(name, line, inner.local[name])
        inner.written = set()
        if m2 is not None:
            self.func_block(inner, s.orelse, top=False, mask=m2)
        other = inner.written
        inner.written = outer_written | then | other
        for name in sorted((then ^ other) - before):
            value = inner.local[name]
            if isinstance(value, _Undefined):
                value = value.value  # the then-branch's value
            if not self.one_branch_local(inner, s, name, value, m if name in then else m2, start):
                inner.local[name] = _Undefined(name, line)

    def known_in_branch(self, inner: _Ctx, s: ast.If) -> dict[str, Expr]:
        """For `if x == c:`, with `x` a local of integer or float type that the branch does not
        assign and `c` a compile-time constant that `x` can equal exactly (not a float zero,
        which -0.0 equals too): `x` is `c`, a literal of `x`'s type, inside the branch (pace's
        ``if i == 1599:`` computes ``tem_upper(i - 1400)`` there, which the C compiler then
        folds, as it does GT4Py's)."""
        t = s.test
        if not (isinstance(t, ast.Compare) and len(t.ops) == 1 and isinstance(t.ops[0], ast.Eq)):
            return {}
        for var, const in ((t.left, t.comparators[0]), (t.comparators[0], t.left)):
            if isinstance(var, ast.Name) and isinstance(inner.local.get(var.id), (tuple, _Ref)) and self.is_const(inner, const):
                break
        else:
            return {}
        name = var.id
        if name in _assigned_locals(s.body):
            return {}
        c = self.const(inner, const)
        dt = _dtype(self, self.as_expr(inner, s, inner.local[name]))
        if dt is None or dt.kind not in "if" or isinstance(c, (bool, np.bool_)):
            return {}
        try:
            v = dt.type(c)
        except (OverflowError, ValueError):
            return {}
        if v != c or (dt.kind == "f" and c == 0):
            return {}
        return {name: self.lit(v)}

    def one_branch_local(self, inner: _Ctx, s: ast.stmt, name: str, value: Any, branch: Expr | None, start: int) -> bool:
        """A local first assigned in one branch of an `if` only (pace's ``r1`` in
        ``compute_rain_fspeed``, ``rh`` in ``icloud``): a temporary of its value's type, zero
        from before the `if` (where ``start`` is in the IR lines) and the branch's value where
        the branch ran. GT4Py's function temporary holds uninitialised memory at the other
        points (zeros where NumPy's allocation is fresh); reading it there gives zero here.
        False where the value's type is not plain (the local stays unreadable after the `if`)."""
        if _own_temporary(value, inner):
            # Already a temporary of this function (a nested `if`'s, zero before it and written
            # under its mask, which holds this branch's): defined at every point.
            inner.local[name] = value
            return True
        if branch is None or isinstance(value, _Ref) or not (isinstance(value, tuple) and value and isinstance(value[0], str)):
            return False
        return self.zero_filled_local(inner, s, name, value, branch, start)  # zero before the `if`


#: A function's value deeper or larger than this goes to a temporary (see `CallsMixin.spill`), and
#: so does a function's local larger than this (`CallsMixin.func_local`): a depth well under the
#: IR's nesting limit (200) and the core inliner's (64), which may inline it back; a size that
#: only the doubling of expressions copied into both sides of a select reaches (ordinary
#: functions with `if`s stay expressions, which the core folds).
_SPILL_DEPTH = 48
_SPILL_NODES = 1024


def _own_temporary(value: Any, inner: _Ctx) -> TypeGuard[_Ref]:
    """Whether a function local's value is a temporary of that function (not an expression, a
    field or another function's temporary): assigning the local writes it."""
    return isinstance(value, _Ref) and value.kind == "t" and value.index in inner.temps


def _assigned_locals(body: list[ast.stmt]) -> set[str]:
    """The local names that the statements of `body` assign, at any depth (a function's locals
    are assigned by assignments only, tuple targets included)."""
    return {
        t.id
        for b in body
        for n in ast.walk(b)
        if isinstance(n, (ast.Assign, ast.AugAssign))
        for t in ([n.target] if isinstance(n, ast.AugAssign) else n.targets)
        for t in ([t] if isinstance(t, ast.Name) else [e for e in getattr(t, "elts", []) if isinstance(e, ast.Name)])
    }


#: `_Ref`'s fields, in the order its constructor takes them (`_ArgPickler`).
_REF_FIELDS = tuple(f.name for f in dataclasses.fields(_Ref))


class _ArgPickler(pickle.Pickler):
    """Pickles an inlined call's argument for `CallsMixin._bytes`: IR expressions (tuples of
    strings, numbers and NumPy scalars), references (`_Ref`, by their fields) and classes by
    name. Any other object (a GlobalTable, a parameter default of some class) is refused: the
    call is then not kept, and no class gets the `__slotnames__` that `copyreg` stores on the
    class of an object pickled by its default reduction."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, (type, np.generic, np.dtype)):
            return NotImplemented  # a global by name; NumPy's own reductions
        if type(obj) is _Ref:
            return _Ref, tuple(getattr(obj, name) for name in _REF_FIELDS)
        raise pickle.PicklingError(f"not an argument value: {type(obj).__name__}")


def _unforwarded(inner: _Ctx, name: str) -> Any:
    """The local `name`'s value, rebound to what it reads outside the branch if it reads as a
    constant forwarded there (`CallsMixin.forward`); unchanged if it was assigned again since."""
    cur = inner.local.get(name)
    forwarded = inner.forwarded.get(name)
    if forwarded is not None and cur is forwarded[1]:
        cur = inner.local[name] = forwarded[0]
    return cur


def _constant(e: Any, budget: int = 64) -> bool:
    """Whether `e` is an expression of literals only (no field, scalar parameter or temporary
    read), of at most `budget` nodes."""
    todo = [e]
    while todo:
        x = todo.pop()
        budget -= 1
        if budget < 0 or not (isinstance(x, tuple) and x and isinstance(x[0], str)):
            return False
        if x[0] == "c":
            continue
        if x[0] in ("f", "t", "s", "kvar", "kabs", "let", "ref"):
            return False
        todo.extend(y for y in x[1:] if not isinstance(y, str))
    return True
