"""Calls that pass one array as a field the stencil reads and one it writes, where the program
with the two as one field is refused: when the read field may read a copy taken at the call.

GT4Py's numpy backend runs such a call statement after statement on the one array, so a read
sees exactly the writes of the statements before it. The program with the two fields as one
computes that, but the engine refuses some such programs (a field written by the stencil and
read at a horizontal offset: its schedules run statements point by point, tile by tile). Where
no read of the read field reaches a point that a statement before it wrote through the other,
every read sees the array as the call found it, so the stencil as defined, with the read field
bound to a copy taken at the call, computes the same. PyFV3 calls three such stencils:
``fill_corners_delp_pt_w(delp, pt, w, delp, pt, w)`` (reads at offsets into a temporary, then
one write) and ``uc_contra_corners``/``vc_contra_corners`` (each corner's region reads points
the other corners' regions do not write).

"Before" is GT4Py's order: computations one after the other; in a PARALLEL computation each
statement over its whole interval (its value before its assignment) before the next. In a
FORWARD or BACKWARD computation, or one with a `while` loop, statements interleave level by
level or pass by pass, and the intervals of a computation may run in another order than
written, so there, and between intervals, every write counts as before every read. "Reaches" is
decided in I and J only (any level may meet any other), from the regions' boxes for the call's
domain (a statement outside regions reaches everywhere), for every offset of the read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from dataclasses import field as _field
from typing import Any


def _writes(target: tuple, field: int) -> bool:
    t = target[2] if target[0] in ("k", "kv") else target
    return t[0] == "f" and t[1] == field


#: A region's box: per axis I, J, the lower and upper bound as (anchor, offset), anchor "S" (the
#: domain's start) or "E" (its end), None where unbounded; None for no region (everywhere).
Box = tuple[tuple[Any, Any], tuple[Any, Any]] | None


@dataclass(frozen=True)
class _Access:
    """A statement that reads the copied field (`offsets`: its I/J offsets) or writes the other
    (`offsets` empty): its place in GT4Py's order and its region."""

    index: int
    comp: int
    interval: int
    parallel: bool
    box: Box
    offsets: tuple[tuple[int, int], ...]


def _offsets(e: Any, field: int, out: set[tuple[int, int]], seen: set[int]) -> None:
    if not isinstance(e, tuple) or not e or id(e) in seen:
        return
    seen.add(id(e))
    if e[0] == "f":
        if e[1] == field:
            out.add((e[3][0], e[3][1]))
    elif e[0] in ("kvar", "kabs") and e[1][0] == "f" and e[1][1] == field:
        out.add((0, 0))  # a run-time K level of the point's own column
        _offsets(e[2], field, out, seen)
    elif e[0] not in ("t", "s", "c"):
        for x in e[1:]:
            _offsets(x, field, out, seen)


def _box(text: str) -> Box:
    """The box of an IR region line's bounds (``S -1 S 0 E 0 *``)."""
    tokens = text.split()
    bounds: list[Any] = []
    i = 0
    while i < len(tokens):
        if tokens[i] == "*":
            bounds.append(None)
            i += 1
        else:
            bounds.append((tokens[i], int(tokens[i + 1])))
            i += 2
    return ((bounds[0], bounds[1]), (bounds[2], bounds[3]))


def _span(axis: tuple[Any, Any], n: int) -> tuple[float, float]:
    lo, hi = axis
    at = lambda b, inf: inf if b is None else (b[1] if b[0] == "S" else n + b[1])  # noqa: E731
    return at(lo, -math.inf), at(hi, math.inf)


def _meets(a: Box, shift: tuple[int, int], b: Box, domain: tuple[int, int]) -> bool:
    """Whether box `a` moved by `shift` meets box `b` (in I and J) for a domain of `domain` points."""
    if a is None or b is None:
        return True
    for axis in (0, 1):
        alo, ahi = _span(a[axis], domain[axis])
        blo, bhi = _span(b[axis], domain[axis])
        alo, ahi = alo + shift[axis], ahi + shift[axis]
        if alo >= ahi or blo >= bhi or ahi <= blo or bhi <= alo:
            return False
    return True


@dataclass
class CopyPlan:
    """The fields of a call that may read a copy of the array they share with a written field
    (`readers`), exactly where `exact` says so for the call's domain."""

    readers: tuple[str, ...]
    pairs: list[tuple[list[_Access], list[_Access]]]
    _decided: dict[tuple[int, int], bool] = _field(default_factory=dict)

    def exact(self, domain: tuple[int, int]) -> bool:
        """Whether no read reaches a point a write before it changed, for this I/J domain."""
        hit = self._decided.get(domain)
        if hit is None:
            hit = self._decided[domain] = not any(
                _meets(r.box, o, w.box, domain)
                for reads, writes in self.pairs
                for r in reads
                for w in writes
                if w.comp < r.comp or (w.comp == r.comp and (w.interval != r.interval or w.index < r.index or not r.parallel))
                for o in r.offsets
            )
        return hit


def accesses(body: list[Any], reader: int, writer: int) -> tuple[list[_Access], list[_Access]] | None:
    """The reads of field `reader` and the writes of field `writer` in the lowered statements
    `body` (IR lines: strings, and ``(line, target, value)`` with the definition's field
    indices); None where something writes `reader`."""
    comp = interval = 0
    parallel = False
    region: Box = None
    reads: list[_Access] = []
    writes: list[_Access] = []
    loops: set[int] = set()
    for i, item in enumerate(body):
        if isinstance(item, str):
            if item.startswith("comp "):
                comp += 1
                parallel = item.split()[1] == "PARALLEL"
            elif item.startswith("interval "):
                interval += 1
            elif item.startswith("region "):
                region = _box(item[len("region "):])
            elif item == "while":
                loops.add(comp)
            continue
        _, target, value = item
        box, region = region, None  # a region line holds for the statement after it only
        if _writes(target, reader):
            return None
        found: set[tuple[int, int]] = set()
        seen: set[int] = set()
        _offsets(value, reader, found, seen)
        if target[0] == "kv":
            _offsets(target[1], reader, found, seen)
        if found:
            reads.append(_Access(i, comp, interval, parallel, box, tuple(sorted(found))))
        if _writes(target, writer):
            writes.append(_Access(i, comp, interval, parallel, box, ()))
    # Statements in a loop run again after those that follow them in it.
    reads = [r if r.comp not in loops else _Access(r.index, r.comp, r.interval, False, r.box, r.offsets) for r in reads]
    return reads, writes
