"""Lowering of statements and control flow (:class:`StatementsMixin`): the top level
(``with computation(...), interval(...)``, imports of externals, ``compile_assert``),
intervals, assignments and their targets, typed temporaries, ``if`` as masked assignments,
``while`` loops and ``with horizontal(region[...])`` blocks, and each statement written out as an
IR line."""

from __future__ import annotations

import ast
import itertools
from collections.abc import Callable
from typing import Any

import numpy as np

from . import _regions, _vectors
from ._gt4py_objects import native
from ._irtext import _LEAVES, IR_MAX_DEPTH, Expr, _costly, _kreads_any, _shape
from ._lower_base import _BINOPS, _dtype, _is_axis_value, _load, _LoweringBase
from ._values import FieldType, _annotation_namespace, _Ctx, _describe, _Ref, _RunTimeComponent


class StatementsMixin(_LoweringBase):
    """Statements and control flow of a stencil definition."""

    def top_stmt(self, ctx: _Ctx, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.ImportFrom):
            self.import_from(ctx, stmt)
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
            pass  # docstring
        elif isinstance(stmt, ast.Pass):
            pass
        elif self.compile_assert(ctx, stmt):
            pass
        elif isinstance(stmt, ast.With):
            self.with_block(ctx, stmt, None)
        elif isinstance(stmt, ast.AnnAssign):
            self.top_declare(ctx, stmt)
        elif isinstance(stmt, ast.If) and self.inlined_test(ctx, stmt.test):
            for s in stmt.body if self.const_cond(ctx, stmt.test) else stmt.orelse:
                self.top_stmt(ctx, s)
        else:
            raise self.error(ctx, stmt, f"{_describe(stmt) if not isinstance(stmt, (ast.Assign, ast.AugAssign, ast.If)) else 'a statement'} outside a `with computation(...), interval(...)` block")

    def compile_assert(self, ctx: _Ctx, stmt: ast.stmt) -> bool:
        """``compile_assert(COND)`` as a statement: checked now (a false one is a definition error
        naming the line, as GT4Py's GTScriptAssertionError); True if ``stmt`` was one."""
        if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and self.call_name(ctx, stmt.value) == "compile_assert"):
            return False
        call = stmt.value
        if len(call.args) != 1 or call.keywords:
            raise self.error(ctx, stmt, "invalid assertion: the syntax is compile_assert(condition)")
        src = ast.unparse(call.args[0])
        v = self.py_const(ctx, call.args[0], "compile_assert")
        if not v:
            raise self.error(ctx, stmt, f"compile_assert({src}) failed")
        return True

    def inlined_test(self, ctx: _Ctx, test: ast.expr) -> bool:
        """True if an ``if`` test is decided now: a constant, or ``__INLINED(...)`` (which must be
        a constant: GT4Py fails such a definition too)."""
        if isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "__INLINED":
            if len(test.args) != 1 or test.keywords:
                raise self.error(ctx, test, "__INLINED takes one argument")
            self.py_const(ctx, test.args[0], "__INLINED")
            return True
        return self.is_const(ctx, test)

    def import_from(self, ctx: _Ctx, stmt: ast.ImportFrom) -> None:
        if stmt.module == "__gtscript__":
            return
        if stmt.module != "__externals__":
            raise self.error(ctx, stmt, f"import from {stmt.module!r}: only `from __externals__ import ...` is allowed")
        for alias in stmt.names:
            if alias.name not in self.externals:
                raise self.error(ctx, stmt, f"external {alias.name!r} is not given (pass externals={{{alias.name!r}: ...}})")
            ctx.local[alias.asname or alias.name] = self.external_value(ctx, stmt, alias.name)

    def external_value(self, ctx: _Ctx, node: ast.AST, name: str) -> Any:
        v = native(self.externals[name])
        if isinstance(v, (bool, int, float, np.number)):
            return self.lit(v)
        if callable(v) or _is_axis_value(v):
            return v  # axis positions (I[0] + 1): bounds of regions, refused as values
        raise self.error(ctx, node, f"external {name!r} is {v!r}: externals are numbers, booleans or gtscript functions")

    def call_name(self, ctx: _Ctx, node: ast.expr) -> Any:
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name):
                return f.id
            if isinstance(f, ast.Attribute):
                return f.attr
        return None

    def with_block(self, ctx: _Ctx, stmt: ast.With, order: str | None) -> None:
        items = [i.context_expr for i in stmt.items]
        self.refuse_horizontal(ctx, stmt)
        comp = [i for i in items if self.call_name(ctx, i) == "computation"]
        intv = [i for i in items if self.call_name(ctx, i) == "interval"]
        if len(comp) + len(intv) != len(items) or len(comp) > 1 or len(intv) > 1:
            raise self.error(ctx, stmt, "a `with` statement takes computation(...) and/or interval(...)")
        if comp:
            if order is not None:
                raise self.error(ctx, stmt, "computation(...) inside another computation")
            c = comp[0]
            assert isinstance(c, ast.Call)  # call_name() names only calls
            if len(c.args) != 1 or not isinstance(c.args[0], (ast.Name, ast.Attribute)):
                raise self.error(ctx, stmt, "computation takes PARALLEL, FORWARD or BACKWARD")
            o = c.args[0].id if isinstance(c.args[0], ast.Name) else c.args[0].attr
            if o not in ("PARALLEL", "FORWARD", "BACKWARD"):
                raise self.error(ctx, stmt, f"unknown iteration order {o!r}: expected PARALLEL, FORWARD or BACKWARD")
            order = o
            self.lines.append(f"comp {o}")
            if not intv:
                # Nested `with interval(...)` blocks: run in iteration order.
                blocks = []
                for s in stmt.body:
                    if isinstance(s, ast.With):
                        self.refuse_horizontal(ctx, s)
                    if not (isinstance(s, ast.With) and all(self.call_name(ctx, i.context_expr) == "interval" for i in s.items)):
                        raise self.error(ctx, s, "inside `with computation(...)` only `with interval(...)` blocks are allowed")
                    blocks.append((self.interval(ctx, s.items[0].context_expr), s))
                if o == "BACKWARD":
                    blocks.sort(key=lambda b: (b[0][2], b[0][3]), reverse=True)
                else:
                    blocks.sort(key=lambda b: (b[0][0], b[0][1]))
                for bounds, s in blocks:
                    self.emit_interval(ctx, bounds, s.body)
                return
        if order is None:
            raise self.error(ctx, stmt, "interval(...) outside computation(...)")
        self.emit_interval(ctx, self.interval(ctx, intv[0]), stmt.body)

    def interval(self, ctx: _Ctx, call: ast.expr) -> tuple[int, int, int, int]:
        """(start from_end, start offset, end from_end, end offset)."""
        assert isinstance(call, ast.Call)
        args = call.args
        if len(args) == 1 and isinstance(args[0], ast.Constant) and args[0].value is Ellipsis:
            return (0, 0, 1, 0)
        if len(args) != 2 or call.keywords:
            raise self.error(ctx, call, "interval takes `...` or (start, end)")
        for a in args:
            self.runtime_bound(ctx, call, a)
        s, e = (self.const(ctx, a) for a in args)
        for v in (s, e):
            if v is not None and not isinstance(v, (int, np.integer)):
                raise self.error(ctx, call, f"interval bound {v!r}: expected an int or None")
        if s is None:
            s = 0
        start = (1, int(s)) if s < 0 else (0, int(s))
        end = (1, 0) if e is None else ((1, int(e)) if e < 0 or (e == 0 and s < 0) else (0, int(e)))
        return (*start, *end)

    def runtime_bound(self, ctx: _Ctx, call: ast.expr, bound: ast.expr) -> None:
        """Refuses an interval bound known only at run time (a scalar parameter or a field)."""
        for n in ast.walk(bound):
            if isinstance(n, ast.Name) and n.id in ctx.local and isinstance(ctx.local[n.id], (_Ref, tuple)) and not (isinstance(ctx.local[n.id], tuple) and ctx.local[n.id][0] == "c"):
                raise self.error(
                    ctx, call,
                    f"interval bound {ast.unparse(bound)!r} is known only at run time ({n.id!r} is a parameter or temporary): "
                    "GT4Py's numpy backend cannot run such intervals and gridbuf refuses them; pass the bound as an external",
                )  # fmt: skip

    def refuse_horizontal(self, ctx: _Ctx, stmt: ast.With) -> None:
        for i in stmt.items:
            if self.call_name(ctx, i.context_expr) == "horizontal":
                raise self.error(ctx, stmt, f"`with {ast.unparse(i.context_expr)}` outside an interval: horizontal regions go inside `with computation(...), interval(...)`")

    def emit_interval(self, ctx: _Ctx, bounds: tuple[int, int, int, int], body: list[ast.stmt]) -> None:
        se, so, ee, eo = bounds
        self.lines.append(f"interval {'E' if se else 'S'} {so} {'E' if ee else 'S'} {eo}")
        for s in body:
            self.stmt(ctx, s, None)

    def stmt(self, ctx: _Ctx, s: ast.stmt, mask: Expr | None) -> None:
        outer, self.statement_mask = self.statement_mask, mask
        try:
            self._stmt(ctx, s, mask)
        finally:
            self.statement_mask = outer

    def _stmt(self, ctx: _Ctx, s: ast.stmt, mask: Expr | None) -> None:
        if isinstance(s, ast.Assign):
            if len(s.targets) != 1:
                raise self.error(ctx, s, "chained assignment (a = b = ...)")
            self.assign(ctx, s, s.targets[0], s.value, mask)
        elif isinstance(s, ast.AugAssign):
            op = _BINOPS.get(type(s.op))
            if op is None:
                raise self.error(ctx, s, f"augmented assignment with {type(s.op).__name__}")
            value = ast.BinOp(left=_load(s.target), op=s.op, right=s.value)
            ast.copy_location(value, s)
            self.assign(ctx, s, s.target, value, mask)
        elif isinstance(s, ast.AnnAssign) and s.value is not None:
            self.declare(ctx, s)
            self.assign(ctx, s, s.target, s.value, mask)
        elif isinstance(s, ast.If):
            if self.inlined_test(ctx, s.test):
                for b in s.body if self.const_cond(ctx, s.test) else s.orelse:
                    self.stmt(ctx, b, mask)
                return
            # The condition is evaluated once per point, before either branch runs (GT4Py's
            # rule): a branch may write what the condition reads, so both masks are computed
            # from the one value stored here.
            m, m2 = self.branch_masks(ctx, s, mask)
            for b in s.body:
                self.stmt(ctx, b, m)
            for b in s.orelse:
                self.stmt(ctx, b, m2)
        elif isinstance(s, ast.ImportFrom):
            self.import_from(ctx, s)
        elif isinstance(s, ast.Pass):
            pass
        elif isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant):
            pass
        elif self.compile_assert(ctx, s):
            pass
        elif isinstance(s, ast.With):
            if not self.regions(ctx, s, lambda: self.block(ctx, s.body, mask)):
                raise self.error(ctx, s, "a `with` block inside an interval (only `with horizontal(region[...])`)")
        elif isinstance(s, ast.While):
            self.loop(ctx, s, mask, lambda m: self.block(ctx, s.body, m))
        else:
            raise self.error(ctx, s, f"{_describe(s)} is not supported in a stencil")

    def block(self, ctx: _Ctx, body: list[ast.stmt], mask: Expr | None) -> None:
        for b in body:
            self.stmt(ctx, b, mask)

    def declared_type(self, ctx: _Ctx, s: ast.AnnAssign) -> tuple[str, Any]:
        """The name a typed temporary's declaration names, and its annotation's value."""
        if not isinstance(s.target, ast.Name):
            raise self.error(ctx, s, "an annotation on something other than a temporary's name")
        name = s.target.id
        try:
            ann = eval(compile(ast.Expression(s.annotation), "<annotation>", "eval"), dict(_annotation_namespace(), **ctx.globals), dict(self.dtypes))  # noqa: S307 - the user's own annotation
        except Exception as exc:  # noqa: BLE001
            raise self.error(ctx, s, f"annotation {ast.unparse(s.annotation)!r} of {name!r} cannot be evaluated ({exc})") from None
        return name, self.annotation(ctx, s, ann)

    def top_declare(self, ctx: _Ctx, s: ast.AnnAssign) -> None:
        """A temporary declared before the computations, as GT4Py allows: ``tmp: Field[float] = 0``
        or, with data dims, ``tmp: Field[(np.float32, (2, 2))] = 0``; IJK only. Each component is
        a temporary of its own (component ``c``, row-major, is the first one's index + ``c``). An
        initial value, a number, is assigned to every component at every level by a PARALLEL
        computation placed here, as GT4Py's frontend puts one before the others."""
        name, ann = self.declared_type(ctx, s)
        if not isinstance(ann, FieldType):
            raise self.error(ctx, s, f"temporary {name!r} annotated {ast.unparse(s.annotation)} before the computations: a temporary declared there is a Field[...] (IJK, data dims allowed); declare a scalar-typed one inside a computation")
        if ann.axes != "IJK":
            raise self.error(ctx, s, f"temporary {name!r}: Found {ann.axes}, but only IJK is currently supported for temporaries declared before the computations")
        if name in ctx.local or name in self.params:
            raise self.error(ctx, s, f"annotation on {name!r}, which is not a new temporary")
        dt = self.dtype_of(ctx, s, ann.symbol or ann.dtype, f"temporary {name!r}")
        shape = tuple(ann.data_shape)
        base = len(self.temps)
        components = list(itertools.product(*(range(n) for n in shape)))
        for c, idx in enumerate(components):
            self.temp_types[base + c] = (dt, "IJK")
            self.temps.append(f"{name}__{'_'.join(map(str, idx))}" if shape else name)
        if shape:
            self.temp_vectors[base] = shape
        ctx.local[name] = _Ref("t", base)
        if s.value is None:
            return
        if not (isinstance(s.value, ast.Constant) and isinstance(s.value.value, (bool, int, float))):
            raise self.error(ctx, s, f"initial value {ast.unparse(s.value)} of temporary {name!r}: a number (GT4Py's rule)")
        zero = ast.Tuple([ast.Constant(0)] * 3, ast.Load())
        targets: list[ast.expr] = [ast.Subscript(ast.Subscript(ast.Name(name, ast.Load()), zero, ast.Load()), ast.Tuple([ast.Constant(i) for i in idx], ast.Load()), ast.Store()) for idx in components] if shape else [ast.Name(name, ast.Store())]
        init = ast.With(
            items=[
                ast.withitem(ast.Call(ast.Name("computation", ast.Load()), [ast.Name("PARALLEL", ast.Load())], [])),
                ast.withitem(ast.Call(ast.Name("interval", ast.Load()), [ast.Constant(...)], [])),
            ],
            body=[ast.Assign([t], s.value) for t in targets],
        )
        for node in ast.walk(init):
            ast.copy_location(node, s)
        self.with_block(ctx, init, None)

    def declare(self, ctx: _Ctx, s: ast.AnnAssign) -> None:
        """A typed temporary: `tmp: np.float32 = ...` or a 2-D one, `tmp: Field[IJ, np.float64] = ...`."""
        name, ann = self.declared_type(ctx, s)
        axes = "IJK"
        if isinstance(ann, FieldType):
            if ann.axes == "IJK" and not ann.data_shape:
                raise self.error(ctx, s, f"temporary {name!r} declared Field[...] with dims IJK: GT4Py types Field temporaries as IJ only; declare a 3-D one as `{name}: np.float64 = ...`")
            if ann.axes not in ("IJK", "IJ") or ann.data_shape:
                # The words GT4Py's frontend uses (its tests match them).
                raise self.error(ctx, s, f"temporary {name!r} declared with axes {ann.axes} and data dims {ann.data_shape}: Typed temporaries must be IJ, without data dims, inside a computation (an IJK one with data dims is declared before the first `with computation`)")
            axes = ann.axes
            ann = ann.symbol or ann.dtype
        dt = self.dtype_of(ctx, s, ann, f"temporary {name!r}")
        cur = ctx.local.get(name)
        if isinstance(cur, _Ref) and cur.kind == "t":
            if self.temp_types.get(cur.index, (None, "IJK")) != (dt, axes):
                raise self.error(ctx, s, f"temporary {name!r} declared again with another type ({dt}, {axes})")
            return
        if cur is not None or name in self.params:
            raise self.error(ctx, s, f"annotation on {name!r}, which is not a new temporary")
        index = len(self.temps)
        self.temps.append(name)
        ctx.local[name] = _Ref("t", index)
        self.temp_types[index] = (dt, axes)

    def branch_masks(self, ctx: _Ctx, s: ast.If, mask: Expr | None) -> tuple[Expr, Expr | None]:
        """The masks of the branches of `s` (the second None without an ``else``) inside a block
        under `mask`, from the test stored once. A test that calls a math function or reads at
        run-time K levels is computed only where `mask` holds (``sel mask test False``), as
        GT4Py's compiled backends test a nested ``if`` inside the outer one: tested at every
        point, a condition reading a function's local made the core compute the local's
        ``exp`` and ``log`` at every point (pace's ``warm_rain`` tests ``qsat`` under
        ``qr > QRMIN``), and a run-time K read raised where the outer test excludes it. Any
        other test is and-ed with `mask` (the core computes both at every point in vectorised
        code, where a select of truths cost pace's ``fix_neg_water`` 1.7x)."""
        value = self.expr(ctx, s.test)
        # `sel c True False`: the types pass checks that `c` is a boolean, at this line.
        test: Expr = ("sel", value, ("c", True), ("c", False))
        if mask is not None and (_costly(value, {}) or _kreads_any(value, {})):
            m = self.new_mask(ctx, s, ("sel", mask, test, ("c", False)))
            return m, (self.new_mask(ctx, s, ("and", mask, ("not", m))) if s.orelse else None)
        cond = self.new_mask(ctx, s, test)
        m = cond if mask is None else self.new_mask(ctx, s, ("and", mask, cond))
        if not s.orelse:
            return m, None
        notc = ("not", cond)
        return m, self.new_mask(ctx, s, notc if mask is None else ("and", mask, notc))

    def new_mask(self, ctx: _Ctx, node: ast.AST, cond: Expr) -> Expr:
        name = f"__mask{self.masks}"
        self.masks += 1
        t = len(self.temps)
        self.temps.append(name)
        self.emit(ctx, node, ("t", t), cond)
        return ("t", t, (0, 0, 0))

    def assign(self, ctx: _Ctx, node: ast.stmt, target: ast.expr, value: ast.expr, mask: Expr | None) -> None:
        if isinstance(target, ast.Tuple):
            if isinstance(value, ast.Tuple) and len(value.elts) == len(target.elts):
                vals = [self.value(ctx, v) for v in value.elts]
            else:
                v = self.value(ctx, value)
                if not isinstance(v, list) or len(v) != len(target.elts):
                    raise self.error(ctx, node, "tuple assignment needs as many values as targets")
                vals = self.saved_before_stores(ctx, node, target.elts, v)
            for t, v in zip(target.elts, vals):
                self.store(ctx, node, t, v, mask)
            return
        self.store(ctx, node, target, self.value(ctx, value), mask)

    def saved_before_stores(self, ctx: _Ctx, node: ast.stmt, targets: list[ast.expr], values: list[Any]) -> list[Any]:
        """A function's returned values, each saved in a new temporary when it reads a target that
        the tuple assignment writes before it.

        The values are expressions over the caller's fields (the function's locals are folded
        into them), so storing them one by one would let ``b, a = f(a, b)`` compute ``a`` from the
        new ``b``. GT4Py computes every returned value before assigning any target.
        """
        written: set[tuple[str, int]] = set()
        saved: list[Any] = []
        for target, value in zip(targets, values):
            if written and not _vectors.is_vector(self, value) and _reads(value) & written:
                t = len(self.temps)
                self.temps.append(f"__ret{t}")
                self.emit(ctx, node, ("t", t), self.as_expr(ctx, node, value))
                value = ("t", t, (0, 0, 0))
            saved.append(value)
            name = target.value if isinstance(target, ast.Subscript) else target
            ref = ctx.local.get(name.id) if isinstance(name, ast.Name) else None
            if isinstance(ref, _Ref):
                written.add((ref.kind, ref.index))
        return saved

    def store(self, ctx: _Ctx, node: ast.stmt, target: ast.expr, value: Any, mask: Expr | None) -> None:
        if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) and target.value.id not in ctx.local and target.value.id not in self.params:
            # A new temporary first written at an offset (`tmp[0, 0, 1] = ...`, as GT4Py allows).
            ctx.local[target.value.id] = _Ref("t", len(self.temps))
            self.temps.append(target.value.id)
        whole = self.whole_vector_target(ctx, target)
        if whole is not None:  # a data-dim field written whole: one statement per component
            _vectors.assign(self, ctx, node, whole, value, mask)
            return
        if _vectors.is_vector(self, value):
            raise _vectors.target_error(self, ctx, node, target, value)
        value = self.as_expr(ctx, node, value)
        comp: int | None = 0
        if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Attribute) and target.value.attr == "A":
            raise self.error(ctx, node, f"assignment to {ast.unparse(target)}: writing through `.A` (absolute data-dim index) is forbidden, as in GT4Py")
        koff = 0
        kindex: Expr | None = None
        if isinstance(target, ast.Subscript):
            ref = self.value(ctx, target)
            if isinstance(ref, _RunTimeComponent):
                self.store_run_time_component(ctx, node, ref, value, mask)
                return
            if not isinstance(ref, _Ref):
                raise self.error(ctx, node, "assignment to a subscript of something that is not a field")
            name = self.fields[ref.index][0] if ref.kind == "f" else self.temps[ref.index]
            if ref.klevel is not None and ref.klevel[0] != "kvar":
                raise self.error(ctx, node, f"assignment to {name!r} through .at(K=...): GT4Py reads absolute K indices only")
            kindex = ref.klevel[1] if ref.klevel is not None else None
            if ref.offset[:2] != (0, 0):
                raise self.error(ctx, node, f"writing {name!r} at the offset {ref.offset}: assignments at non-zero I or J offsets are not supported (GT4Py's rule)")
            koff = ref.offset[2]
            kind, index, comp = ref.kind, ref.index, ref.comp
            if (kind == "f" and self.fields[index][1].data_shape and comp is None) or (kind == "t" and comp is None and index in self.temp_vectors):
                raise self.error(ctx, node, f"{name!r} has data dims: write one component, e.g. {name}[0, 0, 0][0]")
            comp = comp or 0
        elif isinstance(target, ast.Name):
            name = target.id
            cur = ctx.local.get(name)
            if isinstance(cur, _Ref):
                kind, index = cur.kind, cur.index
                if (kind == "f" and self.fields[index][1].data_shape) or (kind == "t" and index in self.temp_vectors):
                    raise self.error(ctx, node, f"{'field' if kind == 'f' else 'temporary'} {name!r} has data dims: write one component, e.g. {name}[0, 0, 0][0]")
            elif isinstance(cur, tuple) and cur and cur[0] == "s":
                raise self.error(ctx, node, f"assignment to the scalar parameter {name!r}")
            elif name in self.params:
                raise self.error(ctx, node, f"assignment to parameter {name!r}")
            else:
                kind, index = "t", len(self.temps)
                self.temps.append(name)
                ctx.local[name] = _Ref("t", index)
        else:
            raise self.error(ctx, node, f"assignment to {_describe(target)}")
        if kind == "f" and self.fields[index][1].axes in ("IK", "JK", "I", "J"):
            name, ft = self.fields[index]
            raise self.error(ctx, node, f"assignment to field {name!r} with axes {ft.axes}: GT4Py writes only fields with the I and J axes (and K in PARALLEL computations)")
        tgt: tuple = (kind, index, comp) if kind == "f" else ("t", index)
        if kindex is not None:
            # `a[0, 0, idx] = value`: written at the point's level plus `idx`, computed at run
            # time (FORWARD and BACKWARD). Under a mask, a point where it is not set writes its
            # own level with the value it has there (no change, no other level touched, as
            # GT4Py's compiled backends skip it).
            self.note_access(kindex, None)
            self.note_access(value, tgt)
            if mask is not None:
                kindex = ("sel", mask, kindex, ("c", 0))
                old = ("f", index, comp, (0, 0, 0)) if kind == "f" else ("t", index, (0, 0, 0))
                value = ("sel", mask, value, old)
            self.emit(ctx, node, ("kv", _guard_levels(kindex, None, self.shapes), tgt), value, noted=True)
            return
        self.note_access(value, tgt)
        if mask is not None:
            old = ("f", index, comp, (0, 0, koff)) if kind == "f" else ("t", index, (0, 0, koff))
            value = ("sel", mask, value, old)
        self.emit(ctx, node, ("k", koff, tgt) if koff else tgt, value, noted=True)

    def store_run_time_component(self, ctx: _Ctx, node: ast.stmt, ref: _RunTimeComponent, value: Expr, mask: Expr | None) -> None:
        """``out[0, 0, 0][index] = value``: one statement per component the index may name, each
        writing ``value`` where the index names it and keeping the old value elsewhere (only one
        changes, so none reads another's new value)."""
        name, ft = self.fields[ref.field]
        if ref.offset != (0, 0, 0):
            raise self.error(ctx, node, f"writing {name!r} at the offset {ref.offset} with a data-dim index computed at run time")
        if ft.axes in ("IK", "JK", "I", "J"):
            raise self.error(ctx, node, f"assignment to field {name!r} with axes {ft.axes}: GT4Py writes only fields with the I and J axes (and K in PARALLEL computations)")
        for cond, comp in ref.choices:
            tgt = ("f", ref.field, comp)
            self.note_access(value, tgt)
            where = cond if mask is None else ("and", mask, cond)
            self.emit(ctx, node, tgt, ("sel", where, value, ("f", ref.field, comp, (0, 0, 0))), noted=True)

    def whole_vector_target(self, ctx: _Ctx, target: ast.expr) -> int | None:
        """The index of the data-dim field that ``target`` writes whole (``out``, ``out[0, 0, 0]``), if any."""
        ref = self.value(ctx, target) if isinstance(target, ast.Subscript) else ctx.local.get(target.id) if isinstance(target, ast.Name) else None
        if isinstance(ref, _Ref) and ref.kind == "f" and ref.comp is None and self.fields[ref.index][1].data_shape and ref.offset == (0, 0, 0):
            return ref.index
        return None

    def emit(self, ctx: _Ctx, node: ast.AST, target: tuple, value: Expr, noted: bool = False) -> None:
        line = ctx.line0 + getattr(node, "lineno", 1) - 1
        if not noted:
            self.note_access(value, target)
        if target[0] == "t" and target[1] not in self.temp_types and target[1] not in self.known_types:
            if (dt := _dtype(self, value)) is not None:  # the plain type of its first value
                self.known_types[target[1]] = dt
        depth = _shape(value, self.shapes)[0]
        if depth > IR_MAX_DEPTH:
            raise self.error(ctx, node, f"an expression nested {depth} levels deep (gtscript functions inlined): the IR takes at most {IR_MAX_DEPTH}; assign a part of it to a temporary")
        value = _guard_levels(value, None, self.shapes)
        if self.region is not None:
            self.lines.append(f"region {self.region}")
        else:
            t = target[2] if target[0] in ("k", "kv") else target  # ("k", dk, target): at a K offset; ("kv", index, target): at a run-time one
            self.written_outside.add((t[0], t[1]))
        self.lines.append((line, target, value))

    def regions(self, ctx: _Ctx, s: ast.With, body: Callable[[], None]) -> bool:
        """``with horizontal(region[...], ...)``: ``body`` lowered once per region, each
        statement restricted to it (GT4Py's HorizontalIf per region: overlapping regions run
        the body twice where they overlap). False if ``s`` is another ``with``."""
        regions = _regions.horizontal(self, ctx, s)
        if regions is None:
            return False
        if self.region is not None:
            raise self.error(ctx, s, "a horizontal region inside another one")
        start = len(self.lines)
        written = set(self.written_outside)
        try:
            for r in regions:
                self.region = r
                body()
        finally:
            self.region = None
        _regions.check_offsets(self, ctx, s, self.lines[start:], written)
        return True

    def loop(self, ctx: _Ctx, s: ast.While, mask: Expr | None, body: Callable[[Expr], None]) -> None:
        """``while cond:``: the condition goes to a mask temporary (under the enclosing mask),
        the body is lowered under that mask between the IR's ``while`` and ``endwhile``; the
        core runs it again while any point has the mask set."""
        if s.orelse:
            raise self.error(ctx, s, "a while loop with an else branch")
        if self.inlined_test(ctx, s.test):
            if self.const_cond(ctx, s.test):
                raise self.error(ctx, s, f"`while {ast.unparse(s.test)}:` never ends (its condition is a constant)")
            return  # never runs
        if self.region is not None:
            raise self.error(ctx, s, "a while loop inside a horizontal region: GT4Py's numpy backend never ends it (it tests the condition outside the region too)")
        # One statement computes the mask (the core runs it again before every pass).
        self.loop_depth += 1
        try:
            cond: Expr = ("sel", self.expr(ctx, s.test), ("c", True), ("c", False))
            m = self.new_mask(ctx, s, cond if mask is None else ("and", mask, cond))
            self.lines.append("while")
            start = len(self.lines)
            body(m)
        finally:
            self.loop_depth -= 1
        if not any(isinstance(item, tuple) for item in self.lines[start:]):
            raise self.error(ctx, s, "a while loop whose body assigns nothing: it never ends where its condition holds")
        self.lines.append("endwhile")


def _guard_levels(e: Any, cond: Expr | None, shapes: dict[int, tuple[Any, tuple[int, int, bool]]]) -> Any:
    """Reads at run-time K levels in a value that is thrown away (the branch of a select not
    taken, the right operand of an `and` whose left is false: masked assignments, `if`, `while`)
    read their own level instead: their level may be out of range there without being an error.
    GT4Py's compiled backends never compute such values; its numpy backend computes them from a
    level clipped into the array, and throws them away too. A part with no such read is returned
    as it is, not copied, so the parts the lowering's expressions share stay shared (whether a
    part has one: `_shape`, with the lowering's memo `shapes`)."""
    if not (isinstance(e, tuple) and e) or e[0] in _LEAVES or not _shape(e, shapes)[2]:
        return e
    if e[0] in ("kvar", "kabs"):
        index = _guard_levels(e[2], cond, shapes)
        if cond is not None:
            index = ("sel", cond, index, ("c", 0))
        return (e[0], e[1], index)
    both = (lambda a, b: b if a is None else ("and", a, b))
    if e[0] == "sel":
        c = _guard_levels(e[1], cond, shapes)
        return ("sel", c, _guard_levels(e[2], both(cond, e[1]), shapes), _guard_levels(e[3], both(cond, ("not", e[1])), shapes))
    if e[0] in ("and", "or"):
        left = _guard_levels(e[1], cond, shapes)
        taken = e[1] if e[0] == "and" else ("not", e[1])
        return (e[0], left, _guard_levels(e[2], both(cond, taken), shapes))
    if e[0] == "cast":
        return ("cast", e[1], _guard_levels(e[2], cond, shapes))
    return (e[0], *(_guard_levels(x, cond, shapes) for x in e[1:]))


def _reads(value: Any) -> set[tuple[str, int]]:
    """The fields ("f", index) and temporaries ("t", index) an expression or reference reads."""
    if isinstance(value, _Ref):
        return {(value.kind, value.index)}
    if isinstance(value, (tuple, list)):
        found: set[tuple[str, int]] = set()
        if len(value) >= 2 and value[0] in ("f", "t") and isinstance(value[1], int):
            found.add((value[0], value[1]))
        for part in value:
            found |= _reads(part)
        return found
    return set()

