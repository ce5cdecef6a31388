#!/usr/bin/env python3
"""Usage: python3 scripts/binding_import_graph.py crates/gridbuf-python/src

Import graph of the binding crate's files: edges from `use crate::...` (multi-line blocks
included), inline `crate::module::` paths and `super::`; prints edges and any cycle."""
import os, re, sys
root = sys.argv[1]
mods = {}
for dp, _, fs in os.walk(root):
    for f in fs:
        if f.endswith('.rs'):
            p = os.path.join(dp, f)
            rel = os.path.relpath(p, root)[:-3]
            name = rel.replace('/mod', '').replace('/', '::')
            mods[name] = p
def strip_comments(s):
    tok = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])\'', re.S)
    return tok.sub(lambda m: '""' if m.group(0).startswith('"') else ' ', s)
def resolve(path_segs):
    # longest prefix that names a module file
    for n in range(len(path_segs), 0, -1):
        cand = '::'.join(path_segs[:n])
        if cand in mods:
            return cand
    return None
edges = {m: set() for m in mods}
for m, p in mods.items():
    s = strip_comments(open(p).read())
    parent = m.rsplit('::', 1)[0] if '::' in m else ''
    is_modrs = p.endswith('mod.rs') or p.endswith('lib.rs')
    base = m if is_modrs else parent  # what `super` means here: parent module of m
    sup = parent
    # expand `use crate::{a::b, c}` blocks
    for blk in re.finditer(r'\buse\s+(crate|super)::\{([^;]*)\};', s):
        prefix = [] if blk.group(1) == 'crate' else (sup.split('::') if sup else [])
        for item in re.split(r',(?![^{]*\})', blk.group(2)):
            segs = [x for x in re.findall(r'[A-Za-z_][A-Za-z0-9_]*', item.split('{')[0])]
            t = resolve(prefix + segs)
            if t and t != m: edges[m].add(t)
    if re.search(r'\buse\s+super::\*', s) and sup:
        edges[m].add(sup)
    for hit in re.finditer(r'\b(crate|super)((?:::[A-Za-z_][A-Za-z0-9_]*)+)', s):
        segs = hit.group(2).split('::')[1:]
        prefix = [] if hit.group(1) == 'crate' else (sup.split('::') if sup else [])
        t = resolve(prefix + segs)
        if t and t != m and not (m.startswith(t + '::') and t + '::' in m and hit.group(1)=='super' and not segs):
            edges[m].add(t)
    # `mod x;` declarations are containment, not imports
edges.pop('lib', None)
for m in edges: edges[m].discard('lib')
# parents re-exporting children (`pub use x::*`) are containment; ignore edges parent->child
for m in list(edges):
    edges[m] = {t for t in edges[m] if not t.startswith(m + '::')}
for m in sorted(edges):
    print(f"{m:28} -> {', '.join(sorted(edges[m])) or '-'}")
# cycle detection (Tarjan)
index, low, st, on, sccs, i = {}, {}, [], set(), [], [0]
sys.setrecursionlimit(10000)
def sc(v):
    index[v] = low[v] = i[0]; i[0] += 1; st.append(v); on.add(v)
    for w in edges.get(v, ()):
        if w not in index: sc(w); low[v] = min(low[v], low[w])
        elif w in on: low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        c = []
        while True:
            w = st.pop(); on.discard(w); c.append(w)
            if w == v: break
        if len(c) > 1: sccs.append(c)
for v in edges:
    if v not in index: sc(v)
print("cycles:", sccs if sccs else "none")
