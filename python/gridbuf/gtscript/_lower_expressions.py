"""Lowering of expressions (:class:`ExpressionsMixin`): literals and names, operators,
comparisons and selects, and the reads of fields and temporaries: offsets, data-dim
components, run-time K levels (variable K offsets, ``.at(K=...)``) and ``GlobalTable``
elements."""

from __future__ import annotations

import ast
import itertools
from typing import Any

import numpy as np

from . import _vectors
from ._irtext import _SHIFTED_NODES, Expr, _shape, _temps_read
from ._lower_base import _BINOPS, _CMPOPS, _dtype, _is_axis_value, _LoweringBase
from ._values import K_LEVELS_FIELD, FieldType, _Ctx, _describe, _Ref, _RunTimeComponent, _Table


class ExpressionsMixin(_LoweringBase):
    """Expressions and the reads of fields, temporaries and tables."""

    def expr(self, ctx: _Ctx, node: ast.expr) -> Expr:
        return self.as_expr(ctx, node, self.value(ctx, node))

    def as_expr(self, ctx: _Ctx, node: ast.AST, v: Any) -> Expr:
        if _vectors.is_vector(self, v):
            raise _vectors.scalar_error(self, ctx, node, v)
        if isinstance(v, _Ref):
            if v.kind == "f":
                f = self.fields[v.index]
                if f[1].data_shape and v.comp is None:
                    raise self.error(ctx, node, f"field {f[0]!r} has data dims: read one component, e.g. {f[0]}[0, 0, 0][0]")
                read: Expr = ("f", v.index, v.comp or 0, v.offset)
            else:
                if v.comp is None and v.index in self.temp_vectors:
                    raise self.error(ctx, node, f"temporary {self.temps[v.index].rsplit('__', 1)[0]!r} has data dims: read one component, e.g. tmp[0, 0, 0][0]")
                read = ("t", v.index, v.offset)
            if v.klevel is not None:
                return (v.klevel[0], read, v.klevel[1])  # ("kvar" | "kabs", read, index)
            return read
        if isinstance(v, _RunTimeComponent):
            # The component the index names, chosen among all of them (each read is inside
            # the array; the call checks that the index names one).
            *rest, (_, last) = v.choices
            out: Expr = ("f", v.field, last, v.offset)
            for cond, comp in reversed(rest):
                out = ("sel", cond, ("f", v.field, comp, v.offset), out)
            return out
        if isinstance(v, tuple):
            return v
        if isinstance(v, (bool, int, float, np.number)):
            return self.lit(v)
        raise self.error(ctx, node, f"{_describe(node) if not isinstance(node, ast.Name) else repr(node.id)} is not a value a stencil can compute with ({v!r})")

    def k_level(self) -> Expr:
        """GT4Py's ``K`` as a value (``if K == 2``, ``float(K + offsets)``): the point's level
        counted from the domain's first, an int64 as NumPy's ``arange`` gives it to GT4Py's numpy
        backend. It is read from a hidden K field of level numbers, added here as the program's
        last field, which every call passes in with origin 0 (``GTStencil``)."""
        if self.k_levels_field is None:
            self.k_levels_field = len(self.fields)
            self.fields.append((K_LEVELS_FIELD, FieldType(np.dtype(np.int64), "K", ())))
        return ("f", self.k_levels_field, 0, (0, 0, 0))

    def run_time_component(self, ctx: _Ctx, node: ast.Subscript, base: _Ref) -> _RunTimeComponent | None:
        """``a[0, 0, 0][index]`` with an index that is an integer scalar parameter (GT4Py's data-dim
        index computed at run time), or None when every index is a constant. Each parameter is
        checked at every call to name a component (gridbuf.gtscript.GTStencil): a read or write
        never leaves the field's data dims."""
        elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if all(self.is_const(ctx, e) for e in elts):
            return None
        name, ftype = self.fields[base.index]
        shape = ftype.data_shape
        if len(elts) != len(shape):
            raise self.error(ctx, node, f"{ast.unparse(node)}: field {name!r} has data dims {shape}, indexed with {len(elts)} indices")
        per_dim: list[list[tuple[Expr | None, int]]] = []
        for e, n in zip(elts, shape):
            if self.is_const(ctx, e):
                i = self.const(ctx, e)
                if not isinstance(i, (int, np.integer)) or isinstance(i, bool) or not 0 <= i < n:
                    raise self.error(ctx, node, f"data-dim index {ast.unparse(e)} of field {name!r} with data dims {shape}")
                per_dim.append([(None, int(i))])
                continue
            v = self.value(ctx, e)
            if not (isinstance(v, tuple) and v and v[0] == "s" and self.scalar_types[v[1]].kind in "iu"):
                raise self.error(ctx, node, f"{ast.unparse(node)}: a data-dim index computed at run time must be an integer scalar parameter (checked against the data dims at every call); {ast.unparse(e)!r} is not one")
            sname = self.scalars[v[1]]
            self.index_params[sname] = min(self.index_params.get(sname, n), n)
            per_dim.append([(("eq", v, self.lit(i)), i) for i in range(n)])
        choices = []
        for combo in itertools.product(*per_dim):
            cond: Expr | None = None
            comp = 0
            for (c, i), n in zip(combo, shape):
                comp = comp * n + i
                if c is not None:
                    cond = c if cond is None else ("and", cond, c)
            assert cond is not None  # some index is not a constant
            choices.append((cond, comp))
        return _RunTimeComponent(base.index, base.offset, tuple(choices))

    def value(self, ctx: _Ctx, node: ast.expr) -> Any:
        self.depth += 1
        try:
            if self.depth > 150:
                raise self.error(ctx, node, "expression nested too deeply (more than 150 levels; a flat sum `a + b + c + ...` nests one level per term): split it with temporaries")
            return self._value(ctx, node)
        finally:
            self.depth -= 1

    def _value(self, ctx: _Ctx, node: ast.expr) -> Any:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, (bool, int, float)):
                return self.lit(node.value)
            raise self.error(ctx, node, f"the literal {node.value!r}")
        if isinstance(node, ast.Name):
            v = self.lookup(ctx, node.id, node)
            if isinstance(v, (bool, int, float, np.number)):
                return self.lit(v)
            if isinstance(v, _Table):
                raise self.error(ctx, node, f"GlobalTable {node.id!r} used as a value: read one element, e.g. {node.id}.A[0]")
            if _is_axis_value(v):
                raise self.error(ctx, node, f"the axis position {node.id!r} ({v}) used as a value: axis positions such as I[0] + 1 are bounds of horizontal regions, region[...]")
            if getattr(v, "__gt_axis_name__", None) == "K":
                return self.k_level()
            return v
        if isinstance(node, ast.Attribute):
            if node.attr == "A" and isinstance(self.value(ctx, node.value), _Ref):
                raise self.error(ctx, node, f"{ast.unparse(node)} without an index: read one component, e.g. {ast.unparse(node)}[0]")
            if node.attr == "T" and _vectors.is_vector(self, base := self.value(ctx, node.value)):
                return _vectors.transpose(self, ctx, node, base)
            if self.is_const(ctx, node):
                return self.lit(self.const(ctx, node))
            try:
                return self.const(ctx, node)
            except Exception:  # noqa: BLE001
                raise self.error(ctx, node, f"attribute {ast.unparse(node)!r}") from None
        if isinstance(node, ast.BinOp):
            left, right = self.value(ctx, node.left), self.value(ctx, node.right)
            if isinstance(node.op, ast.MatMult) or _vectors.is_vector(self, left) or _vectors.is_vector(self, right):
                return _vectors.binop(self, ctx, node, left, right)
            op = _BINOPS.get(type(node.op))
            if op is None:
                raise self.error(ctx, node, f"the operator {type(node.op).__name__}")
            if op == "floordiv":
                raise self.error(ctx, node, f"floor division `{ast.unparse(node)}`: GT4Py has no operator //, so nothing to compute it as; write floor(a / b)")
            return (op, self.as_expr(ctx, node.left, left), self.as_expr(ctx, node.right, right))
        if isinstance(node, ast.UnaryOp):
            operand = self.value(ctx, node.operand)
            if _vectors.is_vector(self, operand):
                return _vectors.unary(self, ctx, node, operand)
            a = self.as_expr(ctx, node.operand, operand)
            if isinstance(node.op, ast.USub):
                if a[0] == "c" and isinstance(a[1], bool):
                    raise self.error(ctx, node, "unary minus on a boolean (GT4Py refuses it)")
                return ("c", -a[1]) if a[0] == "c" else ("neg", a)
            if isinstance(node.op, ast.UAdd):
                return a
            if isinstance(node.op, ast.Not):
                return ("not", a)
            raise self.error(ctx, node, f"the operator {type(node.op).__name__}")
        if isinstance(node, ast.BoolOp):
            op = "and" if isinstance(node.op, ast.And) else "or"
            vals = [self.expr(ctx, v) for v in node.values]
            out = vals[0]
            for v in vals[1:]:
                out = (op, out, v)
            return out
        if isinstance(node, ast.Compare):
            if len(node.ops) > 1:
                raise self.error(ctx, node, f"the chained comparison `{ast.unparse(node)}` (GT4Py cannot build one); write `a < b and b < c`")
            left = self.expr(ctx, node.left)
            chain: Any = None
            for cmp, right in zip(node.ops, node.comparators):
                cmp_name = _CMPOPS.get(type(cmp))
                if cmp_name is None:
                    raise self.error(ctx, node, f"the comparison {type(cmp).__name__}")
                r = self.expr(ctx, right)
                term = (cmp_name, left, r)
                chain = term if chain is None else ("and", chain, term)
                left = r
            return chain
        if isinstance(node, ast.IfExp):
            if self.is_const(ctx, node.test):
                # Both branches are computed, in the larger of their types, as in GT4Py.
                return ("sel", ("c", self.const_cond(ctx, node.test)), self.expr(ctx, node.body), self.expr(ctx, node.orelse))
            return ("sel", self.expr(ctx, node.test), self.expr(ctx, node.body), self.expr(ctx, node.orelse))
        if isinstance(node, ast.Subscript):
            return self.subscript(ctx, node)
        if isinstance(node, ast.Call):
            return self.call(ctx, node)
        if isinstance(node, ast.Tuple):
            return [self.value(ctx, e) for e in node.elts]
        raise self.error(ctx, node, f"{_describe(node)} is not supported in a stencil")

    def offsets(self, ctx: _Ctx, node: ast.expr) -> list[int]:
        elts = node.elts if isinstance(node, ast.Tuple) else [node]
        out = []
        for e in elts:
            v = self.const(ctx, e)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise self.error(ctx, node, f"offset {ast.unparse(e)!r}: offsets and data-dim indices are integer constants")
            out.append(int(v))
        return out

    def shifted_local(self, ctx: _Ctx, node: ast.AST, e: Expr) -> Expr:
        """A gtscript function's local `e` (kept as an expression) about to be read at a
        horizontal offset: where it is large, a temporary holding it, computed once per point,
        as GT4Py's function temporary is; the shifted copies of the expression each computed it
        again at their neighbouring point (PyFV3's PPM slope `dm`, 30 nodes read at three J
        offsets through the functions it is passed to: `yppm.compute_y_flux` 0.97 -> 0.44 ms
        per call at C12, GT4Py's gt:cpu_kfirst 0.35). The temporary takes the value the
        expression has here, where the read is (the same values: a function writes no field,
        and a local reading a temporary that is assigned again gets its own first, see
        `freeze_readers`). One temporary serves every offset read of the same expression until
        a temporary it reads is written again. Not inside a region (the temporary would exist
        only there, and the neighbouring point may lie outside), a loop, or for a value of no
        plain type or with reads at run-time K levels (guarded where they are read)."""
        if self.loop_depth or self.region is not None:
            return e
        _, size, kread = _shape(e, self.shapes)
        if size <= _SHIFTED_NODES or kread:
            return e
        hit = self.shifted.get(id(e))
        if hit is not None and hit[0] is e:
            later = {item[1] for item in self.lines[hit[2] :] if isinstance(item, tuple)}
            if not any(t[0] == "f" or t[1] in _temps_read(e, self.temps_read) for t in later):
                self.shifted_hits += 1
                return ("t", hit[1], (0, 0, 0))
        dt = _dtype(self, e)
        if dt is None:
            return e
        index = self.typed_temp(f"__{ctx.name}_local", dt)
        self.emit(ctx, node, ("t", index), e)
        self.shifted[id(e)] = (e, index, len(self.lines))
        return ("t", index, (0, 0, 0))

    def subscript(self, ctx: _Ctx, node: ast.Subscript) -> Any:
        if isinstance(node.value, ast.Attribute) and node.value.attr == "A":
            # `v.A[i]`: GT4Py's absolute data-dim index, read at offset zero.
            inner = node.value.value
            if isinstance(inner, ast.Name) and isinstance(table := ctx.local.get(inner.id), _Table):
                return self.table_read(ctx, node, table)
            base = self.value(ctx, inner)
            if not (isinstance(base, _Ref) and base.kind == "f" and self.fields[base.index][1].data_shape and not base.indexed):
                raise self.error(ctx, node, f"{ast.unparse(node.value)}[...]: `.A` indexes the data dims of a field with data dims")
            base = _Ref("f", base.index, (0, 0, 0), None, True)
        else:
            base = self.value(ctx, node.value)
        if not isinstance(base, _Ref):
            if isinstance(base, tuple) and base and isinstance(base[0], str):
                local_off = self.offsets(ctx, node.slice)
                if local_off in ([0, 0, 0], [0, 0], [0]):
                    return base  # an expression argument of a function read at offset zero
                if len(local_off) == 3 and local_off[2] == 0:
                    # A gtscript function's local (or an argument) kept as an expression, read at
                    # a horizontal offset (pace's `smt5[-1, 0, 0]`): GT4Py's temporary at the
                    # neighbouring point, i.e. the expression with every read shifted there.
                    return _shift(self, ctx, node, self.shifted_local(ctx, node, base), (local_off[0], local_off[1]))
                if len(local_off) == 3:
                    raise self.error(ctx, node, f"{ast.unparse(node)}: a gtscript function's local read at a K offset (GT4Py reads its temporary there, which a sequential computation has not written yet); assign it to a stencil temporary first")
            raise self.error(ctx, node, f"subscript of {ast.unparse(node.value)!r}, which is not a field or temporary")
        if base.klevel is not None and not (base.kind == "f" and self.fields[base.index][1].data_shape and base.comp is None):
            if self.offsets(ctx, node.slice) in ([0, 0, 0], [0, 0], [0]):
                return base  # a read at a run-time K level passed to a function, read at offset zero
            raise self.error(ctx, node, f"{ast.unparse(node)}: an offset on a read at a K level computed at run time")
        named = self.axis_offsets(ctx, node, base)
        if named is not None:
            return _Ref(base.kind, base.index, tuple(a + b for a, b in zip(base.offset, named)), base.comp, True)  # type: ignore[arg-type]
        var = self.var_k_read(ctx, node, base)
        if var is not None:
            return var
        if base.kind == "f" and base.indexed and base.comp is None and base.klevel is None and self.fields[base.index][1].data_shape:
            dyn = self.run_time_component(ctx, node, base)
            if dyn is not None:
                return dyn
        idx = self.offsets(ctx, node.slice)
        if base.kind == "f":
            name, ftype = self.fields[base.index]
            if base.indexed:
                if not ftype.data_shape or base.comp is not None:
                    raise self.error(ctx, node, f"too many subscripts on field {name!r}")
                if len(idx) != len(ftype.data_shape) or any(not 0 <= i < n for i, n in zip(idx, ftype.data_shape)):
                    raise self.error(ctx, node, f"data-dim index {tuple(idx)} of field {name!r} with data dims {ftype.data_shape}")
                comp = 0
                for i, n in zip(idx, ftype.data_shape):
                    comp = comp * n + i
                return _Ref("f", base.index, base.offset, comp, True, base.klevel)
            axes = ftype.axes
            if len(idx) == 3:
                off = tuple(idx)
            elif len(idx) == len(axes):
                full = dict(zip(axes, idx))
                off = (full.get("I", 0), full.get("J", 0), full.get("K", 0))
            else:
                raise self.error(ctx, node, f"field {name!r} with axes {axes} takes {len(axes)} or 3 offsets, got {len(idx)}")
        else:
            shape = self.temp_vectors.get(base.index) if base.comp is None else None
            if base.indexed and shape is not None:
                # A component of a temporary with data dims: its own temporary.
                if len(idx) != len(shape) or any(not 0 <= i < n for i, n in zip(idx, shape)):
                    raise self.error(ctx, node, f"data-dim index {tuple(idx)} of a temporary with data dims {shape}")
                comp = 0
                for i, n in zip(idx, shape):
                    comp = comp * n + i
                return _Ref("t", base.index + comp, base.offset, comp, True)
            if base.indexed:
                raise self.error(ctx, node, f"too many subscripts on temporary {self.temps[base.index]!r}")
            if len(idx) != 3:
                raise self.error(ctx, node, f"temporary {self.temps[base.index]!r} takes 3 offsets, got {len(idx)}")
            off = tuple(idx)
        total = tuple(a + b for a, b in zip(base.offset, off))
        return _Ref(base.kind, base.index, total, base.comp, True)  # type: ignore[arg-type]

    def axis_offsets(self, ctx: _Ctx, node: ast.Subscript, base: _Ref) -> tuple[int, int, int] | None:
        """``a[I + 1, K - 1]``, ``a[K + 1]``, ``a[J]``: GT4Py's offsets by axis name, each index
        an axis of the field (or temporary), alone or plus or minus a constant, in the order
        I, J, K, an axis left out at offset zero; the names are the axes whatever the definition
        binds them to, as in GT4Py. None when no index names an axis (the offsets by position)."""
        if base.indexed:
            return None
        axes = self.fields[base.index][1].axes if base.kind == "f" else self.temp_types.get(base.index, (None, "IJK"))[1]
        elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if not any(isinstance(n, ast.Name) and n.id in axes for e in elts for n in ast.walk(e)):
            return None
        shifts: dict[str, int] = {}
        for e in elts:
            axis, shift = self.axis_shift(ctx, e, axes)
            if shifts and "IJK".index(axis) <= "IJK".index(list(shifts)[-1]):
                what = "twice" if axis in shifts else "out of order (I, then J, then K)"
                raise self.error(ctx, node, f"{ast.unparse(node)}: the axis {axis} is given {what}")
            shifts[axis] = shift
        return (shifts.get("I", 0), shifts.get("J", 0), shifts.get("K", 0))

    def axis_shift(self, ctx: _Ctx, e: ast.expr, axes: str) -> tuple[str, int]:
        """The axis and constant shift of one index of ``a[I + 1, K]``."""
        if isinstance(e, ast.Name) and e.id in axes:
            return e.id, 0
        if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Sub)):
            axis, shift = self.axis_shift(ctx, e.left, axes)
            c = self.const(ctx, e.right)
            if isinstance(c, (int, np.integer)) and not isinstance(c, (bool, np.bool_)):
                return axis, shift + int(c) if isinstance(e.op, ast.Add) else shift - int(c)
        raise self.error(ctx, e, f"the index {ast.unparse(e)!r}: an offset by axis name is an axis of the field ({', '.join(axes)}), alone or plus or minus an integer constant")

    def var_k_read(self, ctx: _Ctx, node: ast.Subscript, base: _Ref) -> _Ref | None:
        """`a[0, 0, idx]` with `idx` an integer expression known only at run time (GT4Py's variable
        K offset: the level of the point plus `idx`); None when every offset is a constant."""
        elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if base.indexed or all(self.is_const(ctx, e) for e in elts):
            return None
        if base.kind == "f":
            name, ftype = self.fields[base.index]
            axes = ftype.axes
        else:
            name, axes = self.temps[base.index], "IJK"
        if len(elts) == 3:
            kpos = 2
        elif len(elts) == len(axes) and "K" in axes:
            kpos = axes.index("K")
        else:
            raise self.error(ctx, node, f"{ast.unparse(node)}: {name!r} with axes {axes} takes {len(axes)} or 3 offsets, got {len(elts)}")
        for n, e in enumerate(elts):
            if n != kpos and not self.is_const(ctx, e):
                raise self.error(ctx, node, f"{ast.unparse(node)}: only the K offset may be computed at run time (GT4Py's variable K offset); the offset {ast.unparse(e)!r} is not a constant")
            if n != kpos and self.offsets(ctx, e) != [0]:
                raise self.error(ctx, node, f"{ast.unparse(node)}: a horizontal offset with a variable K offset (GT4Py drops it and reads at offset zero, so nothing computes this); read at I and J offsets zero")
        return _Ref(base.kind, base.index, (0, 0, 0), base.comp, True, ("kvar", self.expr(ctx, elts[kpos])))

    def at_k(self, ctx: _Ctx, node: ast.Call, base: _Ref) -> _Ref:
        """`a.at(K=k)` or `a.at(K=k, ddim=[...])`: GT4Py's absolute K index, the level `k` (an
        integer expression) counted from the domain's first level, at the point's I and J; read-only."""
        src = ast.unparse(node)
        kws = node.keywords
        if node.args or len(kws) not in (1, 2):
            raise self.error(ctx, node, f"{src}: absolute K index: the syntax is `.at(K=..., ddim=[...])`, the `ddim` argument optional (GT4Py's rule)")
        if kws[0].arg != "K":
            raise self.error(ctx, node, f"{src}: absolute K index: the first argument must be `K`, e.g. `.at(K=...)`")
        if len(kws) > 1 and (kws[1].arg != "ddim" or not isinstance(kws[1].value, ast.List)):
            raise self.error(ctx, node, f"{src}: absolute K index: the second (optional) argument must be `ddim`, a list, e.g. `.at(K=..., ddim=[...])`")
        if isinstance(kws[0].value, ast.Name) and kws[0].value.id in ("I", "J", "K") and kws[0].value.id not in ctx.local:
            raise self.error(ctx, node, f"{src}: absolute K index: an axis cannot be the index (`.at(K=K)` is the field itself)")
        if base.indexed or base.klevel is not None or base.offset != (0, 0, 0):
            raise self.error(ctx, node, f"{src}: `.at(...)` applies to a field or temporary's name, without offsets (GT4Py fails on others)")
        comp = None
        if len(kws) > 1:
            if base.kind != "f" or not self.fields[base.index][1].data_shape:
                raise self.error(ctx, node, f"{src}: ddim indexes the data dims of a field with data dims")
            shape = self.fields[base.index][1].data_shape
            idx = [self.offsets(ctx, e)[0] for e in kws[1].value.elts]  # type: ignore[attr-defined]
            if len(idx) != len(shape) or any(not 0 <= i < n for i, n in zip(idx, shape)):
                raise self.error(ctx, node, f"{src}: data-dim index {tuple(idx)} of a field with data dims {shape}")
            comp = 0
            for i, n in zip(idx, shape):
                comp = comp * n + i
        return _Ref(base.kind, base.index, (0, 0, 0), comp, True, ("kabs", self.expr(ctx, kws[0].value)))

    def table_read(self, ctx: _Ctx, node: ast.Subscript, table: _Table) -> Expr:
        """`t.A[i, j]` at constant indices: a hidden scalar parameter holding that element."""
        elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if not all(self.is_const(ctx, e) for e in elts):
            raise self.error(ctx, node, f"{ast.unparse(node)}: GlobalTable {table.name!r} read at an index known only at run time; gridbuf's IR reads tables at constant indices only")
        idx = tuple(self.offsets(ctx, node.slice))
        shape = table.type.shape
        if len(idx) != len(shape) or any(not 0 <= i < n for i, n in zip(idx, shape)):
            raise self.error(ctx, node, f"{ast.unparse(node)}: index {idx} of GlobalTable {table.name!r} with shape {shape} (indices are from 0, as in GT4Py)")
        name = f"__{table.name}_" + "_".join(map(str, idx))
        if name not in self.table_reads:
            self.table_reads[name] = (table.name, idx)
            self.scalars.append(name)
            self.scalar_types.append(table.type.dtype)
        return ("s", self.scalars.index(name))


def _shift(low: _LoweringBase, ctx: _Ctx, node: ast.AST, e: Expr, off: tuple[int, int]) -> Expr:
    """``e`` with every field and temporary read moved by the horizontal offset ``off``: its value
    at the neighbouring point. Reads at run-time K levels cannot move horizontally (GT4Py drops
    such offsets), so an expression holding one is refused."""
    tag = e[0]
    if tag == "f":
        di, dj, dk = e[3]
        return ("f", e[1], e[2], (di + off[0], dj + off[1], dk))
    if tag == "t":
        di, dj, dk = e[2]
        return ("t", e[1], (di + off[0], dj + off[1], dk))
    if tag in ("s", "c"):
        return e
    if tag in ("kvar", "kabs"):
        raise low.error(ctx, node, f"{ast.unparse(node)}: the value read at a horizontal offset holds a read at a K level computed at run time, which GT4Py reads at offset zero; assign it to a stencil temporary first")
    return tuple(_shift(low, ctx, node, a, off) if isinstance(a, tuple) else a for a in e)
