"""The IR text the lowering writes (see ``gridbuf::gtscript::ir``): expressions are tuples in
prefix form, ``("f", field, comp, (di, dj, dk))``, ``("t", temp, (di, dj, dk))``, ``("s",
scalar)``, ``("c", value)``, ``(op, *operands)``, reads at run-time K levels ``("kvar" | "kabs",
read at offset zero, index)``, written out here; a statement's target at a K offset is ``("k",
dk, target)``."""

from __future__ import annotations

from typing import Any

import numpy as np

Expr = tuple

#: The deepest expression the core's IR parser takes (``ir.rs``: nesting beyond 200 is refused).
IR_MAX_DEPTH = 200


def _shape(e: Any, memo: dict[int, tuple[int, int, bool]]) -> tuple[int, int, bool]:
    """Depth, node count (shared parts counted at every use, as the IR text writes them) and
    whether it reads at run-time K levels, of an expression; `memo` by identity keeps it linear
    in the distinct tuples."""
    key = id(e)
    if key in memo:
        return memo[key]
    tag = e[0]
    if tag in ("f", "t", "s", "c"):
        out = (1, 1, False)
    else:
        parts = [_shape(x, memo) for x in (e[2:] if tag == "cast" else e[1:]) if isinstance(x, tuple) and x]
        out = (1 + max((p[0] for p in parts), default=0), 1 + sum(p[1] for p in parts), tag in ("kvar", "kabs") or any(p[2] for p in parts))
    memo[key] = out
    return out


def _uses_once(e: Any, tag: str, seen: set[int]) -> Any:
    """The indices of the fields (`tag` "f") or scalars ("s") an expression, target or
    statement names, each shared subexpression walked once (`seen`, by identity, may be shared
    between calls): linear in the distinct nodes, where the expressions share their parts."""
    if isinstance(e, tuple) and e and id(e) not in seen:
        seen.add(id(e))
        if e[0] == tag:
            yield e[1]
        elif e[0] not in ("f", "s", "c"):
            for x in e:
                yield from _uses_once(x, tag, seen)


_Remap = tuple[dict[int, int], dict[int, int]]


def _fmt_stmt(item: tuple, remap: _Remap) -> str:
    line, target, value = item
    kw = "stmt"
    if target[0] == "k":  # ("k", dk, target): an assignment at the K offset dk
        kw, target = f"stmtk {line} {target[1]}", target[2]
    else:
        kw = f"stmt {line}"
    tgt = f"f {remap[0][target[1]]} {target[2]}" if target[0] == "f" else f"t {target[1]}"
    return f"{kw} {tgt} {_fmt(value, remap)}"


def _fmt(e: Expr, remap: _Remap | None = None) -> str:
    tag = e[0]
    if tag == "f":
        return f"f {e[1] if remap is None else remap[0][e[1]]} {e[2]} {e[3][0]} {e[3][1]} {e[3][2]}"
    if tag == "t":
        return f"t {e[1]} {e[2][0]} {e[2][1]} {e[2][2]}"
    if tag == "s":
        return f"s {e[1] if remap is None else remap[1][e[1]]}"
    if tag == "c":
        v = e[1]
        if isinstance(v, bool):
            return f"lit bool {int(v)}"
        if isinstance(v, int):
            return f"lit int64 {v}"
        if isinstance(v, np.integer):  # an int32, int16 or int8 literal (see Lowering.lit)
            return f"lit {v.dtype.name} {int(v)}"
        if isinstance(v, np.floating):  # a float32 literal: its value exactly, as a float64
            return f"lit {v.dtype.name} {float(v)!r}"
        return f"lit float64 {float(v)!r}"
    if tag == "cast":
        return f"cast {e[1]} {_fmt(e[2], remap)}"
    if tag in ("kvar", "kabs"):  # (tag, read at offset zero, index): a read at a run-time K level
        r = e[1]
        acc = f"f {r[1] if remap is None else remap[0][r[1]]} {r[2]}" if r[0] == "f" else f"t {r[1]}"
        return f"{tag} {acc} {_fmt(e[2], remap)}"
    return " ".join([tag, *(_fmt(a, remap) for a in e[1:])])
