"""The state every part of the lowering shares (:class:`_LoweringBase`, the base of
:class:`gridbuf.gtscript._frontend.Lowering` and its mixins), and what every part asks of it:
errors naming the line, dtypes of annotations, names looked up and compile-time constants
evaluated (externals, literals, module constants, ``__INLINED``)."""

from __future__ import annotations

import ast
import builtins
import enum
import inspect
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import GridbufValueError
from ._gt4py_objects import native
from ._irtext import Expr, _uses_once
from ._math_functions import NATIVE
from ._values import _DTYPES, FieldType, TableType, _annotation_namespace, _Ctx, _describe, _Ref, _Undefined

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


class _LoweringBase:
    """The lowering's state (fields, scalars, temporaries, the IR lines written so far) and its
    shared helpers; the statements, expressions and calls are lowered by the mixins."""

    def __init__(
        self,
        definition: Callable[..., Any],
        externals: dict[str, Any] | None,
        name: str | None,
        dtypes: dict[str, Any] | None = None,
        aliases: dict[str, str] | None = None,
    ) -> None:
        self.definition = definition
        # Field parameters that name the same array as another (`stencil(q, q)`): each reads and
        # writes the other's field, so the program has one field where the call has one array.
        self.aliases: dict[str, str] = dict(aliases or {})
        self.externals = dict(externals or {})
        self.name = name or definition.__name__
        self.fields: list[tuple[str, FieldType]] = []
        self.scalars: list[str] = []
        self.params: list[str] = []
        self.temps: list[str] = []
        # Temporaries with data dims (declared before the computations): the first component's
        # temporary index -> the data shape; component c (row-major) is temporary index + c.
        self.temp_vectors: dict[int, tuple[int, ...]] = {}
        # Integer scalar parameters used as data-dim indices (`a[0, 0, 0][index]`) -> the number
        # of components they may name (the smallest such data dim): checked at every call.
        self.index_params: dict[str, int] = {}
        # The index in `fields` of the hidden field of K level numbers, once `K` is read as a value.
        self.k_levels_field: int | None = None
        # IR lines: strings, and statements as (line, target, value) until the fields are numbered.
        self.lines: list[Any] = []
        self.masks = 0
        # Nesting of the expression being lowered, within one function body (a guard: Python
        # recursion follows it).
        self.depth = 0
        # The gtscript functions being inlined, outermost first (a call of one of them again
        # is a recursion, which GT4Py refuses), and how many `while` loops (condition or body)
        # are being lowered.
        self.inlining: list[Callable[..., Any]] = []
        self.loop_depth = 0
        # The mask of the statement being lowered (None: every point): a function's value
        # spilled to a temporary is needed only where it holds (see `spill`). Inside an inlined
        # function, its own `if`'s mask where it has one, else its caller's.
        self.statement_mask: Expr | None = None
        self.dtypes: dict[Any, Any] = dict(dtypes or {})
        # The types of Python literals and externals, as GT4Py keys them: `dtypes=` with type
        # keys (NDSL's `{float: np.float32, int: np.int32}`), else int64 and float64.
        self.literal_types: dict[Any, np.dtype[Any]] = {k: np.dtype(v) for k, v in self.dtypes.items() if isinstance(k, type)}
        self.scalar_types: list[np.dtype[Any]] = []
        # Field parameters the body never uses (left out of the IR; they may be passed as None).
        self.unused_fields: list[str] = []
        self.unused_scalars: list[str] = []
        # GlobalTable parameters and the hidden scalars of their element reads
        # (scalar name -> (table, index)).
        self.tables: dict[str, TableType] = {}
        # Each inlined function's parsed source, read once per definition: `inspect` tokenizes
        # the module's lines again at every call (pace's satadjust inlines 734 calls of 48
        # functions; reading each again took a third of its lowering).
        self.sources: dict[Any, tuple[ast.FunctionDef, int, inspect.Signature]] = {}
        # `_irtext._shape` of every expression part measured so far: each function's value is
        # measured again inside the values of the functions that call it.
        self.shapes: dict[int, tuple[Any, tuple[int, int, bool]]] = {}
        # `_irtext._temps_read` of every expression part asked about so far.
        self.temps_read: dict[int, tuple[Any, frozenset[int]]] = {}
        # `_irtext._offsets` of every expression part asked about so far.
        self.read_offsets: dict[int, tuple[Any, frozenset[Any]]] = {}
        # `_typed`'s final answers: by identity, the expression and its plain dtype (or None).
        self.typed: dict[int, tuple[Any, np.dtype[Any] | None]] = {}
        # A function's local held in a temporary where it is read at a horizontal offset (see
        # `ExpressionsMixin.shifted_local`): by identity, the expression, its temporary and how
        # many IR lines there were after it.
        self.shifted: dict[int, tuple[Any, int, int]] = {}
        # How many times `shifted_local` answered from `shifted` (a value that depends on the
        # IR lines lowered so far, not only on the function's arguments; see `CallsMixin.inline`).
        self.shifted_hits = 0
        # The value of an inlined function's body, by the function and its arguments (their
        # pickled bytes), for calls that changed nothing else (see `CallsMixin.inline`).
        self.inlined: dict[tuple[Any, tuple[tuple[str, bytes | None], ...]], Any] = {}
        # Each argument's bytes (None: not keyable), by identity; the argument is kept, so no
        # identity is reused (`CallsMixin._bytes`).
        self.arg_bytes: dict[int, tuple[Any, bytes | None]] = {}
        self.table_reads: dict[str, tuple[str, tuple[int, ...]]] = {}
        # Declared temporaries: index -> (dtype, dims).
        self.temp_types: dict[int, tuple[np.dtype[Any] | None, str]] = {}
        # Undeclared temporaries whose first value has a plain type (see `_dtype`):
        # index -> that type, which the core gives them too.
        self.known_types: dict[int, np.dtype[Any]] = {}
        # The horizontal region (IR bound text) the statements being lowered are restricted
        # to, and what has been written outside regions (GT4Py's rule on offset reads in them).
        self.region: str | None = None
        self.written_outside: set[tuple[str, int]] = set()
        # GT4Py's access kind of each field ("read", "write", "readwrite"), by its accesses in
        # program order (see `note_access`).
        self.field_access: dict[int, str] = {}
        # The parts of expressions `note_access` has walked (by identity; the values are kept
        # in `noted`, so no identity is reused): a part seen before noted its reads already.
        self.noted_ids: set[int] = set()
        self.noted: list[Any] = []

    if TYPE_CHECKING:  # what one mixin (or _regions, _vectors) calls of another
        # statements (_lower_statements)
        def compile_assert(self, ctx: _Ctx, stmt: ast.stmt) -> bool: ...
        def inlined_test(self, ctx: _Ctx, test: ast.expr) -> bool: ...
        def import_from(self, ctx: _Ctx, stmt: ast.ImportFrom) -> None: ...
        def call_name(self, ctx: _Ctx, node: ast.expr) -> Any: ...
        def new_mask(self, ctx: _Ctx, node: ast.AST, cond: Expr) -> Expr: ...
        def branch_masks(self, ctx: _Ctx, s: ast.If, mask: Expr | None) -> tuple[Expr, Expr | None]: ...
        def emit(self, ctx: _Ctx, node: ast.AST, target: tuple, value: Expr, noted: bool = False) -> None: ...
        def regions(self, ctx: _Ctx, s: ast.With, body: Callable[[], None]) -> bool: ...
        def loop(self, ctx: _Ctx, s: ast.While, mask: Expr | None, body: Callable[[Expr], None]) -> None: ...

        # expressions (_lower_expressions)
        def expr(self, ctx: _Ctx, node: ast.expr) -> Expr: ...
        def as_expr(self, ctx: _Ctx, node: ast.AST, v: Any) -> Expr: ...
        def value(self, ctx: _Ctx, node: ast.expr) -> Any: ...
        def at_k(self, ctx: _Ctx, node: ast.Call, base: _Ref) -> _Ref: ...

        # calls (_lower_calls)
        def call(self, ctx: _Ctx, node: ast.Call) -> Any: ...

    # -- types -----------------------------------------------------------------------------
    def annotation(self, ctx: _Ctx, node: ast.AST, ann: Any) -> Any:
        """A parameter's or temporary's annotation, with `dtypes=` symbols resolved."""
        if isinstance(ann, str):
            if ann in self.dtypes:
                return native(self.dtypes[ann])
            try:
                return native(eval(ann, dict(_annotation_namespace(), **ctx.globals), dict(self.dtypes)))  # noqa: S307 - the user's own annotation, as Python would evaluate it
            except Exception as exc:  # noqa: BLE001
                raise self.error(ctx, node, f"annotation {ann!r} cannot be evaluated ({exc}); a dtype symbol needs dtypes={{{ann!r}: ...}}") from None
        return native(ann)

    def dtype_of(self, ctx: _Ctx, node: ast.AST, spec: Any, what: str) -> np.dtype[Any]:
        """The dtype `spec` names (a `dtypes=` symbol, a Python or NumPy type), if gtscript has it."""
        if isinstance(spec, str) and spec in self.dtypes:
            spec = self.dtypes[spec]
        if isinstance(spec, FieldType):
            spec = spec.dtype
        if isinstance(spec, type) and issubclass(spec, enum.IntEnum):
            # GT4Py 1.2's `@gtscript.enum` parameters: integers, typed as integer literals.
            spec = self.literal_types.get(int, np.dtype(np.int64))
        try:
            dt = np.dtype(spec)
        except TypeError:
            raise self.error(ctx, node, f"{what} has the type {spec!r}, which is not a dtype (pass dtypes={{{spec!r}: ...}} for a symbol)") from None
        if dt not in _DTYPES:
            why = "GT4Py has no unsigned types" if dt.kind == "u" else "GT4Py's types are bool, int8, int16, int32, int64, float32 and float64"
            raise self.error(ctx, node, f"{what} has dtype {dt}: {why}")
        return dt

    def lit(self, v: Any) -> Expr:
        """A literal typed as GT4Py types it: a boolean is a boolean; a number whose type
        `dtypes=` names takes that dtype; else a NumPy scalar keeps its own, and a Python int
        or float is int64 or float64."""
        if isinstance(v, (bool, np.bool_)):
            return ("c", bool(v))
        if isinstance(v, enum.IntEnum):
            v = int(v)  # an enum member (`MyEnum.A`) is its integer, as GT4Py 1.2 inlines it
        t = self.literal_types.get(type(v))
        if t is not None and t != np.dtype(np.float64) and t != np.dtype(np.int64):
            return ("c", t.type(v))
        if isinstance(v, np.generic) and v.dtype not in (np.dtype(np.float64), np.dtype(np.int64)):
            return ("c", v)
        return ("c", _num(v))

    def note_access(self, value: Expr, target: tuple | None) -> None:
        """Records GT4Py's access kinds (its ``AccessKindComputer``) for a statement writing
        ``value`` to ``target``: a field first read is "read", and "readwrite" once written
        after; a field first written stays "write" whatever reads follow. The statement's reads
        count before its write. A masked assignment notes its value before the mask keeps the
        target's old value (a read GT4Py does not make)."""
        self.noted.append(value)
        for i in _uses_once(value, "f", self.noted_ids):
            self.field_access.setdefault(i, "read")
        if target is not None:
            t = target[2] if target[0] in ("k", "kv") else target
            if t[0] == "f":
                if self.field_access.get(t[1]) == "read":
                    self.field_access[t[1]] = "readwrite"
                else:
                    self.field_access.setdefault(t[1], "write")

    def typed_temp(self, prefix: str, dt: np.dtype[Any]) -> int:
        """A new 3-D temporary of type `dt`, named `prefix` and its index; returns the index."""
        index = len(self.temps)
        self.temps.append(f"{prefix}{index}")
        self.temp_types[index] = (dt, "IJK")
        return index

    # -- errors ----------------------------------------------------------------------------
    def error(self, ctx: _Ctx, node: ast.AST | None, message: str) -> GridbufValueError:
        line = ctx.line0 + getattr(node, "lineno", 1) - 1
        return GridbufValueError(f"invalid stencil definition {self.name!r}, line {line} ({ctx.file}): {message}")

    # -- constant evaluation ---------------------------------------------------------------
    def lookup(self, ctx: _Ctx, name: str, node: ast.AST) -> Any:
        if name in ctx.local:
            v = ctx.local[name]
            if isinstance(v, _Undefined):
                raise self.error(ctx, node, f"{name!r} is first assigned at line {v.line} in one branch only of an `if`, or in a horizontal region or while loop of a function: it cannot be read after it (GT4Py would read an uninitialised temporary); assign it before, or in both branches")
            return v
        if name in ctx.globals:
            return native(ctx.globals[name])
        if hasattr(builtins, name):
            return getattr(builtins, name)
        if name in NATIVE:  # GT4Py resolves its native functions by name: bare `sqrt(x)`
            return NATIVE[name]
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
            return native(getattr(self.const(ctx, node.value), node.attr))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            v = self.const(ctx, node.operand)
            if isinstance(v, (bool, np.bool_)):
                sign = "minus" if isinstance(node.op, ast.USub) else "plus"
                raise self.error(ctx, node, f"unary {sign} on a boolean (GT4Py refuses it)")
            return -v if isinstance(node.op, ast.USub) else v
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return not self.const_cond(ctx, node.operand)
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            a, b = self.const(ctx, node.left), self.const(ctx, node.right)
            if isinstance(a, (bool, np.bool_)) and isinstance(b, (bool, np.bool_)):
                # As the core's type rules refuse it at run time (GT4Py refuses both).
                raise self.error(ctx, node, f"{ast.unparse(node)}: arithmetic on two booleans (GT4Py refuses it: a boolean expression is not allowed with an arithmetic operation)")
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


def _float64_value(low: _LoweringBase, e: Expr) -> bool:
    """Whether `e` surely computes a float64: a math function's value, or arithmetic with a
    float64 operand, in a stencil with no float32 anywhere (fields, scalars, literals, casts), so
    that every float it computes is a float64 (NumPy's promotion of int64 with float64)."""
    if any(ft.dtype == np.float32 for _, ft in low.fields) or any(t == np.float32 for t in low.scalar_types):
        return False
    if low.literal_types.get(float, np.dtype(np.float64)) != np.float64:
        return False
    return _no_float32(e, {}) and _float_root(low, e, {})


def _float_root(low: _LoweringBase, e: Expr, memo: dict[int, bool]) -> bool:
    """Whether `e` (holding no float32) computes a float: see `_float64_value`."""
    key = id(e)
    if key in memo:
        return memo[key]
    tag = e[0]
    if tag == "cast":
        out = e[1] == "float64"
    elif tag in ("f", "s", "t", "c"):
        out = _dtype(low, e) == np.float64
    elif tag in _MATH_FLOAT or tag == "div":
        out = True
    elif tag in ("add", "sub", "mul", "min", "max", "neg", "abs", "pow"):
        out = any(_float_root(low, x, memo) for x in e[1:])
    elif tag == "sel":
        out = _float_root(low, e[2], memo) and _float_root(low, e[3], memo)
    else:
        out = False
    memo[key] = out
    return out


def _no_float32(e: Any, memo: dict[int, bool]) -> bool:
    """Whether `e` holds no cast to float32 and no float32 literal."""
    if not (isinstance(e, tuple) and e):
        return True
    key = id(e)
    if key in memo:
        return memo[key]
    tag = e[0]
    if tag == "c":
        out = not isinstance(e[1], np.float32)
    elif tag in ("f", "s", "t"):
        out = True
    elif tag == "cast":
        out = e[1] != "float32" and _no_float32(e[2], memo)
    elif tag in ("kvar", "kabs"):
        out = _no_float32(e[2], memo)
    else:
        out = all(_no_float32(x, memo) for x in e[1:])
    memo[key] = out
    return out


#: Math functions whose value is a float of their argument's float type (float64 from ints).
_MATH_FLOAT = frozenset((
    "exp", "log", "log10", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
    "asinh", "acosh", "atanh", "cbrt", "erf", "erfc", "gamma", "sqrt",
))  # fmt: skip

_FLOAT_SAME = {
    "add", "sub", "mul", "div", "pow", "mod", "min", "max", "neg", "abs", "sqrt", "exp", "log",
    "log10", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh",
    "atanh", "cbrt", "floor", "ceil", "trunc", "round", "round_away_from_zero",
}  # fmt: skip
_BOOL_OPS = {"lt", "le", "gt", "ge", "eq", "ne", "and", "or", "not", "isfinite", "isnan", "isinf"}


def _dtype(low: _LoweringBase, e: Expr) -> np.dtype[Any] | None:
    """The dtype of `e` where it is plain (one float type throughout, or a boolean), else None:
    a conservative subset of the core's typing, enough to tell that a reassignment needs no
    cast. The typing itself is the core's (``crates/gridbuf/src/gtscript/types.rs``:
    ``bin_types``, ``un_types``, ``type_of``), which the binding does not expose; where this
    returns a dtype, the core gives the same one."""
    return _typed(low, e, {})[0]


def _typed(low: _LoweringBase, e: Expr, memo: dict[int, tuple[Any, bool]]) -> tuple[Any, bool]:
    """`_dtype` of `e`, and whether that answer is final: it is unless it read the type of a
    temporary not yet typed (its first value, still to come, types it). Final answers are kept
    for the whole lowering (`low.typed`, by identity, each with its expression so that no
    identity is reused while it lives): a function's locals are typed again inside every value
    that reads them (pace's saturation adjustment typed 92,000 parts for 2,000 questions). The
    others are kept for this question only (`memo`)."""
    key = id(e)
    hit = low.typed.get(key)
    if hit is not None and hit[0] is e:
        return hit[1], True
    got = memo.get(key)
    if got is not None:
        return got
    out = _dtype_of(low, e, memo)
    if out[1]:
        low.typed[key] = (e, out[0])
    else:
        memo[key] = out
    return out


def _dtype_of(low: _LoweringBase, e: Expr, memo: dict[int, tuple[Any, bool]]) -> tuple[Any, bool]:
    tag = e[0]
    if tag == "f":
        return low.fields[e[1]][1].dtype, True
    if tag == "s":
        return low.scalar_types[e[1]], True
    if tag == "c":
        v = e[1]
        if isinstance(v, np.generic):  # a literal typed by `dtypes=` or a NumPy scalar
            return v.dtype, True
        return (np.dtype(np.bool_) if isinstance(v, bool) else np.dtype(np.int64) if isinstance(v, int) else np.dtype(np.float64)), True
    if tag == "t":
        dt = low.temp_types.get(e[1], (None, ""))[0] or low.known_types.get(e[1])
        return dt, dt is not None
    if tag == "cast":
        return np.dtype(e[1]), True
    if tag in ("kvar", "kabs"):
        return _typed(low, e[1], memo)
    if tag in _BOOL_OPS:
        return np.dtype(np.bool_), True
    if tag == "sel":
        (a, fa), (b, fb) = _typed(low, e[2], memo), _typed(low, e[3], memo)
        return (a if a is not None and a == b else _float64_with_ints({a, b})), fa and fb
    if tag in _FLOAT_SAME:
        parts = [_typed(low, x, memo) for x in e[1:]]
        dts = {dt for dt, _ in parts}
        final = all(f for _, f in parts)
        if len(dts) == 1 and (dt := next(iter(dts))) is not None and dt.kind == "f":
            return dt, final
        return _float64_with_ints(dts), final
    return None, True


def _float64_with_ints(dts: set[np.dtype[Any] | None]) -> np.dtype[Any] | None:
    """float64 where the operands are float64 and integers: the core computes in the larger
    of their types (`bin_types`, and a select's `at.max(bt)`), which is float64."""
    f64 = np.dtype(np.float64)
    if f64 in dts and all(d is not None and (d == f64 or d.kind == "i") for d in dts):
        return f64
    return None
