"""The gtscript frontend: parses a stencil definition's source with :mod:`ast`, inlines
``gtscript.function`` helpers, substitutes externals and lowers the body to the IR text the
Rust core compiles (see ``gridbuf::gtscript::ir``)."""

from __future__ import annotations

import ast
import builtins
import inspect
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import GridbufTypeError, GridbufValueError
from . import _regions, _vectors
from ._irtext import Expr, _fmt_stmt, _uses
from ._values import _CASTS, _DTYPES, FieldType, TableType, _annotation_namespace, _Ctx, _describe, _Ref, _source, _Table, _Undefined

_BINOPS = {
    ast.Add: "add",
    ast.Sub: "sub",
    ast.Mult: "mul",
    ast.Div: "div",
    ast.Pow: "pow",
    ast.Mod: "mod",
    ast.FloorDiv: "floordiv",
}
_CMPOPS = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne"}
_UNARY_FUNCS = (
    "abs", "sqrt", "exp", "log", "log10", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh",
    "tanh", "asinh", "acosh", "atanh", "gamma", "cbrt", "erf", "erfc", "floor", "ceil", "trunc", "round",
    "round_away_from_zero", "isfinite", "isnan", "isinf",
)  # fmt: skip
_BINARY_FUNCS = ("min", "max", "mod", "pow")

class Lowering:
    """Lowers one stencil definition to the IR text."""

    def __init__(self, definition: Callable[..., Any], externals: dict[str, Any] | None, name: str | None, dtypes: dict[str, Any] | None = None) -> None:
        self.definition = definition
        self.externals = dict(externals or {})
        self.name = name or definition.__name__
        self.fields: list[tuple[str, FieldType]] = []
        self.scalars: list[str] = []
        self.params: list[str] = []
        self.temps: list[str] = []
        # IR lines: strings, and statements as (line, target, value) until the fields are numbered.
        self.lines: list[Any] = []
        self.masks = 0
        self.depth = 0
        self.dtypes: dict[str, Any] = dict(dtypes or {})
        self.scalar_types: list[np.dtype[Any]] = []
        # Field parameters the body never uses (left out of the IR; they may be passed as None).
        self.unused_fields: list[str] = []
        self.unused_scalars: list[str] = []
        # GlobalTable parameters and the hidden scalars of their element reads
        # (scalar name -> (table, index)).
        self.tables: dict[str, TableType] = {}
        # Temporaries that hold the locals of inlined functions.
        self.func_temps: set[int] = set()
        self.table_reads: dict[str, tuple[str, tuple[int, ...]]] = {}
        # Declared temporaries: index -> (dtype, dims).
        self.temp_types: dict[int, tuple[np.dtype[Any] | None, str]] = {}
        # The horizontal region (IR bound text) the statements being lowered are restricted
        # to, and what has been written outside regions (GT4Py's rule on offset reads in them).
        self.region: str | None = None
        self.written_outside: set[tuple[str, int]] = set()

    # -- types -----------------------------------------------------------------------------
    def annotation(self, ctx: _Ctx, node: ast.AST, ann: Any) -> Any:
        """A parameter's or temporary's annotation, with `dtypes=` symbols resolved."""
        if isinstance(ann, str):
            if ann in self.dtypes:
                return self.dtypes[ann]
            try:
                return eval(ann, dict(_annotation_namespace(), **ctx.globals), dict(self.dtypes))  # noqa: S307 - the user's own annotation, as Python would evaluate it
            except Exception as exc:  # noqa: BLE001
                raise self.error(ctx, node, f"annotation {ann!r} cannot be evaluated ({exc}); a dtype symbol needs dtypes={{{ann!r}: ...}}") from None
        return ann

    def dtype_of(self, ctx: _Ctx, node: ast.AST, spec: Any, what: str) -> np.dtype[Any]:
        """The dtype `spec` names (a `dtypes=` symbol, a Python or NumPy type), if gtscript has it."""
        if isinstance(spec, str) and spec in self.dtypes:
            spec = self.dtypes[spec]
        if isinstance(spec, FieldType):
            spec = spec.dtype
        try:
            dt = np.dtype(spec)
        except TypeError:
            raise self.error(ctx, node, f"{what} has the type {spec!r}, which is not a dtype (pass dtypes={{{spec!r}: ...}} for a symbol)") from None
        if dt not in _DTYPES:
            why = "GT4Py has no unsigned types" if dt.kind == "u" else "GT4Py's types are bool, int8, int16, int32, int64, float32 and float64"
            raise self.error(ctx, node, f"{what} has dtype {dt}: {why}")
        return dt

    # -- errors ----------------------------------------------------------------------------
    def error(self, ctx: _Ctx, node: ast.AST | None, message: str) -> GridbufValueError:
        line = ctx.line0 + getattr(node, "lineno", 1) - 1
        return GridbufValueError(f"invalid stencil definition {self.name!r}, line {line} ({ctx.file}): {message}")

    # -- parameters ------------------------------------------------------------------------
    def lower(self) -> str:
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
            elif ann is None or ann in (float, int, bool) or (isinstance(ann, type) and issubclass(ann, np.generic)) or isinstance(ann, np.dtype):
                ctx.local[a.arg] = ("s", len(self.scalars))
                self.scalars.append(a.arg)
                self.scalar_types.append(self.dtype_of(ctx, a, float if ann is None else ann, f"scalar parameter {a.arg!r}"))
            else:
                raise self.error(ctx, a, f"parameter {a.arg!r} has the annotation {ann!r}: expected Field[...] or a scalar type")
            self.params.append(a.arg)
        if not self.fields:
            raise self.error(ctx, fdef, "a stencil needs at least one Field parameter")
        body: list[Any] = []
        self.lines = body
        for stmt in fdef.body:
            self.top_stmt(ctx, stmt)
        # Fields the body never reads or writes (GT4Py's AccessKind.NONE, e.g. every use pruned by
        # externals) are left out of the program: they may be passed as None and do not bound
        # the domain, as in GT4Py.
        # Scalars likewise (GT4Py neither checks nor needs an unused scalar parameter).
        used = sorted({i for item in body if isinstance(item, tuple) for i in _uses(item[1:], "f")})
        keep = used if used else list(range(len(self.fields)))
        remap = {old: new for new, old in enumerate(keep)}
        self.unused_fields = [n for i, (n, _) in enumerate(self.fields) if i not in remap]
        used_s = sorted({i for item in body if isinstance(item, tuple) for i in _uses(item[1:], "s")})
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

    # -- constant evaluation ---------------------------------------------------------------
    def lookup(self, ctx: _Ctx, name: str, node: ast.AST) -> Any:
        if name in ctx.local:
            v = ctx.local[name]
            if isinstance(v, _Undefined):
                raise self.error(ctx, node, f"{name!r} is first assigned at line {v.line} in one branch only of an `if`, or in a horizontal region or while loop of a function: it cannot be read after it (GT4Py would read an uninitialised temporary); assign it before, or in both branches")
            return v
        if name in ctx.globals:
            return ctx.globals[name]
        if hasattr(builtins, name):
            return getattr(builtins, name)
        from . import _NATIVE  # GT4Py resolves its native functions by name: bare `sqrt(x)`

        if name in _NATIVE:
            return _NATIVE[name]
        raise self.error(ctx, node, f"name {name!r} is not defined (fields, scalars, temporaries, externals and module constants are)")

    def const(self, ctx: _Ctx, node: ast.expr) -> Any:
        """Evaluates an expression of literals, externals and module constants."""
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            v = self.lookup(ctx, node.id, node)
            if isinstance(v, (_Ref, tuple)) and not (isinstance(v, tuple) and v and v[0] == "c"):
                raise self.error(ctx, node, f"{node.id!r} is not a compile-time constant")
            return v[1] if isinstance(v, tuple) else v
        if isinstance(node, ast.Attribute):
            return getattr(self.const(ctx, node.value), node.attr)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -self.const(ctx, node.operand)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return not self.const_cond(ctx, node.operand)
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            a, b = self.const(ctx, node.left), self.const(ctx, node.right)
            return {"add": a + b, "sub": a - b, "mul": a * b, "div": a / b if b else math.nan,
                    "pow": a**b, "mod": a % b if b else math.nan, "floordiv": a // b if b else math.nan}[_BINOPS[type(node.op)]]
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            a, b = self.const(ctx, node.left), self.const(ctx, node.comparators[0])
            op = _CMPOPS.get(type(node.ops[0]))
            return {"lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b, "eq": a == b, "ne": a != b}[op] if op else None
        if isinstance(node, ast.BoolOp):
            vals = [self.const_cond(ctx, v) for v in node.values]
            return all(vals) if isinstance(node.op, ast.And) else any(vals)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "__INLINED" and len(node.args) == 1:
            return self.py_const(ctx, node.args[0], "__INLINED")
        raise self.error(ctx, node, f"{_describe(node)} is not a compile-time constant")

    def py_const(self, ctx: _Ctx, node: ast.expr, what: str) -> Any:
        """The value of an `__INLINED(...)` or `compile_assert(...)` argument, evaluated now with
        Python's own rules (as GT4Py's ast_eval: `A and not B` on integers too) on the
        compile-time values of the names it uses."""
        ns: dict[str, Any] = {}
        try:
            for n in ast.walk(node):
                if isinstance(n, ast.Name):
                    ns[n.id] = self.const(ctx, n)
            return eval(compile(ast.fix_missing_locations(ast.Expression(body=node)), "<gtscript>", "eval"), {"__builtins__": builtins}, ns)  # noqa: S307 - the user's own condition
        except Exception:  # noqa: BLE001 - any failure to evaluate it now
            raise self.error(ctx, node, f"{what}({ast.unparse(node)}): the condition is not a compile-time constant (externals, literals and module constants are)") from None

    def const_cond(self, ctx: _Ctx, node: ast.expr) -> bool:
        """A compile-time condition: GT4Py takes booleans only (`if 1:` is refused), but decides
        `__INLINED(x)` by Python's truth value."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "__INLINED" and len(node.args) == 1:
            return bool(self.py_const(ctx, node.args[0], "__INLINED"))
        v = self.const(ctx, node)
        if not isinstance(v, (bool, np.bool_)):
            raise self.error(ctx, node, f"the condition {ast.unparse(node)!r} is {v!r}, not a boolean: GT4Py takes boolean conditions only")
        return bool(v)

    def is_const(self, ctx: _Ctx, node: ast.expr) -> bool:
        try:
            v = self.const(ctx, node)
        except GridbufValueError:
            return False
        except Exception:  # noqa: BLE001 - e.g. an attribute a constant lacks
            return False
        return isinstance(v, (bool, int, float, np.number))

    # -- statements ------------------------------------------------------------------------
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
        v = self.externals[name]
        if isinstance(v, (bool, int, float, np.number)):
            return ("c", _num(v))
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
            # `sel c True False`: the types pass checks that `c` is a boolean, at this line.
            cond = self.new_mask(ctx, s, ("sel", self.expr(ctx, s.test), ("c", True), ("c", False)))
            m = cond if mask is None else self.new_mask(ctx, s, ("and", mask, cond))
            m2 = None
            if s.orelse:
                notc = ("not", cond)
                m2 = self.new_mask(ctx, s, notc if mask is None else ("and", mask, notc))
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

    def declare(self, ctx: _Ctx, s: ast.AnnAssign) -> None:
        """A typed temporary: `tmp: np.float32 = ...` or a 2-D one, `tmp: Field[IJ, np.float64] = ...`."""
        if not isinstance(s.target, ast.Name):
            raise self.error(ctx, s, "an annotation on something other than a temporary's name")
        name = s.target.id
        try:
            ann = eval(compile(ast.Expression(s.annotation), "<annotation>", "eval"), dict(_annotation_namespace(), **ctx.globals), dict(self.dtypes))  # noqa: S307 - the user's own annotation
        except Exception as exc:  # noqa: BLE001
            raise self.error(ctx, s, f"annotation {ast.unparse(s.annotation)!r} of {name!r} cannot be evaluated ({exc})") from None
        ann = self.annotation(ctx, s, ann)
        axes = "IJK"
        if isinstance(ann, FieldType):
            if ann.axes == "IJK" and not ann.data_shape:
                raise self.error(ctx, s, f"temporary {name!r} declared Field[...] with dims IJK: GT4Py types Field temporaries as IJ only; declare a 3-D one as `{name}: np.float64 = ...`")
            if ann.axes not in ("IJK", "IJ") or ann.data_shape:
                raise self.error(ctx, s, f"temporary {name!r} declared {ann.axes} with data dims {ann.data_shape}: temporaries are IJK or IJ, without data dims")
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
                vals = v
            for t, v in zip(target.elts, vals):
                self.store(ctx, node, t, v, mask)
            return
        self.store(ctx, node, target, self.value(ctx, value), mask)

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
        if isinstance(target, ast.Subscript):
            ref = self.value(ctx, target)
            if not isinstance(ref, _Ref):
                raise self.error(ctx, node, "assignment to a subscript of something that is not a field")
            name = self.fields[ref.index][0] if ref.kind == "f" else self.temps[ref.index]
            if ref.klevel is not None:
                raise self.error(ctx, node, f"assignment to {name!r} at a K level computed at run time (GT4Py reads such levels only)")
            if ref.offset[:2] != (0, 0):
                raise self.error(ctx, node, f"writing {name!r} at the offset {ref.offset}: assignments at non-zero I or J offsets are not supported (GT4Py's rule)")
            koff = ref.offset[2]
            kind, index, comp = ref.kind, ref.index, ref.comp
            if kind == "f" and self.fields[index][1].data_shape and comp is None:
                raise self.error(ctx, node, f"field {self.fields[index][0]!r} has data dims: write one component, e.g. {self.fields[index][0]}[0, 0, 0][0]")
            comp = comp or 0
        elif isinstance(target, ast.Name):
            name = target.id
            cur = ctx.local.get(name)
            if isinstance(cur, _Ref):
                kind, index = cur.kind, cur.index
                if kind == "f" and self.fields[index][1].data_shape:
                    raise self.error(ctx, node, f"field {name!r} has data dims: write one component, e.g. {name}[0, 0, 0][0]")
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
        if mask is not None:
            old = ("f", index, comp, (0, 0, koff)) if kind == "f" else ("t", index, (0, 0, koff))
            value = ("sel", mask, value, old)
        tgt: tuple = (kind, index, comp) if kind == "f" else ("t", index)
        self.emit(ctx, node, ("k", koff, tgt) if koff else tgt, value)

    def whole_vector_target(self, ctx: _Ctx, target: ast.expr) -> int | None:
        """The index of the data-dim field that ``target`` writes whole (``out``, ``out[0, 0, 0]``), if any."""
        ref = self.value(ctx, target) if isinstance(target, ast.Subscript) else ctx.local.get(target.id) if isinstance(target, ast.Name) else None
        if isinstance(ref, _Ref) and ref.kind == "f" and ref.comp is None and self.fields[ref.index][1].data_shape and ref.offset == (0, 0, 0):
            return ref.index
        return None

    def emit(self, ctx: _Ctx, node: ast.AST, target: tuple, value: Expr) -> None:
        line = ctx.line0 + getattr(node, "lineno", 1) - 1
        value = _guard_levels(value, None)
        if self.region is not None:
            self.lines.append(f"region {self.region}")
        else:
            t = target[2] if target[0] == "k" else target  # ("k", dk, target): at a K offset
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
        cond: Expr = ("sel", self.expr(ctx, s.test), ("c", True), ("c", False))
        m = self.new_mask(ctx, s, cond if mask is None else ("and", mask, cond))
        self.lines.append("while")
        start = len(self.lines)
        body(m)
        if not any(isinstance(item, tuple) for item in self.lines[start:]):
            raise self.error(ctx, s, "a while loop whose body assigns nothing: it never ends where its condition holds")
        self.lines.append("endwhile")

    # -- expressions -----------------------------------------------------------------------
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
                read = ("t", v.index, v.offset)
            if v.klevel is not None:
                return (v.klevel[0], read, v.klevel[1])  # ("kvar" | "kabs", read, index)
            return read
        if isinstance(v, tuple):
            return v
        if isinstance(v, (bool, int, float, np.number)):
            return ("c", _num(v))
        raise self.error(ctx, node, f"{_describe(node) if not isinstance(node, ast.Name) else repr(node.id)} is not a value a stencil can compute with ({v!r})")

    def value(self, ctx: _Ctx, node: ast.expr) -> Any:
        self.depth += 1
        try:
            if self.depth > 150:
                raise self.error(ctx, node, "expression nested too deeply")
            return self._value(ctx, node)
        finally:
            self.depth -= 1

    def _value(self, ctx: _Ctx, node: ast.expr) -> Any:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, (bool, int, float)):
                return ("c", node.value)
            raise self.error(ctx, node, f"the literal {node.value!r}")
        if isinstance(node, ast.Name):
            v = self.lookup(ctx, node.id, node)
            if isinstance(v, (bool, int, float, np.number)):
                return ("c", _num(v))
            if isinstance(v, _Table):
                raise self.error(ctx, node, f"GlobalTable {node.id!r} used as a value: read one element, e.g. {node.id}.A[0]")
            if _is_axis_value(v):
                raise self.error(ctx, node, f"the axis position {node.id!r} ({v}) used as a value: axis positions such as I[0] + 1 are bounds of horizontal regions, region[...]")
            return v
        if isinstance(node, ast.Attribute):
            if node.attr == "A" and isinstance(self.value(ctx, node.value), _Ref):
                raise self.error(ctx, node, f"{ast.unparse(node)} without an index: read one component, e.g. {ast.unparse(node)}[0]")
            if node.attr == "T" and _vectors.is_vector(self, base := self.value(ctx, node.value)):
                return _vectors.transpose(self, ctx, node, base)
            if self.is_const(ctx, node):
                return ("c", _num(self.const(ctx, node)))
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
            if isinstance(base, tuple) and self.offsets(ctx, node.slice) in ([0, 0, 0], [0, 0], [0]):
                return base  # an expression argument of a function read at offset zero
            raise self.error(ctx, node, f"subscript of {ast.unparse(node.value)!r}, which is not a field or temporary")
        if base.klevel is not None and not (base.kind == "f" and self.fields[base.index][1].data_shape and base.comp is None):
            if self.offsets(ctx, node.slice) in ([0, 0, 0], [0, 0], [0]):
                return base  # a read at a run-time K level passed to a function, read at offset zero
            raise self.error(ctx, node, f"{ast.unparse(node)}: an offset on a read at a K level computed at run time")
        var = self.var_k_read(ctx, node, base)
        if var is not None:
            return var
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
            if base.indexed:
                raise self.error(ctx, node, f"too many subscripts on temporary {self.temps[base.index]!r}")
            if len(idx) != 3:
                raise self.error(ctx, node, f"temporary {self.temps[base.index]!r} takes 3 offsets, got {len(idx)}")
            off = tuple(idx)
        total = tuple(a + b for a, b in zip(base.offset, off))
        return _Ref(base.kind, base.index, total, base.comp, True)  # type: ignore[arg-type]

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

    def call(self, ctx: _Ctx, node: ast.Call) -> Any:
        from . import _MATH  # the gtscript math functions by identity

        f = node.func
        if isinstance(f, ast.Name) and f.id == "__INLINED":
            if len(node.args) != 1 or node.keywords:
                raise self.error(ctx, node, "__INLINED takes one argument")
            v = self.py_const(ctx, node.args[0], "__INLINED")
            if not isinstance(v, (bool, int, float, np.number)):
                raise self.error(ctx, node, f"{ast.unparse(node)} is {v!r}, not a number a stencil can compute with")
            return ("c", _num(v))
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
        if getattr(fn, "__gtscript_function__", False):
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
        fdef, first = _source(fn)
        sig = inspect.signature(fn)
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
        inner = _Ctx(fn, first, local)
        if self.depth > 100:
            raise self.error(ctx, node, f"{fn.__name__} calls itself too deeply")
        self.depth += 1
        try:
            ret = self.func_block(inner, fdef.body, top=True)
        finally:
            self.depth -= 1
        if ret is None:
            raise self.error(inner, fdef, f"gtscript function {fn.__name__} returns no value")
        return ret

    def func_block(self, inner: _Ctx, body: list[ast.stmt], top: bool, mask: Expr | None = None) -> Any:
        """Lowers the statements of an inlined function; returns the value of its `return`
        (None if there is none). As in GT4Py, a function's locals are temporaries typed by their
        first assignment (a parameter's: its argument's): a new local assigned once,
        unconditionally, stays an expression (the same thing, computed in place); a local or
        parameter assigned again or inside an `if` becomes a temporary, whose later assignments
        are cast to its type (`z = int_field; z *= 2.5` truncates), and an `if` writes it under a
        mask computed once, like the stencil's `if`."""
        for s in body:
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
                if not self.regions(inner, s, lambda: self.func_body(inner, s, s.body, mask)):
                    raise self.error(inner, s, "a `with` block in a gtscript function (only `with horizontal(region[...])`)")
            elif isinstance(s, ast.While):
                self.func_locals_to_temps(inner, s, s.body)
                self.loop(inner, s, mask, lambda m: self.func_body(inner, s, s.body, m))
            else:
                raise self.error(inner, s, f"{_describe(s) if not isinstance(s, ast.AugAssign) else 'an augmented assignment to a subscript'} in a gtscript function")
        return None

    def func_body(self, inner: _Ctx, s: ast.stmt, body: list[ast.stmt], mask: Expr | None) -> None:
        """The body of a region or loop in a function: its locals first assigned there cannot be
        read after it (they hold a value only where, or as long as, it ran)."""
        before = {n for n, v in inner.local.items() if not isinstance(v, _Undefined)}
        if self.func_block(inner, body, top=False, mask=mask) is not None:
            raise self.error(inner, s, "a return statement inside a region or loop of a gtscript function")
        line = inner.line0 + s.lineno - 1
        for name in set(inner.local) - before:
            inner.local[name] = _Undefined(name, line)

    def func_locals_to_temps(self, inner: _Ctx, s: ast.stmt, body: list[ast.stmt]) -> None:
        """Locals a region or loop assigns keep their value where (or when) it does not run:
        each that is still an expression becomes a temporary holding it, first."""
        names = {t.id for b in body for n in ast.walk(b) if isinstance(n, (ast.Assign, ast.AugAssign)) for t in ([n.target] if isinstance(n, ast.AugAssign) else n.targets) for t in ([t] if isinstance(t, ast.Name) else [e for e in getattr(t, "elts", []) if isinstance(e, ast.Name)])}
        for name in sorted(names):
            cur = inner.local.get(name)
            if cur is None or isinstance(cur, _Undefined) or (isinstance(cur, _Ref) and cur.kind == "t" and cur.index in self.func_temps):
                continue
            value = self.as_expr(inner, s, cur)
            index = len(self.temps)
            self.temps.append(f"__{inner.name}_{name}{index}")
            self.func_temps.add(index)
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
        cur = inner.local.get(name)
        if isinstance(cur, _Ref) and cur.kind == "t" and cur.index in self.func_temps:
            self.freeze_readers(inner, s, name, cur.index, mask)
            old: Expr = ("t", cur.index, (0, 0, 0))
            self.emit(inner, s, ("t", cur.index), value if mask is None else ("sel", mask, value, old))
            return
        if isinstance(cur, _Undefined):
            cur = cur.value  # set by the other branch of an `if` (None: by neither)
        if cur is None:
            # A new local: an expression computed in place. Under a mask, the points the mask
            # leaves out are never read: either the other branch assigns them too, or the local
            # cannot be read after the `if`.
            inner.local[name] = value
            return
        before = self.as_expr(inner, s, cur)
        dt = _dtype(self, before)
        if dt is not None and dt == _dtype(self, value):
            # Same type: no cast, the new value stays an expression.
            inner.local[name] = value if mask is None else ("sel", mask, value, before)
            return
        # Another type, or one this frontend cannot tell: a temporary typed by the earlier value
        # (GT4Py's function temporaries), to which the new one is cast.
        index = len(self.temps)
        self.temps.append(f"__{inner.name}_{name}{index}")
        self.func_temps.add(index)
        self.emit(inner, s, ("t", index), before)
        inner.local[name] = _Ref("t", index)
        self.emit(inner, s, ("t", index), value if mask is None else ("sel", mask, value, ("t", index, (0, 0, 0))))

    def freeze_readers(self, inner: _Ctx, s: ast.stmt, name: str, index: int, mask: Expr | None) -> None:
        """Before the temporary `index` (the local `name`) is assigned again: the other locals
        that are still expressions reading it get temporaries of their own, holding the value
        they had (`w = z; z = z + 1; return w` returns the old z)."""
        for other, v in list(inner.local.items()):
            if other == name or not (isinstance(v, tuple) and v and v[0] not in ("c", "s")) or not _reads_temp(v, index):
                continue
            t = len(self.temps)
            self.temps.append(f"__{inner.name}_{other}{t}")
            self.func_temps.add(t)
            self.emit(inner, s, ("t", t), _guard_levels(v, mask))
            inner.local[other] = _Ref("t", t)

    def func_if(self, inner: _Ctx, s: ast.If, mask: Expr | None) -> None:
        """An `if` on values computed at run time in a gtscript function: its condition is
        computed once, before either branch, into a mask temporary (as for the stencil's `if`,
        and as GT4Py does); the locals the branches assign are selected by it. A local first
        assigned in one branch only cannot be read after the `if` (nor in the other branch)."""
        cond = self.new_mask(inner, s, ("sel", self.expr(inner, s.test), ("c", True), ("c", False)))
        m = cond if mask is None else self.new_mask(inner, s, ("and", mask, cond))
        before = {n for n, v in inner.local.items() if not isinstance(v, _Undefined)}
        outer_written = inner.written
        inner.written = set()
        self.func_block(inner, s.body, top=False, mask=m)
        then = inner.written
        line = inner.line0 + s.lineno - 1
        for name in then - before:
            inner.local[name] = _Undefined(name, line, inner.local[name])
        inner.written = set()
        if s.orelse:
            notc = ("not", cond)
            m2 = self.new_mask(inner, s, notc if mask is None else ("and", mask, notc))
            self.func_block(inner, s.orelse, top=False, mask=m2)
        other = inner.written
        inner.written = outer_written | then | other
        for name in (then ^ other) - before:
            inner.local[name] = _Undefined(name, line)


_FLOAT_SAME = {
    "add", "sub", "mul", "div", "pow", "mod", "min", "max", "neg", "abs", "sqrt", "exp", "log",
    "log10", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh",
    "atanh", "cbrt", "floor", "ceil", "trunc", "round", "round_away_from_zero",
}  # fmt: skip
_BOOL_OPS = {"lt", "le", "gt", "ge", "eq", "ne", "and", "or", "not", "isfinite", "isnan", "isinf"}


def _reads_temp(e: Any, index: int) -> bool:
    if not (isinstance(e, tuple) and e):
        return False
    if e[0] == "t":
        return e[1] == index
    if e[0] in ("f", "s", "c"):
        return False
    return any(_reads_temp(x, index) for x in e[1:])


def _guard_levels(e: Any, cond: Expr | None) -> Any:
    """Reads at run-time K levels in a value that is thrown away (the branch of a select not
    taken, the right operand of an `and` whose left is false: masked assignments, `if`, `while`)
    read their own level instead: their level may be out of range there without being an error.
    GT4Py's compiled backends never compute such values; its numpy backend computes them from a
    level clipped into the array, and throws them away too."""
    if not (isinstance(e, tuple) and e) or e[0] in ("f", "t", "s", "c"):
        return e
    if e[0] in ("kvar", "kabs"):
        index = _guard_levels(e[2], cond)
        if cond is not None:
            index = ("sel", cond, index, ("c", 0))
        return (e[0], e[1], index)
    both = (lambda a, b: b if a is None else ("and", a, b))
    if e[0] == "sel":
        c = _guard_levels(e[1], cond)
        return ("sel", c, _guard_levels(e[2], both(cond, e[1])), _guard_levels(e[3], both(cond, ("not", e[1]))))
    if e[0] in ("and", "or"):
        left = _guard_levels(e[1], cond)
        taken = e[1] if e[0] == "and" else ("not", e[1])
        return (e[0], left, _guard_levels(e[2], both(cond, taken)))
    if e[0] == "cast":
        return ("cast", e[1], _guard_levels(e[2], cond))
    return (e[0], *(_guard_levels(x, cond) for x in e[1:]))


def _dtype(low: Lowering, e: Expr) -> np.dtype[Any] | None:
    """The dtype of `e` where it is plain (one float type throughout, or a boolean), else None:
    a conservative subset of the core's typing, enough to tell that a reassignment needs no
    cast."""
    tag = e[0]
    if tag == "f":
        return low.fields[e[1]][1].dtype
    if tag == "s":
        return low.scalar_types[e[1]]
    if tag == "c":
        v = e[1]
        return np.dtype(np.bool_) if isinstance(v, bool) else np.dtype(np.int64) if isinstance(v, int) else np.dtype(np.float64)
    if tag == "t":
        return low.temp_types.get(e[1], (None, ""))[0]
    if tag == "cast":
        return np.dtype(e[1])
    if tag in ("kvar", "kabs"):
        return _dtype(low, e[1])
    if tag in _BOOL_OPS:
        return np.dtype(np.bool_)
    if tag == "sel":
        a, b = _dtype(low, e[2]), _dtype(low, e[3])
        return a if a is not None and a == b else None
    if tag in _FLOAT_SAME:
        dts = {_dtype(low, x) for x in e[1:]}
        if len(dts) == 1 and (dt := dts.pop()) is not None and dt.kind == "f":
            return dt
    return None


def _is_axis_value(v: Any) -> bool:
    """An axis position or slice (`I[0] + 1`, `J[-1]`, `I[1:3]`, `I + 1`)."""
    from . import AxisIndex, AxisInterval, ShiftedAxis

    return isinstance(v, (AxisIndex, AxisInterval, ShiftedAxis))


def _num(v: Any) -> bool | int | float:
    """A Python number of the literal's kind (NumPy scalars too)."""
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    return float(v)


def _load(target: ast.expr) -> ast.expr:
    """A copy of an assignment target as a load."""
    node = ast.parse(ast.unparse(target), mode="eval").body
    ast.copy_location(node, target)
    for n in ast.walk(node):
        n.lineno = target.lineno  # type: ignore[attr-defined]
    return node
