#!/usr/bin/env python3
"""Prints the import graph of the gtscript engine's files and checks it.

An edge A -> B means file A names an item of file B: in a `use` (multi-line blocks and
nested braces included) or in an inline path (`super::jit::foo(`, `crate::gtscript::rt::Lane`).
Comments and doc links are not imports; nor are `mod x;` declarations. Test files
(`*_tests.rs`, `tests.rs`) and the `#[cfg(test)] mod ...` block at the end of a file may
import anything and are left out.

Checks: no cycle between files, and every edge goes down the layers
ir -> ops -> passes -> plan -> rt -> jit -> exec (a file imports only from lower layers or
from its own layer). Exit status 1 when a check fails.

Usage: scripts/gtscript_imports.py [path to crates/gridbuf/src/gtscript]
"""

import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(__file__), "..", "crates", "gridbuf", "src", "gtscript")
LAYERS = ["ir", "ops", "passes", "plan", "rt", "jit", "exec"]


def module_of(rel):
    """`jit/mod.rs` -> ('jit',), `jit/column.rs` -> ('jit', 'column'), `mod.rs` -> ()."""
    parts = rel[:-3].split("/")
    if parts[-1] == "mod":
        parts = parts[:-1]
    return tuple(parts)


def is_test_file(rel):
    name = os.path.basename(rel)
    return name.endswith("_tests.rs") or name == "tests.rs"


def strip_code(text):
    """The file's code without comments, string literals and its trailing test module."""
    m = re.search(r"^#\[cfg\(test\)\]\s*\n\s*(pub(\([^)]*\))?\s+)?mod \w+\s*\{", text, re.M)
    if m:
        text = text[: m.start()]
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r'"(\\.|[^"\\])*"', '""', text)
    return text


def expand(tree):
    """Expands a use tree `a::{b, c::{d, e}}` to its paths."""
    tree = re.sub(r"\s+", "", tree)
    out = []

    def go(prefix, s):
        depth = 0
        i = s.find("{")
        if i < 0:
            for p in split_top(s):
                out.append(prefix + p)
            return
        # s = head::{inner} [, rest...] handled by split_top at this level
        for item in split_top(s):
            j = item.find("{")
            if j < 0:
                out.append(prefix + item)
                continue
            head = item[:j]
            inner = item[j + 1 : item.rindex("}")]
            go(prefix + head, inner)
        del depth

    go("", tree)
    return out


def split_top(s):
    items, depth, cur = [], 0, ""
    for ch in s:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
        else:
            cur += ch
    if cur:
        items.append(cur)
    return items


def main():
    files = {}
    for dirpath, _, names in os.walk(ROOT):
        for n in names:
            if n.endswith(".rs"):
                rel = os.path.relpath(os.path.join(dirpath, n), ROOT).replace(os.sep, "/")
                files[rel] = module_of(rel)
    by_module = {m: rel for rel, m in files.items()}
    children = {}
    for m in by_module:
        if m:
            children.setdefault(m[:-1], set()).add(m[-1])

    def resolve(mod, path):
        """The file a path names, from a file of module `mod`; None if outside gtscript."""
        segs = [s for s in path.split("::") if s]
        if not segs:
            return None
        if segs[0] == "crate":
            if len(segs) < 2 or segs[1] != "gtscript":
                return None
            base, segs = (), segs[2:]
        elif segs[0] == "super":
            base = mod
            while segs and segs[0] == "super":
                base, segs = base[:-1], segs[1:]
        elif segs[0] == "self":
            base, segs = mod, segs[1:]
        elif segs[0] in children.get(mod, ()):
            base = mod
        else:
            return None
        cur = base
        for s in segs:
            if s == "self":
                continue
            if cur + (s,) in by_module:
                cur = cur + (s,)
            else:
                break
        return by_module.get(cur)

    edges = {}
    for rel, mod in sorted(files.items()):
        if is_test_file(rel):
            continue
        code = strip_code(open(os.path.join(ROOT, rel)).read())
        targets = set()
        for m in re.finditer(r"\buse\s+([^;]+);", code):
            for p in expand(m.group(1)):
                p = re.sub(r"\bas\w+$", "", p.split(" as ")[0])
                t = resolve(mod, p)
                if t:
                    targets.add(t)
        code_wo_use = re.sub(r"\buse\s+[^;]+;", "", code)
        for m in re.finditer(r"\b((?:crate|super|self|[a-z_][a-z0-9_]*)(?:::[A-Za-z_][A-Za-z0-9_]*)+)", code_wo_use):
            t = resolve(mod, m.group(1))
            if t:
                targets.add(t)
        targets.discard(rel)
        edges[rel] = sorted(targets)

    def layer(rel):
        m = files[rel]
        if not m:
            return len(LAYERS)  # gtscript/mod.rs: compile(), above every layer
        head = m[0]
        if head in LAYERS:
            return LAYERS.index(head)
        return len(LAYERS)

    bad = []
    print("import graph (file -> files it imports):")
    for rel in sorted(edges, key=lambda r: (layer(r), r)):
        print(f"  {rel} -> {', '.join(edges[rel]) or '-'}")
        for t in edges[rel]:
            if layer(t) > layer(rel):
                bad.append(f"{rel} -> {t} goes up the layers")
    # Cycles: depth-first search.
    state, stack, cycles = {}, [], []

    def dfs(v):
        state[v] = 1
        stack.append(v)
        for w in edges.get(v, []):
            if state.get(w) == 1:
                cycles.append(stack[stack.index(w):] + [w])
            elif w in edges and not state.get(w):
                dfs(w)
        stack.pop()
        state[v] = 2

    for v in sorted(edges):
        if not state.get(v):
            dfs(v)
    for c in cycles:
        bad.append("cycle: " + " -> ".join(c))
    if bad:
        print("\nproblems:")
        for b in bad:
            print("  " + b)
        return 1
    print("\nno cycle; every import goes down the layers " + " -> ".join(LAYERS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
