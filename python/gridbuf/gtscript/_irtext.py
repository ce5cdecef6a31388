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
    counts: dict[int, int] = {}
    _count(value, counts)
    shared = {k for k, n in counts.items() if n > 1}
    return f"{kw} {tgt} {_fmt(value, remap, shared, {}) if shared else _fmt(value, remap)}"


def _operands(e: Expr) -> tuple:
    """The operands of an operation that are expressions."""
    if e[0] in ("cast", "kvar", "kabs"):
        return (e[2],)
    return e[1:]


def _count(e: Expr, counts: dict[int, int]) -> None:
    """How many times each operation (by identity) occurs in the expression written out, up to
    two: the parts the lowering's expressions share (a function's local read in several places,
    the old value of a local in both sides of a select)."""
    if e[0] in ("f", "t", "s", "c"):
        return
    n = counts.get(id(e), 0)
    if n < 2:
        counts[id(e)] = n + 1
    if n == 0:
        for x in _operands(e):
            _count(x, counts)


def _fmt(e: Expr, remap: _Remap | None = None, shared: set[int] | None = None, names: dict[int, int] | None = None) -> str:
    """The text of an expression. The operations in `shared` (by identity) are written once, as
    ``let N ...`` where they first occur (`names` numbers them) and ``ref N`` after (see
    ``parse.rs``), so a statement's text grows with its distinct parts, not with their copies."""
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
    let = ""
    if shared is not None and names is not None and id(e) in shared:
        n = names.get(id(e))
        if n is not None:
            return f"ref {n}"
        n = names[id(e)] = len(names)
        let = f"let {n} "
    if tag == "cast":
        return f"{let}cast {e[1]} {_fmt(e[2], remap, shared, names)}"
    if tag in ("kvar", "kabs"):  # (tag, read at offset zero, index): a read at a run-time K level
        r = e[1]
        acc = f"f {r[1] if remap is None else remap[0][r[1]]} {r[2]}" if r[0] == "f" else f"t {r[1]}"
        return f"{let}{tag} {acc} {_fmt(e[2], remap, shared, names)}"
    return let + " ".join([tag, *(_fmt(a, remap, shared, names) for a in e[1:])])
