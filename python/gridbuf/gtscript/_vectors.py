"""Vector and matrix operations on data-dim fields, lowered to per-component scalar expressions.

GT4Py (1.1.12) unrolls an assignment to a whole data-dim field (``out = a + b``,
``out[0, 0, 0] = m @ v``) into one assignment per component, in row-major order, before
anything else sees it. The frontend does the same here: a :class:`Vec` is the value of a
whole-vector or whole-matrix expression, a shape and one scalar expression per component, and
an assignment of one to a data-dim field emits one IR statement per component. What is
supported mirrors what GT4Py computes:

- a data-dim field read whole, at any offset: ``a``, ``a[1, 0, 0]`` (vectors and matrices);
- element-wise ``+ - * / ** %`` between vectors of the same length, and between a vector and
  a scalar (a literal, a scalar parameter, a scalar field or temporary, or any scalar
  expression of them), and unary ``-``/``+`` of a vector;
- ``m @ v`` (a matrix of shape (r, c) times a vector of length c gives a vector of length r,
  each component summed left to right as GT4Py does) and ``m.T``;
- assignment of a vector or matrix to a data-dim field of the same shape, and of a scalar
  to every component of one.

A data-dim component (``a[0, 0, 0][1]``) on the right of a whole-vector assignment is refused:
GT4Py 1.1.12 reads the whole field there, its index ignored (``out = a + a[0, 0, 0][1]`` gives
``a + a``); through a temporary (``c = a[0, 0, 0][1]``, then ``out = a * c``) it is fine.

Everything else on whole vectors is rejected when the stencil is defined, with the construct
and the line: GT4Py 1.1.12 fails on ``matrix @ matrix``, ``vector @ vector``, ``vector @
matrix``, element-wise operations on matrices, math functions and ``x if c else y`` of
vectors, vector temporaries and whole-vector assignments inside ``if``.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._values import _Ref

if TYPE_CHECKING:  # pragma: no cover
    from ._lower_base import _LoweringBase
    from ._values import _Ctx

Expr = tuple

_ELEMENTWISE = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.Pow: "pow", ast.Mod: "mod"}
_SYMBOL = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**", ast.Mod: "%", ast.FloorDiv: "//", ast.MatMult: "@"}


@dataclass(frozen=True)
class Vec:
    """A whole vector or matrix value: its shape and its components in row-major order."""

    shape: tuple[int, ...]
    items: tuple[Expr, ...]

    def __post_init__(self) -> None:
        assert len(self.items) == math.prod(self.shape)

    def at(self, row: int, col: int) -> Expr:
        return self.items[row * self.shape[1] + col]

    def describe(self) -> str:
        return f"{'a vector' if len(self.shape) == 1 else 'a matrix'} of shape {self.shape}"


def _src(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 60 else text[:57] + "..."


def lift(low: _LoweringBase, ctx: _Ctx, node: ast.AST, v: Any) -> Vec | None:
    """``v`` as a :class:`Vec` when it is a whole vector or matrix, else None."""
    if isinstance(v, Vec):
        return v
    if isinstance(v, _Ref) and v.kind == "t" and v.comp is None and v.index in low.temp_vectors:
        tshape = low.temp_vectors[v.index]
        if len(tshape) > 2:
            raise low.error(ctx, node, f"`{_src(node)}`: a temporary with {len(tshape)} data dims; whole operations take vectors and matrices (read one component)")
        return Vec(tshape, tuple(("t", v.index + c, v.offset) for c in range(math.prod(tshape))))
    if not (isinstance(v, _Ref) and v.kind == "f" and v.comp is None):
        return None
    name, ftype = low.fields[v.index]
    shape = ftype.data_shape
    if not shape:
        return None
    if len(shape) > 2:
        raise low.error(ctx, node, f"`{_src(node)}`: field {name!r} has {len(shape)} data dims; whole-field operations take vectors and matrices (read one component, e.g. {name}[0, 0, 0][{', '.join('0' * len(shape))}])")
    return Vec(shape, tuple(("f", v.index, c, v.offset) for c in range(math.prod(shape))))


def is_vector(low: _LoweringBase, v: Any) -> bool:
    if isinstance(v, Vec):
        return True
    return isinstance(v, _Ref) and v.comp is None and (bool(low.fields[v.index][1].data_shape) if v.kind == "f" else v.index in low.temp_vectors)


def binop(low: _LoweringBase, ctx: _Ctx, node: ast.BinOp, left: Any, right: Any) -> Vec:
    """``left <op> right`` where at least one side is a whole vector or matrix, or the op is ``@``."""
    sym = _SYMBOL.get(type(node.op), type(node.op).__name__)
    a, b = lift(low, ctx, node.left, left), lift(low, ctx, node.right, right)
    if isinstance(node.op, ast.MatMult):
        if a is None or b is None:
            raise low.error(ctx, node, f"`{_src(node)}`: @ takes a matrix and a vector (got {a.describe() if a else 'a scalar'} and {b.describe() if b else 'a scalar'})")
        if len(a.shape) != 2 or len(b.shape) != 1:
            raise low.error(ctx, node, f"`{_src(node)}`: @ of {a.describe()} and {b.describe()}; gridbuf.gtscript, like GT4Py 1.1.12, computes matrix @ vector only")
        rows, cols = a.shape
        if cols != b.shape[0]:
            raise low.error(ctx, node, f"`{_src(node)}`: @ of {a.describe()} and {b.describe()}: the matrix has {cols} columns, the vector {b.shape[0]} components")
        out = []
        for r in range(rows):
            acc: Expr = ("mul", a.at(r, 0), b.items[0])
            for c in range(1, cols):
                acc = ("add", acc, ("mul", a.at(r, c), b.items[c]))
            out.append(acc)
        return Vec((rows,), tuple(out))
    op = _ELEMENTWISE.get(type(node.op))
    if op is None:
        raise low.error(ctx, node, f"`{_src(node)}`: the operator {sym} on vectors (element-wise + - * / ** % and @ are supported)")
    for v in (a, b):
        if v is not None and len(v.shape) != 1:
            raise low.error(ctx, node, f"`{_src(node)}`: element-wise {sym} on {v.describe()}; GT4Py 1.1.12 computes element-wise operations on vectors only")
    if a is not None and b is not None:
        if a.shape != b.shape:
            raise low.error(ctx, node, f"`{_src(node)}`: element-wise {sym} of vectors of different shapes {a.shape} and {b.shape}")
        return Vec(a.shape, tuple((op, x, y) for x, y in zip(a.items, b.items)))
    if a is not None:
        s = low.as_expr(ctx, node.right, right)
        return Vec(a.shape, tuple((op, x, s) for x in a.items))
    assert b is not None
    s = low.as_expr(ctx, node.left, left)
    return Vec(b.shape, tuple((op, s, y) for y in b.items))


def unary(low: _LoweringBase, ctx: _Ctx, node: ast.UnaryOp, v: Any) -> Vec:
    a = lift(low, ctx, node.operand, v)
    assert a is not None
    if isinstance(node.op, (ast.USub, ast.UAdd)) and len(a.shape) == 1:
        return a if isinstance(node.op, ast.UAdd) else Vec(a.shape, tuple(("neg", x) for x in a.items))
    what = {ast.USub: "unary -", ast.UAdd: "unary +", ast.Not: "not", ast.Invert: "~"}.get(type(node.op), type(node.op).__name__)
    raise low.error(ctx, node, f"`{_src(node)}`: {what} of {a.describe()} (unary - and + take vectors)")


def transpose(low: _LoweringBase, ctx: _Ctx, node: ast.Attribute, v: Any) -> Vec:
    a = lift(low, ctx, node.value, v)
    assert a is not None
    if len(a.shape) != 2:
        raise low.error(ctx, node, f"`{_src(node)}`: .T of {a.describe()}; .T transposes matrices")
    rows, cols = a.shape
    return Vec((cols, rows), tuple(a.at(r, c) for c in range(cols) for r in range(rows)))


def scalar_error(low: _LoweringBase, ctx: _Ctx, node: ast.AST, v: Any) -> Exception:
    """The error for a whole vector or matrix where a scalar is needed."""
    a = lift(low, ctx, node, v)
    assert a is not None
    return low.error(ctx, node, f"`{_src(node)}` is {a.describe()} where a scalar is needed: whole vectors and matrices can be combined with + - * / ** %, @ and .T and assigned to a data-dim field of the same shape; read one component otherwise, e.g. `x[0, 0, 0][0]`")


def target_error(low: _LoweringBase, ctx: _Ctx, node: ast.stmt, target: ast.expr, value: Any) -> Exception:
    """The error for a whole vector or matrix assigned to something that holds one scalar."""
    a = lift(low, ctx, node, value)
    assert a is not None
    ref = low.value(ctx, target) if isinstance(target, ast.Subscript) else ctx.local.get(target.id) if isinstance(target, ast.Name) else None
    if isinstance(ref, _Ref) and ref.kind == "f":
        name, ftype = low.fields[ref.index]
        if not ftype.data_shape:
            what = f"the field {name!r}, which has no data dims"
        elif ref.comp is not None:
            what = f"one component of field {name!r}"
        else:
            what = f"field {name!r} at an offset"
    elif isinstance(ref, _Ref) or isinstance(target, ast.Name):
        what = f"the temporary {_src(target)!r} (GT4Py 1.1.12 has no vector temporaries)"
    else:
        what = f"`{_src(target)}`"
    return low.error(ctx, node, f"`{_src(node)}`: assignment of {a.describe()} to {what}")


def _reject_components(low: _LoweringBase, ctx: _Ctx, node: ast.stmt) -> None:
    """Refuses a data-dim component (``a[0, 0, 0][1]``) on the right of a whole-vector assignment:
    GT4Py 1.1.12 unrolls it as the whole field ``a``, its index ignored, which computes something
    else than it reads (``out = a + a[0, 0, 0][1]`` gives ``out = a + a``)."""
    value = getattr(node, "value", None)
    if value is None:
        return
    for sub in ast.walk(value):
        if not (isinstance(sub, ast.Subscript) and isinstance(sub.value, ast.Subscript)):
            continue
        try:
            ref = low.value(ctx, sub)
        except Exception:  # noqa: BLE001 - reported where the expression itself is lowered
            continue
        if isinstance(ref, _Ref) and ref.kind == "f" and ref.comp is not None and low.fields[ref.index][1].data_shape:
            raise low.error(ctx, sub, f"`{_src(sub)}` in `{_src(node)}`: a data-dim component on the right of a whole-vector assignment; GT4Py 1.1.12 reads the whole field there, its index ignored. Assign the component to a temporary first (`c = {_src(sub)}`)")


def assign(low: _LoweringBase, ctx: _Ctx, node: ast.stmt, index: int, value: Any, mask: Expr | None) -> None:
    """``field = value`` for a data-dim field ``index`` written whole: one statement per component."""
    name, ftype = low.fields[index]
    shape = ftype.data_shape
    if mask is not None:
        raise low.error(ctx, node, f"`{_src(node)}`: a whole-vector assignment to {name!r} inside `if`; GT4Py 1.1.12 does not unroll it there: assign the components, e.g. {name}[0, 0, 0][{', '.join('0' * len(shape))}] = ...")
    _reject_components(low, ctx, node)
    v = lift(low, ctx, node, value)
    if v is None:
        s = low.as_expr(ctx, node, value)
        items: tuple[Expr, ...] = (s,) * math.prod(shape)
    else:
        if v.shape != shape:
            raise low.error(ctx, node, f"`{_src(node)}`: assignment of {v.describe()} to field {name!r} with data dims {shape}")
        items = v.items
    for comp, e in enumerate(items):
        low.emit(ctx, node, ("f", index, comp), e)
