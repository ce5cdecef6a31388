"""The IR text the lowering writes (see ``gridbuf::gtscript::ir``): expressions are tuples in
prefix form, ``("f", field, comp, (di, dj, dk))``, ``("t", temp, (di, dj, dk))``, ``("s",
scalar)``, ``("c", value)``, ``(op, *operands)``, reads at run-time K levels ``("kvar" | "kabs",
read at offset zero, index)``, written out here; a statement's target at a K offset is ``("k",
dk, target)``."""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

Expr = tuple

#: The deepest expression the core's IR parser takes (``ir.rs``: nesting beyond 200 is refused).
IR_MAX_DEPTH = 200

#: The tags of reads and constants: the leaves of expressions.
_LEAVES = frozenset(("f", "t", "s", "c"))
#: Operations whose one expression operand is their third item (see `_operands`).
_ONE_OPERAND = frozenset(("cast", "kvar", "kabs"))
#: What `_shape` gives a leaf.
_LEAF_SHAPE = (1, 1, False)


def _shape(e: Any, memo: dict[int, tuple[Any, tuple[int, int, bool]]]) -> tuple[int, int, bool]:
    """Depth, node count (shared parts counted at every use, as the IR text writes them) and
    whether it reads at run-time K levels, of an expression; `memo` by identity keeps it linear
    in the distinct tuples (it holds each tuple too, so no identity in it is reused while it
    lives: one memo may serve a whole lowering)."""
    key = id(e)
    hit = memo.get(key)
    if hit is not None and hit[0] is e:
        return hit[1]
    tag = e[0]
    if tag in _LEAVES:
        out = _LEAF_SHAPE
    else:
        depth, size, kread = 0, 1, tag in ("kvar", "kabs")
        for x in e[2:] if tag == "cast" else e[1:]:
            if isinstance(x, tuple) and x:
                d, n, k = _shape(x, memo)
                depth = d if d > depth else depth
                size += n
                kread = kread or k
        out = (depth + 1, size, kread)
    memo[key] = (e, out)
    return out


_NO_TEMPS: frozenset[int] = frozenset()


def _temps_read(e: Any, memo: dict[int, tuple[Any, frozenset[int]]]) -> frozenset[int]:
    """The temporaries an expression reads; `memo` by identity, holding each tuple with its
    answer (so no identity in it is reused while it lives: one memo may serve a whole lowering,
    where a function's locals are asked about at every reassignment of another)."""
    if not (isinstance(e, tuple) and e):
        return _NO_TEMPS
    tag = e[0]
    if tag == "t":
        return frozenset((e[1],))
    if tag in ("f", "s", "c"):
        return _NO_TEMPS
    key = id(e)
    hit = memo.get(key)
    if hit is not None and hit[0] is e:
        return hit[1]
    out = _NO_TEMPS
    for x in e[1:]:
        got = _temps_read(x, memo)
        if got and not got <= out:
            out = out | got
    memo[key] = (e, out)
    return out


def _uses_once(e: Any, tag: str, seen: set[int]) -> list[Any]:
    """The indices of the fields (`tag` "f") or scalars ("s") an expression, target or
    statement names, in the order a walk from the left meets them, each shared subexpression
    walked once (`seen`, by identity, may be shared between calls): linear in the distinct
    nodes, where the expressions share their parts. A loop, not recursion: this runs on every
    statement a lowering writes."""
    out = []
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, tuple) and x and id(x) not in seen:
            seen.add(id(x))
            if x[0] == tag:
                out.append(x[1])
            elif x[0] not in ("f", "s", "c"):
                stack.extend(reversed(x))
    return out


def _fields_and_scalars(body: list) -> tuple[set[int], set[int]]:
    """The indices of the fields and of the scalars that a body's statements (its tuples: line,
    target, value) name, each shared part walked once: one walk, where `_uses_once` would take
    two."""
    fields: set[int] = set()
    scalars: set[int] = set()
    seen: set[int] = set()
    # Each part of a statement by itself: `item[1:]` would be a new tuple per statement, whose
    # identity a later one could reuse once it is freed.
    stack = [part for item in body if isinstance(item, tuple) for part in item[1:]]
    while stack:
        x = stack.pop()
        if isinstance(x, tuple) and x and id(x) not in seen:
            seen.add(id(x))
            tag = x[0]
            if tag == "f":
                fields.add(x[1])
            elif tag == "s":
                scalars.add(x[1])
            elif tag != "c":
                stack.extend(x)
    return fields, scalars


_Remap = tuple[dict[int, int], dict[int, int]]


def _fmt_stmt(item: tuple, remap: _Remap) -> str:
    line, target, value = item
    kw = "stmt"
    index = ""
    if target[0] == "k":  # ("k", dk, target): an assignment at the K offset dk
        kw, target = f"stmtk {line} {target[1]}", target[2]
    elif target[0] == "kv":  # ("kv", index, target): at the point's level plus a run-time index
        kw, index, target = f"stmtkv {line}", " " + _fmt(target[1], remap), target[2]
    else:
        kw = f"stmt {line}"
    tgt = f"f {remap[0][target[1]]} {target[2]}" if target[0] == "f" else f"t {target[1]}"
    counts: dict[int, int] = {}
    _count(value, counts)
    shared = {k for k, n in counts.items() if n > 1}
    return f"{kw} {tgt}{index} {_fmt(value, remap, shared, {}) if shared else _fmt(value, remap)}"


def _operands(e: Expr) -> tuple:
    """The operands of an operation that are expressions."""
    if e[0] in ("cast", "kvar", "kabs"):
        return (e[2],)
    return e[1:]


def _count(e: Expr, counts: dict[int, int]) -> None:
    """How many times each operation (by identity) occurs in the expression written out, up to
    two: the parts the lowering's expressions share (a function's local read in several places,
    the old value of a local in both sides of a select)."""
    if e[0] in _LEAVES:
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


#: Operations the core computes by calling a math function (``ops/math.rs``), each costing tens
#: of arithmetic instructions: a value holding one is worth a temporary when statements share it.
_CALLS = frozenset((
    "exp", "log", "log10", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
    "asinh", "acosh", "atanh", "gamma", "cbrt", "erf", "erfc", "pow", "mod",
))  # fmt: skip


def share_across(body: list, temps: list[str], dtype_of: Callable[[Any], Any] = lambda e: None) -> list:
    """The statements `body` with a value that several statements of one straight run share (a
    gtscript function's local read by the statements its `if`s and tuple results make, a
    function called again with the same arguments; equal parts are made one first) computed once, into a new temporary (appended to `temps`) just before the first of
    them, where it holds a call of a math function. Only where nothing that value reads is
    written between its first and its last reader, so each reads what it computed before; a
    run is the statements between two other lines (interval, region, while, ...), leaving out a
    region's statement (the temporary would need its region) and a `while` loop's mask (which
    the core computes again before every pass), and a value with reads at run-time K levels
    (guarded where they are read). pace's saturation adjustment computed exp and log 250 times
    per point each, over a few dozen in its source. `dtype_of` gives an expression's dtype where
    the frontend knows it (else None)."""
    table: dict[tuple, tuple] = {}
    memo: dict[int, tuple] = {}
    body = [item if isinstance(item, str) else (item[0], item[1], _intern(item[2], table, memo)) for item in body]
    out: list = []
    run: list[tuple] = []
    for i, item in enumerate(body):
        if isinstance(item, str):
            out += _share_run(run, temps, dtype_of)
            run = []
            out.append(item)
            continue
        alone = (i > 0 and isinstance(body[i - 1], str) and body[i - 1].startswith("region")) or (
            i + 1 < len(body) and body[i + 1] == "while"
        ) or item[1][0] in ("k", "kv")
        if alone:
            out += _share_run(run, temps, dtype_of)
            run = []
            out.append(item)
        else:
            run.append(item)
    return out + _share_run(run, temps, dtype_of)


def _share_run(run: list[tuple], temps: list[str], dtype_of: Callable[[Any], Any]) -> list[tuple]:
    if len(run) < 2:
        return run
    # Where each operation occurs: the positions of the statements holding it.
    orders = [_post_order(value) for _, _, value in run]
    where: dict[int, list[int]] = {}
    shared = False
    for pos, order in enumerate(orders):
        for e in order:
            got = where.get(id(e))
            if got is None:
                where[id(e)] = [pos]
            else:
                got.append(pos)
                shared = True
    if not shared:
        return run
    costly: dict[int, bool] = {}
    kreads: dict[int, bool] = {}
    reads: dict[int, frozenset] = {}
    # The shared values available, by each quantity they read: a write ends exactly these.
    readers_of: dict[Any, set[int]] = {}
    quantities: dict[int, Any] = {}
    avail: dict[int, tuple] = {}  # id of a shared value -> (the value, its temporary's read)
    out: list[tuple] = []
    # Each statement's select arms, found where a hoisted value's readers need them only.
    arms: dict[int, dict[int, _Arm | None]] = {}

    def guards(p: int) -> dict[int, _Arm | None]:
        got = arms.get(p)
        if got is None:
            got = arms[p] = _guards(orders[p])
        return got

    writes = [_written(target) for _, target, _ in run]
    # The temporaries the run writes once, each with its statement's position and value: a
    # reader's mask computed after the shared value is its value there.
    counts: dict[tuple[str, int], int] = {}
    for w in writes:
        counts[w] = counts.get(w, 0) + 1
    single = {(t[0], t[1]): (p, v) for p, (_, t, v) in enumerate(run) if t[0] == "t" and counts[(t[0], t[1])] == 1}
    carry = _Carry(writes, single, quantities, kreads)
    conds_at: dict[tuple[int, str], tuple] = {}
    for pos, (line, target, value) in enumerate(run):
        memo: dict[int, Any] = {}

        def rewrite(e: Any, cover: frozenset = frozenset()) -> Any:
            # `cover`: the statements that read the value being hoisted around `e`, which
            # need no temporary of `e`'s own.
            if not (isinstance(e, tuple) and e) or e[0] in _LEAVES:
                return e
            key = id(e)
            if key in memo:
                return memo[key]
            got = avail.get(key)
            if got is not None:
                memo[key] = got[1]
                return got[1]
            readers: list[int] = where.get(key, [])
            # (`readers` ascend: none is later where the last is not)
            later = bool(readers) and readers[-1] > pos and (not cover or any(p > pos and p not in cover for p in readers))
            if later and _costly(e, costly) and not _kreads_any(e, kreads):
                inside = frozenset(readers)
                inner = _rebuild(e, lambda x: rewrite(x, inside))
                index = len(temps)
                temps.append(f"__shared{index}")
                ref = ("t", index, (0, 0, 0))
                when = _needed_where(key, [p for p in readers if p >= pos], pos, guards, carry)
                if when is not None and _quantities(when, quantities) & set(writes[pos:]):
                    # A condition carried back from masks computed later: computed once, into a
                    # temporary of its own, for every value shared before this statement.
                    text = repr(when)
                    got_cond = conds_at.get((pos, text))
                    if got_cond is None:
                        c_index = len(temps)
                        temps.append(f"__shared{c_index}")
                        out.append((line, ("t", c_index), when))
                        got_cond = conds_at[(pos, text)] = ("t", c_index, (0, 0, 0))
                    when = got_cond
                if when is None:
                    out.append((line, ("t", index), inner))
                else:
                    # Elsewhere no reader reads it: zero of its type where the frontend knows
                    # the type (a statement that does not read its own target, which the
                    # core's inliner may fold into a single reader: pace's saturation
                    # adjustment, 980 statements with the temporary's old value, 817 with
                    # zero, 12.5 -> 10.7 ms), else its old value.
                    dt = dtype_of(inner)
                    other = ("cast", dt.name, ("c", 0)) if dt is not None else ref
                    out.append((line, ("t", index), ("sel", when, inner, other)))
                avail[key] = (e, ref)
                reads[key] = _quantities(e, quantities)
                for q in reads[key]:
                    readers_of.setdefault(q, set()).add(key)
                memo[key] = ref
                return ref
            if e[0] in _ONE_OPERAND:
                x = rewrite(e[2], cover)
                new = e if x is e[2] else (e[0], e[1], x)
            else:
                parts = [rewrite(x, cover) if x.__class__ is tuple and x and x[0] not in _LEAVES else x for x in e[1:]]
                new = e if all(map(operator.is_, parts, e[1:])) else (e[0], *parts)
            memo[key] = new
            return new

        out.append((line, target, rewrite(value)))
        written = (target[0], target[1])
        for key in readers_of.pop(written, ()):
            del avail[key]
            for q in reads.pop(key):
                if q != written:
                    readers_of[q].discard(key)
    return out


class _Arm:
    """A select's arm that an operation is computed for: the select's condition, which arm
    (True: the second operand), the arm it sits in (None: none) and how deep."""

    __slots__ = ("cond", "then", "outer", "depth")

    def __init__(self, cond: Any, then: bool, outer: _Arm | None) -> None:
        self.cond: Any = cond
        self.then: bool = then
        self.outer: _Arm | None = outer
        self.depth: int = 1 + (outer.depth if outer is not None else 0)


def _post_order(value: Any) -> list[tuple]:
    """The operations of an expression (not its reads and constants), each once, every one
    after its operands."""
    order: list[tuple] = []
    if not (value.__class__ is tuple and value) or value[0] in _LEAVES:
        return order
    seen: set[int] = set()

    def visit(e: tuple) -> None:
        seen.add(id(e))
        for x in e[2:] if e[0] in _ONE_OPERAND else e[1:]:
            if x.__class__ is tuple and x and x[0] not in _LEAVES and id(x) not in seen:
                visit(x)
        order.append(e)

    visit(value)
    return order


def _guards(order: list[tuple]) -> dict[int, _Arm | None]:
    """Per operation of a statement's value (by identity; `order`: its `_post_order`): the
    innermost select arm holding every place the value reads it (None where some place is in
    no arm), as the core's guarded runs find them (``plan/tape.rs``)."""
    if not order:
        return {}
    arm: dict[int, _Arm | None] = {id(order[-1]): None}

    def common(a: _Arm | None, b: _Arm | None) -> _Arm | None:
        # The innermost arm of `a`'s chain that `b`'s chain holds too, or an arm of the same
        # test and side: the value is needed only where that test holds (pace's icloud reads
        # its snow melt in selects of one mask at several depths, and computed its `pow` at
        # every point).
        if a is b:
            return a
        if a is None or b is None:
            return None
        chain = []
        y: _Arm | None = b
        while y is not None:
            chain.append(y)
            y = y.outer
        x: _Arm | None = a
        while x is not None:
            for y in chain:
                if y is x:
                    return x
                if y.then == x.then and _same_cond(x.cond, y.cond):
                    return _Arm(x.cond, x.then, common(x.outer, y.outer))
            x = x.outer
        return None

    def reach(x: Any, a: _Arm | None) -> None:
        if x.__class__ is tuple and x and x[0] not in _LEAVES:
            k = id(x)
            if k not in arm:
                arm[k] = a
            else:
                old = arm[k]
                if old is not a:
                    arm[k] = common(old, a)

    for e in reversed(order):  # every operation before its operands
        here = arm[id(e)]
        tag = e[0]
        if tag == "sel":
            reach(e[1], here)
            reach(e[2], _Arm(e[1], True, here))
            reach(e[3], _Arm(e[1], False, here))
        else:
            for x in e[2:] if tag in _ONE_OPERAND else e[1:]:
                reach(x, here)
    return arm


def _written(target: tuple) -> tuple[str, int]:
    """The quantity (kind, index) a statement's target writes."""
    if target[0] == "k":
        target = target[2]
    return (target[0], target[1])


def _needed_where(key: int, readers: list[int], pos: int, guards: Callable[[int], dict[int, _Arm | None]], carry: _Carry) -> Any:
    """Where the shared value `key`, computed before statement `pos` of a run, is needed: the
    condition of the innermost select arm holding it in each reader, as an expression that
    has that value before statement `pos` (see `_Carry`), weakened to its sides that call no
    math function (`_cheapened`), or-ed; None where some reader needs it outside every such
    arm. Its temporary then takes it only where the condition holds, so the core's guarded
    run computes it only there (pace's saturation adjustment shared 294 values of exp and
    log, computed at every point where the statements reading them are each inside an
    `if`)."""
    conds: list[Any] = []
    for p in readers:
        a = guards(p).get(key)
        # The innermost arm whose condition can be computed before `pos` (an outer one holds
        # more points: still every point that needs the value).
        c = None
        while a is not None:
            c = carry.implied(a.cond, a.then, pos, p, 4)
            if c is not None:
                c = _cheapened(_outer_test(c, key) if a.then else c, carry.costly)
                if c is not None:
                    break
            a = a.outer
        if a is None:
            return None
        if not any(_same_cond(c, x) for x in conds):
            conds.append(c)
    when = conds[0]
    for c in conds[1:]:
        when = ("or", when, c)
    return when


def _cheapened(c: Any, costly: dict[int, bool]) -> Any:
    """The condition `c`, or where it calls a math function, a condition that holds wherever
    it does and calls none (the sides of an `and` that call none); None where there is none.
    A shared value computed only where a test of itself holds costs the value twice (pace's
    icloud tests its ice saturation's difference in an `else`)."""
    if not _costly(c, costly):
        return c
    sides = _sides(c, True)
    if sides is None:
        return None
    parts = [x for x in (_cheapened(y if then else ("not", y), costly) for y, then in sides) if x is not None]
    return _both(parts)


def _sides(e: Any, then: bool) -> tuple[tuple[Any, bool], tuple[Any, bool]] | None:
    """The two conditions each of which holds wherever `e` holds (`then`) or fails (not
    `then`), as (condition, whether it holds): the sides of an `and` (of an `or`, where it
    fails; `sel c x False` is `c and x`); None for any other condition."""
    if e[0] == "not":
        return _sides(e[1], not then)
    if (then and e[0] == "and") or (not then and e[0] == "or") or (then and e[0] == "sel" and e[3] == ("c", False)):
        return ((e[1], then), (e[2], then))
    return None


def _both(parts: list[Any]) -> Any:
    """The conditions `parts` (none, one or two) and-ed; None for none."""
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else ("and", parts[0], parts[1])


def _same_cond(a: Any, b: Any) -> bool:
    """Whether the conditions `a` and `b` are one: the same operation, the same temporary's
    read, or the negations of such (each reader in an `else` arm makes a negation of its own:
    pace's icloud or-ed one 95 times)."""
    if a is b or (a[0] == b[0] == "t" and a == b):
        return True
    return a[0] == b[0] == "not" and _same_cond(a[1], b[1])


def _outer_test(c: Any, key: int) -> Any:
    """A nested `if`'s mask carried back, ``sel outer test False``, where its test reads the
    shared value `key` itself: the outer test, a condition holding at every point the mask
    does (the value is computed there anyway, for the test; with the test in its condition it
    was computed twice)."""
    while isinstance(c, tuple) and c[0] == "sel" and c[3] == ("c", False) and _holds(c[2], key):
        c = c[1]
    return c


def _holds(e: Any, key: int) -> bool:
    """Whether the expression `e` holds the operation `key` (by identity)."""
    seen: set[int] = set()
    stack = [e]
    while stack:
        x = stack.pop()
        if not (isinstance(x, tuple) and x) or x[0] in _LEAVES or id(x) in seen:
            continue
        if id(x) == key:
            return True
        seen.add(id(x))
        stack.extend(_operands(x))
    return False


class _Carry:
    """Conditions of a run's masks carried back to earlier statements, over the run's targets
    (`writes`), the temporaries it writes once (`single`: position and value) and the
    quantities each expression reads (`quantities`, a memo; `kreads`: whether it reads at
    run-time K levels, a memo); memoised, since every shared value's readers ask about the
    same masks."""

    def __init__(
        self, writes: list[tuple], single: dict[tuple[str, int], tuple[int, Any]], quantities: dict[int, Any], kreads: dict[int, bool]
    ) -> None:
        self.writes = writes
        self.single = single
        self.quantities = quantities
        self.kreads = kreads
        self.costly: dict[int, bool] = {}
        self._between: dict[tuple[int, int], set[tuple]] = {}
        self._back: dict[tuple[int, int, int, int], Any] = {}
        self._implied: dict[tuple[int, bool, int, int, int], Any] = {}

    def between(self, pos: int, at: int) -> set[tuple]:
        got = self._between.get((pos, at))
        if got is None:
            got = self._between[(pos, at)] = set(self.writes[pos:at])
        return got

    def back(self, e: Any, pos: int, at: int, depth: int) -> Any:
        """The expression `e` as read before statement `at` of the run, as an expression with
        the same value before statement `pos` (`pos <= at`): `e` itself where no statement
        between writes what it reads; else each temporary written there by its one statement
        of the run replaced by that statement's value (carried back in turn, `depth` times at
        most), as masks are: a mask temporary is computed once, from values that do not change
        before it. None where that fails, or where it would read at run-time K levels
        (computed at every point, such a read could leave the column where the reader's was
        guarded)."""
        if self.between(pos, at).isdisjoint(_quantities(e, self.quantities)):
            return e
        if not (isinstance(e, tuple) and e):
            return e
        memo = (id(e), pos, at, depth)
        if memo in self._back:
            return self._back[memo]
        got: Any = None
        if e[0] == "t":
            w = self.single.get(("t", e[1]))
            if depth > 0 and w is not None and e[2] == (0, 0, 0) and pos <= w[0] < at and not _kreads_any(w[1], self.kreads):
                got = self.back(w[1], pos, w[0], depth - 1)
        elif e[0] not in ("f", "s", "c", "kvar", "kabs"):
            parts = [self.back(x, pos, at, depth) for x in _operands(e)]
            if all(x is not None for x in parts):
                got = (e[0], e[1], parts[0]) if e[0] == "cast" else (e[0], *parts)
        self._back[memo] = got
        return got

    def implied(self, e: Any, then: bool, pos: int, at: int, depth: int) -> Any:
        """A condition, computed before statement `pos`, that holds wherever `e` read before
        statement `at` holds (`then`) or fails (not `then`): `e` carried back (`back`) where
        it can be, else one side of an `and` (of an `or`, where it fails) that can, through the
        masks written once in between. A mask computed after values it tests changed (pace's
        icloud: `tz`, updated by the melting, tested again for deposition) cannot be carried
        back, but the outer test and-ed into it can; None where nothing can."""
        memo = (id(e), then, pos, at, depth)
        if memo not in self._implied:
            self._implied[memo] = self._implied_now(e, then, pos, at, depth)
        return self._implied[memo]

    def _implied_now(self, e: Any, then: bool, pos: int, at: int, depth: int) -> Any:
        c = self.back(e, pos, at, depth)
        if c is not None:
            return c if then else ("not", c)
        if not (isinstance(e, tuple) and e):
            return None
        if e[0] == "not":
            return self.implied(e[1], not then, pos, at, depth)
        if e[0] == "t":
            w = self.single.get(("t", e[1]))
            if depth == 0 or w is None or e[2] != (0, 0, 0) or not pos <= w[0] < at:
                return None
            return self.implied(w[1], then, pos, w[0], depth - 1)
        sides = _sides(e, then)
        if sides is None:
            return None
        # a side that is a constant restricts nothing
        parts = [x for x in (self.implied(y, t, pos, at, depth) for y, t in sides) if x is not None and x[0] != "c"]
        return _both(parts)


def _rebuild(e: tuple, f: Any) -> tuple:
    """`e` with `f` applied to its operands; `e` itself where none changes."""
    if e[0] in ("cast", "kvar", "kabs"):
        x = f(e[2])
        return e if x is e[2] else (e[0], e[1], x)
    parts = [f(x) for x in e[1:]]
    return e if all(a is b for a, b in zip(parts, e[1:])) else (e[0], *parts)


def _costly(e: Any, memo: dict[int, bool]) -> bool:
    if not (isinstance(e, tuple) and e) or e[0] in _LEAVES:
        return False
    found = memo.get(id(e))
    if found is None:
        found = memo[id(e)] = e[0] in _CALLS or any(_costly(x, memo) for x in _operands(e))
    return found


def _kreads_any(e: Any, memo: dict[int, bool]) -> bool:
    if not (isinstance(e, tuple) and e) or e[0] in _LEAVES:
        return False
    found = memo.get(id(e))
    if found is None:
        found = memo[id(e)] = e[0] in ("kvar", "kabs") or any(_kreads_any(x, memo) for x in _operands(e))
    return found


#: A function's value or local larger than this (in IR nodes) goes to a temporary where its
#: readers would compute it again at other points (see `CallsMixin.spill`,
#: `ExpressionsMixin.shifted_local`): the core's inliner counts about 16 nodes as the cost of a
#: temporary's store and load (`passes/inline.rs`).
_SHIFTED_NODES = 16


def _reads(e: Any) -> Iterator[tuple]:
    """The field and temporary reads (`("f", ...)`, `("t", ...)` nodes) of an expression, each
    shared part walked once."""
    seen: set[int] = set()
    stack = [e]
    while stack:
        x = stack.pop()
        if not (isinstance(x, tuple) and x) or id(x) in seen:
            continue
        seen.add(id(x))
        if x[0] in ("f", "t"):
            yield x
        elif x[0] not in ("s", "c"):
            stack.extend(_operands(x))


def _neighbourhood(e: Any, memo: dict[int, tuple[Any, frozenset[Any]]]) -> bool:
    """Whether an expression reads fields or temporaries at two or more horizontal offsets (a
    stencil's neighbourhood, not a point's value); `memo` as `_offsets` takes it."""
    return len(_offsets(e, memo)) > 1


def _offsets(e: Any, memo: dict[int, tuple[Any, frozenset[Any]]]) -> frozenset[tuple[int, int]]:
    """The horizontal offsets at which an expression reads fields and temporaries (the reads
    `_reads` finds); `memo` as `_read_union` takes it."""
    return _read_union(e, memo, lambda x: (x[-1][0], x[-1][1]))


def _quantities(e: Any, memo: dict[int, tuple[Any, frozenset[Any]]]) -> frozenset[tuple[str, int]]:
    """The fields and temporaries (kind, index) an expression reads (the reads `_reads`
    finds); `memo` as `_read_union` takes it."""
    return _read_union(e, memo, lambda x: (x[0], x[1]))


def _read_union(e: Any, memo: dict[int, tuple[Any, frozenset[Any]]], of: Callable[[tuple], Any]) -> frozenset[Any]:
    """`of` each field and temporary read (`("f", ...)`, `("t", ...)` nodes, as `_reads` finds
    them) of an expression, as a set; `memo` by identity, holding each tuple with its answer (so
    no identity in it is reused while it lives: one memo, for one `of`, may serve a whole
    lowering)."""
    if not (isinstance(e, tuple) and e):
        return frozenset()
    tag = e[0]
    if tag in ("f", "t"):
        return frozenset((of(e),))
    if tag in ("s", "c"):
        return frozenset()
    key = id(e)
    hit = memo.get(key)
    if hit is not None and hit[0] is e:
        return hit[1]
    out: frozenset[Any] = frozenset()
    for x in _operands(e):
        got = _read_union(x, memo, of)
        if got and not got <= out:
            out = out | got
    memo[key] = (e, out)
    return out


def _intern(e: Any, table: dict[tuple, tuple], memo: dict[int, tuple]) -> Any:
    """`e` with every part replaced by the first equal one seen (`table`, by structure; `memo`,
    by identity), so that equal parts are one object. Literals are equal only with the same
    type and text (``1``, ``1.0``, ``True`` and ``-0.0``, ``0.0`` are not)."""
    if not (isinstance(e, tuple) and e):
        return e
    got = memo.get(id(e))
    if got is not None:
        return got
    tag = e[0]
    if tag == "c":
        key: tuple = ("c", type(e[1]), repr(e[1]))
        new = e
    elif tag in ("f", "t", "s"):
        key = new = e
    elif tag in _ONE_OPERAND:
        x = _intern(e[2], table, memo)
        new = e if x is e[2] else (tag, e[1], x)
        key = (tag, id(e[1]) if isinstance(e[1], tuple) else e[1], id(x))
    else:
        parts = [_intern(x, table, memo) for x in e[1:]]
        new = e if all(map(operator.is_, parts, e[1:])) else (tag, *parts)
        key = (tag, *[id(x) if isinstance(x, tuple) else x for x in parts])
    out = table.setdefault(key, new)
    memo[id(e)] = out
    return out
