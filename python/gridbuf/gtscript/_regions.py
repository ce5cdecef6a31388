"""Horizontal regions in the frontend: ``with horizontal(region[I[0] - 1 : I[0] + 2, :], ...)``
read as GT4Py's frontend reads them, to the IR's ``region`` lines (see
``gridbuf::gtscript::ir``). What a region restricts, and what it reads, is the core's business
(``gridbuf::gtscript::region``)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from ._irtext import Expr
from ._values import _Ctx, _Ref

if TYPE_CHECKING:
    from ._lower_base import _LoweringBase

_AXES = ("I", "J")


def is_axis_index(v: Any) -> bool:
    """An ``I[0] + 1`` of gridbuf's or of GT4Py's own gtscript (duck-typed)."""
    return all(hasattr(v, a) for a in ("axis", "index", "offset")) and isinstance(getattr(v, "index", None), int)


def horizontal(low: _LoweringBase, ctx: _Ctx, stmt: ast.With) -> list[str] | None:
    """The regions of ``with horizontal(...)``, as IR bound text (``"S 0 S 1 * *"``); None if
    ``stmt`` is another ``with``."""
    if len(stmt.items) != 1 or low.call_name(ctx, stmt.items[0].context_expr) != "horizontal":
        for i in stmt.items:
            if low.call_name(ctx, i.context_expr) == "horizontal":
                raise low.error(ctx, stmt, "`with horizontal(...)` takes no other context in the same `with`")
        return None
    call = stmt.items[0].context_expr
    assert isinstance(call, ast.Call)  # call_name() names only calls
    if not call.args or call.keywords:
        raise low.error(ctx, stmt, "horizontal(...) takes one or more region[...] arguments")
    out = []
    for arg in call.args:
        if not (isinstance(arg, ast.Subscript) and isinstance(arg.value, ast.Name) and arg.value.id == "region"):
            raise low.error(ctx, stmt, f"horizontal({ast.unparse(arg)}): expected region[...]")
        sl = arg.slice
        if not (isinstance(sl, ast.Tuple) and len(sl.elts) == 2):
            raise low.error(ctx, stmt, f"{ast.unparse(arg)}: a region names an interval of I and one of J, region[I..., J...]")
        out.append(" ".join(_interval(low, ctx, e, axis) for e, axis in zip(sl.elts, _AXES)))
    if any(isinstance(s, ast.With) for s in stmt.body):
        raise low.error(ctx, stmt, "a `with` block inside a horizontal region (GT4Py refuses it too)")
    return out


def _interval(low: _LoweringBase, ctx: _Ctx, node: ast.expr, axis: str) -> str:
    """One axis of a region: a slice, or one position (``p`` is ``p : p + 1``)."""
    if isinstance(node, ast.Slice):
        if node.step is not None:
            raise low.error(ctx, node, f"region interval {ast.unparse(node)!r} with a step")
        lower = None if node.lower is None else _value(low, ctx, node.lower, axis)
        upper = None if node.upper is None else _value(low, ctx, node.upper, axis)
    else:
        lower = _value(low, ctx, node, axis)
        if lower is None:
            raise low.error(ctx, node, f"region interval {ast.unparse(node)!r}: None is not a position")
        upper = lower + 1
    return f"{_bound(low, ctx, node, lower, axis)} {_bound(low, ctx, node, upper, axis)}"


def _bound(low: _LoweringBase, ctx: _Ctx, node: ast.AST, v: Any, axis: str) -> str:
    """GT4Py's AxisBound: an int counts from the start (>= 0) or the end (< 0); ``I[0] + n``
    from the start, ``I[-1] + n`` from the end (offset n - 1)."""
    if v is None:
        return "*"
    if is_axis_index(v):
        if v.axis != axis:
            raise low.error(ctx, node, f"region bound {v} along {axis}: expected a position of axis {axis}")
        return f"{'S' if v.index >= 0 else 'E'} {v.index + v.offset}"
    return f"{'E' if v < 0 else 'S'} {v}"


def _value(low: _LoweringBase, ctx: _Ctx, node: ast.expr, axis: str) -> Any:
    """A region bound's value: an int, None, or an axis position (``I[0]``, ``I[-1] - 2``, or
    an external holding one)."""
    from . import AxisIndex

    if isinstance(node, ast.Constant) and (node.value is None or (isinstance(node.value, int) and not isinstance(node.value, bool))):
        return node.value
    if isinstance(node, ast.Name):
        v = low.lookup(ctx, node.id, node)
        if isinstance(v, tuple) and v and v[0] == "c" and isinstance(v[1], int) and not isinstance(v[1], bool):
            return v[1]
        if is_axis_index(v) or (isinstance(v, int) and not isinstance(v, bool)):
            return v
        if isinstance(v, _Ref) or isinstance(v, tuple):
            raise low.error(ctx, node, f"region bound {node.id!r} is known only at run time: region bounds are compile-time positions (I[0] + n, I[-1] - n, ints, externals)")
        raise low.error(ctx, node, f"region bound {node.id!r} is {v!r}: expected an axis position such as I[0] + 1 or an int")
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in _AXES:
        if node.value.id != axis:
            raise low.error(ctx, node, f"region bound {ast.unparse(node)!r}: expected a position of axis {axis}")
        idx = node.slice
        if isinstance(idx, ast.Constant) and idx.value == 0 and not isinstance(idx.value, bool):
            return AxisIndex(axis, 0)
        if isinstance(idx, ast.UnaryOp) and isinstance(idx.op, ast.USub) and isinstance(idx.operand, ast.Constant) and idx.operand.value == 1:
            return AxisIndex(axis, -1)
        raise low.error(ctx, node, f"region bound {ast.unparse(node)!r}: write {axis}[0] or {axis}[-1], plus or minus an offset")
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        a, b = _value(low, ctx, node.left, axis), _value(low, ctx, node.right, axis)
        sign = 1 if isinstance(node.op, ast.Add) else -1
        if is_axis_index(a) and isinstance(b, int):
            return AxisIndex(a.axis, a.index, a.offset + sign * b)
        if isinstance(a, int) and isinstance(b, int):
            return a + sign * b
        if isinstance(a, int) and is_axis_index(b) and sign == 1:
            return AxisIndex(b.axis, b.index, b.offset + a)
        raise low.error(ctx, node, f"region bound {ast.unparse(node)!r}: expected a position plus or minus an int")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = _value(low, ctx, node.operand, axis)
        if isinstance(v, int):
            return -v
    raise low.error(ctx, node, f"region bound {ast.unparse(node)!r}: expected an axis position such as I[0] + 1, an int or None")


def offset_reads(e: Any, out: set[tuple[str, int]]) -> None:
    """Collects the fields and temporaries ``e`` reads at a horizontal offset."""
    if isinstance(e, tuple) and e:
        if e[0] == "f":
            if e[3][0] or e[3][1]:
                out.add(("f", e[1]))
        elif e[0] == "t":
            if e[2][0] or e[2][1]:
                out.add(("t", e[1]))
        elif e[0] not in ("s", "c"):
            for x in e[1:]:
                offset_reads(x, out)


def check_offsets(low: _LoweringBase, ctx: _Ctx, stmt: ast.With, body: list[Expr | str], written: set[tuple[str, int]]) -> None:
    """GT4Py refuses a region that reads, at a horizontal offset, a field or temporary written
    earlier outside regions: so does gridbuf."""
    reads: set[tuple[str, int]] = set()
    for item in body:
        if isinstance(item, tuple):
            offset_reads(item[2], reads)
    # Temporaries the lowering makes (masks of `if`s, a function's locals: "__" names) are not
    # GT4Py's to refuse: it sees their reads in a region at the offsets the region's source
    # names (`al_ip1 = al[0, 1, 0]` outside, `al_ip1` inside), where the inlined IR reads them
    # at the composed offset; the planner's extents count region reads either way.
    bad = sorted(r for r in reads & written if r[0] == "f" or not low.temps[r[1]].startswith("__"))
    if bad:
        names = ", ".join(low.fields[i][0] if k == "f" else low.temps[i] for k, i in bad)
        raise low.error(ctx, stmt, f"the horizontal region reads {names} at a horizontal offset after it was written outside a region: GT4Py refuses this (its extents cannot account for it)")
