"""The values a gtscript lowering works with: references to fields and temporaries, the types
of field and table parameters, the name bindings of a definition or inlined function, and the
definitions' source. Separate from the lowering (``_frontend``) so that ``_vectors`` and the
public names can use them without it."""

from __future__ import annotations

import ast
import inspect
import linecache
import textwrap
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import GridbufValueError

# GT4Py's types, and the names that convert to one (`float32(x)`, `int(x)`, ...).
_DTYPES = tuple(np.dtype(t) for t in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.float32, np.float64))
_CASTS = {"int32": "int32", "int64": "int64", "float32": "float32", "float64": "float64", "int": "int64", "float": "float64"}


def _annotation_namespace() -> dict[str, Any]:
    """Names an annotation may use unimported, as in GT4Py: the gtscript names and the types."""
    import importlib

    names = vars(importlib.import_module(__package__ or "gridbuf.gtscript"))
    out = {k: v for k, v in names.items() if not k.startswith("_")}
    out.update({"np": np, "int32": np.int32, "int64": np.int64, "float32": np.float32, "float64": np.float64})
    return out


_CONSTRUCTS = {
    ast.For: "a for loop",
    ast.While: "a while loop",
    ast.Return: "a return statement",
    ast.FunctionDef: "a nested function definition",
    ast.Lambda: "a lambda",
    ast.ListComp: "a list comprehension",
    ast.Try: "a try statement",
    ast.Delete: "a del statement",
    ast.Global: "a global statement",
    ast.Nonlocal: "a nonlocal statement",
    ast.Import: "an import statement",
    ast.List: "a list",
    ast.Dict: "a dict",
    ast.Set: "a set",
    ast.Starred: "a starred expression",
    ast.JoinedStr: "an f-string",
    ast.Slice: "a slice",
    ast.Raise: "a raise statement",
    ast.Assert: "an assert statement",
    ast.Break: "a break statement",
    ast.Continue: "a continue statement",
}


def _describe(node: ast.AST) -> str:
    return _CONSTRUCTS.get(type(node), f"the construct {type(node).__name__}")


@dataclass(frozen=True)
class FieldType:
    """``Field[...]``: dtype, Cartesian axes and data-dim extents."""

    dtype: np.dtype[Any]
    axes: str = "IJK"
    data_shape: tuple[int, ...] = ()
    # A `dtypes=` symbol (`Field["DT"]`), resolved when the stencil is built.
    symbol: str | None = None


@dataclass(frozen=True)
class TableType:
    """``GlobalTable[(dtype, (n, ...))]``: an array without spatial axes."""

    dtype: np.dtype[Any]
    shape: tuple[int, ...]


@dataclass(frozen=True)
class _Undefined:
    """A function local assigned in one branch of an ``if`` only: an error where it is read."""

    name: str
    line: int
    # The value the `if`'s first branch gave it, while the other branch is lowered.
    value: Any = None


@dataclass(frozen=True)
class _Table:
    """A GlobalTable parameter."""

    name: str
    type: TableType


#: The hidden K field of level numbers that GT4Py's ``K`` reads as a value (``if K == 2``): the
#: lowering adds it as the program's last field, and every call passes it in (``GTStencil``).
K_LEVELS_FIELD = "__gridbuf_k_levels"


@dataclass(frozen=True)
class _RunTimeComponent:
    """A component of a data-dim field chosen at run time by integer scalar parameters
    (``a[0, 0, 0][index]``): each component the index may name, with the condition (an IR
    expression) under which it does; the binder checks the parameters' range at every call."""

    field: int
    offset: tuple[int, int, int]
    choices: tuple[tuple[tuple, int], ...]


@dataclass(frozen=True)
class _Ref:
    """A field or temporary named in the source, before an offset or data index is applied."""

    kind: str  # "f" or "t"
    index: int
    offset: tuple[int, int, int] = (0, 0, 0)
    comp: int | None = None
    indexed: bool = False
    # A K level computed at run time: ("kvar", index expression) for a variable K offset
    # `a[0, 0, idx]`, ("kabs", index expression) for `a.at(K=idx)`.
    klevel: tuple[str, Any] | None = None


class _Ctx:
    """Name bindings of the definition or of an inlined function."""

    def __init__(self, func: Callable[..., Any], source_line: int, local: dict[str, Any] | None = None) -> None:
        self.func = func
        self.name = func.__name__
        self.file = inspect.getsourcefile(func) or "<unknown>"
        self.line0 = source_line
        self.globals = dict(func.__globals__)
        try:
            self.globals.update(inspect.getclosurevars(func).nonlocals)
        except (TypeError, ValueError):
            pass
        self.local: dict[str, Any] = dict(local or {})
        # In an inlined function: the locals written in the current `if` branch (see
        # Lowering.func_if).
        self.written: set[str] = set()
        # In an inlined function: the temporaries that hold its own locals, the only ones its
        # assignments may write in place. A parameter bound to a caller's temporary is the
        # caller's value, passed by value as in GT4Py: assigning it makes a new value.
        self.temps: set[int] = set()
        # In an inlined function: the mask each local that is still an expression was first
        # assigned under, with that expression (see Lowering.func_local): its value is read
        # only where that mask holds.
        self.masks: dict[str, tuple[Any, Any]] = {}
        # In an inlined function: locals assigned a constant expression in the `if` branch (or
        # loop body) being lowered, which read as that constant until the branch ends, each with
        # what it reads outside the branch (its temporary or a select) and the constant (see
        # Lowering.forward); and per branch being lowered, the names it made read so.
        self.forwarded: dict[str, Any] = {}
        self.forwarding: list[set[str]] = []


def _source(func: Callable[..., Any]) -> tuple[ast.FunctionDef, int]:
    """The parsed definition of `func` and its first line in its file."""
    try:
        # `inspect` reads a wrapper's wrapped function (`__wrapped__`); so does the cache.
        code = getattr(inspect.unwrap(func), "__code__", None)
        fdef, first = _parsed(code) if isinstance(code, types.CodeType) else _parse(func)
    except (OSError, TypeError, ValueError) as exc:
        raise GridbufValueError(f"invalid stencil definition {getattr(func, '__name__', func)!r}: its source is not available ({exc})") from None
    if not isinstance(fdef, ast.FunctionDef):
        raise GridbufValueError(f"invalid stencil definition {func.__name__!r}: expected a function definition")
    return fdef, first


def _parse(obj: Any) -> tuple[ast.stmt, int]:
    """The parsed definition of a function or code object and the line its node's line numbers
    count from: its own lines, found in its file by `_module_functions` (else as `inspect`
    finds them), dedented and parsed."""
    if isinstance(obj, types.CodeType):
        lines, spans = _module_functions(obj.co_filename)
        span = spans.get(obj.co_firstlineno)
        if span is not None and span[0] == obj.co_name:
            first = obj.co_firstlineno
            try:
                return ast.parse(textwrap.dedent("".join(lines[first - 1 : span[1]]))).body[0], first
            except SyntaxError:
                # A line indented less than the `def` (inside a string): from the whole file,
                # whose line numbers the node keeps.
                for line, node in _functions(ast.parse("".join(lines)).body):
                    if line == first:
                        return node, 1
    lines, first = inspect.getsourcelines(obj)
    return ast.parse(textwrap.dedent("".join(lines))).body[0], first


#: Per source file: its lines as `linecache` holds them, and where its functions are, by their
#: first line (that of their first decorator, as `co_firstlineno` counts): the name and the last
#: line. Spans, not the trees: a process keeps these for every file it defines stencils from,
#: and every tree node is an object Python's garbage collector walks in each full collection
#: (a model's whole files held 45,000 of them).
_MODULES: dict[str, tuple[list[str], dict[int, tuple[str, int]]]] = {}


def _module_functions(filename: str) -> tuple[list[str], dict[int, tuple[str, int]]]:
    """The lines of the file `filename` and its functions' spans by their first line, the file
    parsed once while its lines stay the same (`inspect` tokenizes a function's lines from its
    first to find where it ends: a quarter of the lowering of pace's 181 definitions); no spans
    where its lines are not available or do not parse."""
    linecache.checkcache(filename)
    lines = linecache.getlines(filename)
    entry = _MODULES.get(filename)
    if entry is not None and entry[0] is lines:
        return entry
    index: dict[int, tuple[str, int]] = {}
    if lines:
        try:
            tree = ast.parse("".join(lines))
        except (SyntaxError, ValueError):
            tree = None
        if tree is not None:
            _index_functions(tree.body, index)
    _MODULES[filename] = (lines, index)
    return lines, index


def _index_functions(stmts: list[ast.stmt], index: dict[int, tuple[str, int]]) -> None:
    """The spans of the functions defined in `stmts` and in the blocks they hold, by their first
    line."""
    for first, n in _functions(stmts):
        if n.end_lineno is not None:
            index[first] = (n.name, n.end_lineno)


def _functions(stmts: list[ast.stmt]) -> Iterator[tuple[int, ast.FunctionDef]]:
    """The functions defined in `stmts` and in the blocks they hold, each with its first line
    (the statements only: `ast.walk` over every expression took as long as the tokenizing)."""
    for n in stmts:
        if isinstance(n, ast.FunctionDef):
            yield min([n.lineno, *(d.lineno for d in n.decorator_list)]), n
        for block in ("body", "orelse", "finalbody", "handlers"):
            inner = getattr(n, block, None)
            if isinstance(inner, list):
                yield from _functions(inner)


#: `_parsed`'s cache: per code object by identity (two functions of different files compare
#: equal as code objects when only their locals' annotations differ), the object kept with it so
#: its identity is not reused; the least recently used entries go past `_PARSED_MAX`.
_PARSED: dict[int, tuple[types.CodeType, tuple[ast.stmt, int]]] = {}
#: Enough for the functions a model's next definitions inline (NDSL builds PyFV3's dycore module by
#: module: 814 lookups of 284 functions, 320 parsed with this bound, 284 without one), while a
#: process keeps at most this many trees: every tree node is an object each full garbage
#: collection walks (all 284 trees: 34,000 nodes, 70,000 objects with their fields).
_PARSED_MAX = 64


def _parsed(code: types.CodeType) -> tuple[ast.stmt, int]:
    """`_parse` once per code object while it is among the `_PARSED_MAX` most recently used: a
    model's stencils inline the same functions again and again. A function redefined has another
    code object; the lowering only reads the tree."""
    key = id(code)
    hit = _PARSED.pop(key, None)
    if hit is not None and hit[0] is code:
        _PARSED[key] = hit  # the most recently used again
        return hit[1]
    got = _parse(code)
    bounded_insert(_PARSED, key, (code, got), _PARSED_MAX)
    return got


def bounded_insert(cache: dict[Any, Any], key: Any, value: Any, limit: int) -> None:
    """Puts `value` in `cache` as its newest entry, first dropping the oldest (first inserted)
    entries so that at most `limit` remain; a cache that moves an entry to the end when it is read
    drops the least recently used."""
    while len(cache) >= limit:
        try:
            cache.pop(next(iter(cache)), None)
        except (StopIteration, RuntimeError):  # emptied or changed by another thread meanwhile
            break
    cache[key] = value
