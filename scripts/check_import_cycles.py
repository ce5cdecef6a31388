#!/usr/bin/env python3
"""Import cycles between the files of a Rust source tree.

Usage::

    python3 scripts/check_import_cycles.py crates/gridbuf/src/gtscript crates/gridbuf-python/src

Each argument is a root, checked on its own: the graph has one node per ``.rs`` file under the
root and an edge ``a.rs -> b.rs`` when ``a.rs`` names an item of the module ``b.rs`` defines:

* ``use crate::...``, ``use super::...``, ``use self::...`` (``pub``/``pub(crate)`` too), with
  brace groups over several lines expanded (``use super::{ir::{Expr, Ty}, plan};``);
* ``use child::...`` and inline ``child::item`` in a file that declares ``mod child;`` (so
  ``pub use child::X`` in a ``mod.rs`` is an edge ``mod.rs -> child.rs``);
* paths in code: ``super::jit::foo(``, ``crate::gtscript::plan::Plan``, ``super::super::X``.

A path resolves to the file of the longest module prefix that has one (``foo.rs`` or
``foo/mod.rs``; ``lib.rs``/``main.rs`` for the crate root), so an item resolves to the file of
the module that defines (or re-exports) it. The crate root for ``crate::`` is the nearest ``src``
directory above the root. Declaring a child (``mod child;``) is not an edge; references outside
the root are not edges; references of a file to itself are dropped.

Test code is ignored: files named ``tests.rs`` or ``*_tests.rs``, items under ``#[cfg(test)]``
(``mod tests { ... }``, ``use`` lines, functions) and any ``mod tests { ... }`` block. Comments
and string and character literals are ignored too. Not modelled: inline non-test ``mod x { }``
blocks (their paths count as the file's), ``#[path = ...]`` attributes, and macros that build
paths.

Prints each cycle as ``a.rs -> b.rs -> a.rs`` (paths relative to the root): for every import
that lies on a cycle, the shortest cycle through it (listing every elementary cycle would run to
thousands in a tangled folder), then one ``#`` line per group of files that reach each other.
Exits 1 when there is a cycle, 0 when there is none, 2 on a usage error. Standard library only.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from pathlib import Path

_CHAR = re.compile(r"'(?:\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]{1,6}\}|.)|[^\\'\n])'")
_RAW = re.compile(r'b?r(#*)"')
_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_INLINE = re.compile(rf"(?<![\w:])((?:crate|super|self)(?:\s*::\s*{_IDENT})+)")
_USE = re.compile(r"(?<![\w:])use\s+")
_MOD_DECL = re.compile(rf"(?<![\w:])mod\s+({_IDENT})\s*;")
_CFG_TEST = re.compile(r"#\s*\[\s*cfg\s*\(\s*test\s*\)\s*\]")
_MOD_TESTS = re.compile(r"(?<![\w:])mod\s+tests\s*\{")
_ATTRIBUTE = re.compile(r"\s*#\s*!?\s*\[")


def is_test_file(path: Path) -> bool:
    return path.name == "tests.rs" or path.name.endswith("_tests.rs")


def strip_comments_and_literals(text: str) -> str:
    """The source with comments, string literals and character literals blanked (lines kept)."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    if text[i] == "\n":
                        out.append("\n")
                    i += 1
        elif (c in "rb") and (m := _RAW.match(text, i)) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            if m.group(0).startswith("b") and not m.group(0).startswith("br"):
                m = None  # b"...": an ordinary byte string, handled below
            if m is not None:
                end = text.find('"' + m.group(1), m.end())
                end = n if end < 0 else end + 1 + len(m.group(1))
                out.append('""' + "\n" * text.count("\n", i, end))
                i = end
            else:
                out.append(c)
                i += 1
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j + 1
        elif c == "'" and (m := _CHAR.match(text, i)):
            out.append("' '")
            i = m.end()
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _matching_brace(text: str, open_at: int) -> int:
    """Index just past the ``}`` matching the ``{`` at ``open_at`` (or the end of the text)."""
    depth = 0
    for j in range(open_at, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return j + 1
    return len(text)


def _item_end(text: str, start: int) -> int:
    """Index just past the item starting at ``start``: its braced body, or its ``;``."""
    j = start
    while True:  # further attributes of the same item
        m = _ATTRIBUTE.match(text, j)
        if not m:
            break
        depth, k = 0, m.end() - 1
        while k < len(text):
            if text[k] == "[":
                depth += 1
            elif text[k] == "]":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        j = k + 1
    semi, brace = text.find(";", j), text.find("{", j)
    if brace >= 0 and (semi < 0 or brace < semi):
        return _matching_brace(text, brace)
    return len(text) if semi < 0 else semi + 1


def strip_test_code(text: str) -> str:
    """The source without ``#[cfg(test)]`` items and ``mod tests { ... }`` blocks (blanked,
    lines kept). Expects comments and literals stripped already."""
    while True:
        m = _CFG_TEST.search(text) or _MOD_TESTS.search(text)
        if m is None:
            return text
        end = _item_end(text, m.end()) if m.re is _CFG_TEST else _matching_brace(text, m.end() - 1)
        text = text[: m.start()] + "\n" * text.count("\n", m.start(), end) + text[end:]


def expand_use_tree(tree: str) -> list[list[str]]:
    """``a::{b, c::{d, self}, e as f, *}`` -> [[a, b], [a, c, d], [a, c], [a, e], [a]]."""
    tree = re.sub(rf"\s+as\s+{_IDENT}", "", tree)  # renames: the path is what counts
    tree = re.sub(r"\s+", "", tree)
    paths: list[list[str]] = []

    def walk(prefix: list[str], s: str) -> None:
        parts, depth, cur = [], 0, ""  # s split at its top-level commas
        for ch in s:
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
            else:
                cur += ch
        parts.append(cur)
        for part in filter(None, parts):
            brace = part.find("{")
            if brace >= 0:
                head = [seg for seg in part[:brace].split("::") if seg]
                walk(prefix + head, part[brace + 1 : part.rfind("}")])
                continue
            segs = [seg for seg in part.split("::") if seg]
            segs = [seg for seg in segs if seg != "*"]
            if segs and segs[-1] == "self":
                segs = segs[:-1]
            paths.append(prefix + segs)

    walk([], tree)
    return [p for p in paths if p]


def use_paths(text: str) -> list[list[str]]:
    """Every path a ``use`` declaration of the (stripped) source names, braces expanded."""
    found = []
    for m in _USE.finditer(text):
        semi = text.find(";", m.end())
        if semi < 0:
            continue
        found.extend(expand_use_tree(text[m.end() : semi]))
    return found


def inline_paths(text: str, children: Iterable[str]) -> list[list[str]]:
    """Paths in code that start with ``crate``, ``super``, ``self`` or a declared child module."""
    found = [re.split(r"\s*::\s*", m.group(1)) for m in _INLINE.finditer(text)]
    names = sorted(set(children))
    if names:
        child = re.compile(rf"(?<![\w:])((?:{'|'.join(names)})(?:\s*::\s*{_IDENT})+)")
        found.extend(re.split(r"\s*::\s*", m.group(1)) for m in child.finditer(text))
    return found


class Crate:
    """The files of one crate's ``src`` directory, by module path."""

    def __init__(self, src: Path) -> None:
        self.src = src

    def module_of(self, path: Path) -> tuple[str, ...]:
        rel = path.relative_to(self.src).with_suffix("")
        parts = rel.parts
        if parts in (("lib",), ("main",)):
            return ()
        if parts[-1] == "mod":
            return tuple(parts[:-1])
        return tuple(parts)

    def file_of(self, module: tuple[str, ...]) -> Path | None:
        if not module:
            for name in ("lib.rs", "main.rs"):
                if (self.src / name).is_file():
                    return self.src / name
            return None
        base = self.src.joinpath(*module)
        for candidate in (base.with_suffix(".rs"), base / "mod.rs"):
            if candidate.is_file():
                return candidate
        return None

    def resolve(self, current: tuple[str, ...], path: list[str], children: set[str]) -> Path | None:
        """The file of the longest module prefix of ``path`` (relative to module ``current``)."""
        segs = list(path)
        if segs[0] == "crate":
            module: list[str] = []
            segs = segs[1:]
        elif segs[0] in ("super", "self"):
            module = list(current)
            while segs and segs[0] in ("super", "self"):
                if segs.pop(0) == "super":
                    if not module:
                        return None
                    module.pop()
        elif segs[0] in children:
            module = list(current)
        else:
            return None  # another crate, or a name this checker does not follow
        best = self.file_of(tuple(module))
        for seg in segs:
            module.append(seg)
            got = self.file_of(tuple(module))
            if got is None:
                break
            best = got
        return best


def find_src(root: Path) -> Path:
    for d in (root, *root.parents):
        if d.name == "src":
            return d
    raise SystemExit(f"error: no src directory above {root}")


def import_graph(root: Path) -> dict[Path, set[Path]]:
    """File -> files it imports, for the non-test ``.rs`` files under ``root``."""
    root = root.resolve()
    crate = Crate(find_src(root))
    files = sorted(p for p in root.rglob("*.rs") if not is_test_file(p))
    inside = set(files)
    graph: dict[Path, set[Path]] = {f: set() for f in files}
    for f in files:
        text = strip_test_code(strip_comments_and_literals(f.read_text(encoding="utf-8")))
        current = crate.module_of(f)
        children = set(_MOD_DECL.findall(text))
        for path in use_paths(text) + inline_paths(text, children):
            target = crate.resolve(current, path, children)
            if target is not None and target != f and target in inside:
                graph[f].add(target)
    return graph


def strongly_connected(graph: dict[Path, set[Path]]) -> list[list[Path]]:
    """Tarjan's strongly connected components of more than one node, each sorted."""
    index: dict[Path, int] = {}
    low: dict[Path, int] = {}
    stack: list[Path] = []
    on_stack: set[Path] = set()
    comps: list[list[Path]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    comps.append(sorted(comp))
    return sorted(comps)


def _shortest_path(graph: dict[Path, set[Path]], members: set[Path], src: Path, dst: Path) -> list[Path]:
    """Shortest path ``src -> ... -> dst`` inside ``members`` (breadth first, sorted order)."""
    parent: dict[Path, Path | None] = {src: None}
    queue = [src]
    for v in queue:
        if v == dst:
            break
        for w in sorted(graph[v] & members):
            if w not in parent:
                parent[w] = v
                queue.append(w)
    path: list[Path] = []
    node: Path | None = dst
    while node is not None:
        path.append(node)
        node = parent[node]
    return path[::-1]


def cycles(graph: dict[Path, set[Path]]) -> list[list[Path]]:
    """For every import that lies on a cycle, the shortest cycle through it; each cycle starts
    and ends at its smallest file, duplicates dropped, shortest first. (Every elementary cycle
    would be far too many in a tangled folder; these cover every import that needs cutting.)"""
    found: set[tuple[Path, ...]] = set()
    for comp in strongly_connected(graph):
        members = set(comp)
        for u in comp:
            for v in sorted(graph[u] & members):
                ring = [u] + _shortest_path(graph, members, v, u)[:-1]
                k = ring.index(min(ring))
                ring = ring[k:] + ring[:k]
                found.add(tuple(ring + [ring[0]]))
    return [list(c) for c in sorted(found, key=lambda c: (len(c), [str(p) for p in c]))]


def check(root: Path) -> int:
    graph = import_graph(root)
    base = root.resolve()
    found = cycles(graph)
    for cyc in found:
        print(" -> ".join(str(p.relative_to(base)) for p in cyc))
    groups = strongly_connected(graph)
    for comp in groups:
        print(f"# {len(comp)} files import each other in a circle: " + ", ".join(str(p.relative_to(base)) for p in comp))
    print(f"{root}: {len(found)} import cycle(s) among {len(graph)} files", file=sys.stderr)
    return 1 if found else 0


def main(argv: list[str]) -> int:
    if len(argv) < 2 or any(a in ("-h", "--help") for a in argv[1:]):
        print(__doc__)
        return 2
    status = 0
    for arg in argv[1:]:
        root = Path(arg)
        if not root.is_dir():
            print(f"error: {arg} is not a directory", file=sys.stderr)
            return 2
        status = max(status, check(root))
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
