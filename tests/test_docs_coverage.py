"""Every public name is in the API reference (``docs/reference/*.rst``), without building the docs.

The reference is written as autodoc / autosummary directives. This test reads them from the
``.rst`` sources (no Sphinx needed), resolves each entry the way autosummary does (relative to
the page's current module, else as an absolute dotted name) and checks, for every name in the
``__all__`` of each module of ``MODULES``, that a page whose current module is that module lists
the very same object under that name: ``.. autosummary::`` entries (``~gridbuf.SyncState`` under
``gridbuf.storage`` lists the class ``gridbuf.storage`` exports) or ``.. autofunction::``,
``.. autoclass::``, ``.. autodata::``, ... directives.

A name added to an ``__all__`` makes this test fail until it is added to the reference page of
its module; an entry that no longer resolves (a renamed or removed object) fails too.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path
from typing import Any, NamedTuple

import pytest

REFERENCE = Path(__file__).resolve().parent.parent / "docs" / "reference"

#: The modules whose public names (``__all__``) the reference must list.
MODULES = (
    "gridbuf",
    "gridbuf.gtscript",
    "gridbuf.gt4py",
    "gridbuf.storage",
    "gridbuf.distributed",
    "gridbuf.kernels",
    "gridbuf.mirrored",
    "gridbuf.errors",
)

#: Modules that import an optional dependency, and that dependency: where it is not installed
#: their names and their pages' entries are not checked.
OPTIONAL = {"gridbuf.gt4py": "gt4py"}


def _available(module_name: str) -> bool:
    dep = OPTIONAL.get(module_name)
    return dep is None or importlib.util.find_spec(dep) is not None


_MODULE_DIRECTIVE = re.compile(r"^\.\. (?:currentmodule|module|automodule)::\s*(\S+)\s*$")
_AUTO_DIRECTIVE = re.compile(r"^\s*\.\. auto(?:function|class|data|exception|attribute|method)::\s*(\S+)\s*$")
_AUTOSUMMARY = re.compile(r"^(\s*)\.\. autosummary::\s*$")
_MISSING = object()


class Entry(NamedTuple):
    page: str
    line: int
    module: str  # the page's current module where the entry stands
    text: str  # as written, e.g. "zeros", "~gridbuf.SyncState"


def _entries(path: Path) -> list[Entry]:
    """The autosummary entries and auto* directives of one page, with their current module."""
    lines = path.read_text().splitlines()
    module = ""
    out: list[Entry] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        m = _MODULE_DIRECTIVE.match(line)
        if m:
            module = m.group(1)
        m = _AUTO_DIRECTIVE.match(line)
        if m:
            out.append(Entry(path.name, i + 1, module, m.group(1)))
        m = _AUTOSUMMARY.match(line)
        if m:
            indent = len(m.group(1))
            i += 1
            # The directive's body: options (":toctree: ..."), blank lines, then one entry a line.
            while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > indent):
                text = lines[i].strip()
                if text and not text.startswith(":"):
                    out.append(Entry(path.name, i + 1, module, text))
                i += 1
            continue
        i += 1
    return out


def reference_entries() -> list[Entry]:
    return [e for page in sorted(REFERENCE.glob("*.rst")) for e in _entries(page)]


def _lookup(dotted: str) -> Any:
    """The object named by an absolute dotted name, or _MISSING.

    As autosummary does: an attribute of the parent module first (``gridbuf.stencil`` is the
    function ``gridbuf`` exports, not the submodule of that name), then the longest importable
    prefix followed by attributes (a method of a class, a module)."""
    parts = dotted.split(".")
    if len(parts) > 1:
        try:
            parent = importlib.import_module(".".join(parts[:-1]))
        except ImportError:
            pass
        else:
            obj = getattr(parent, parts[-1], _MISSING)
            if obj is not _MISSING:
                return obj
    for n in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:n]))
        except ImportError:
            continue
        for attr in parts[n:]:
            obj = getattr(obj, attr, _MISSING)
            if obj is _MISSING:
                return _MISSING
        return obj
    return _MISSING


def resolve(entry: Entry) -> Any:
    """What autosummary documents for the entry: relative to the current module, else absolute."""
    name = entry.text.lstrip("~")
    if entry.module:
        obj = _lookup(f"{entry.module}.{name}")
        if obj is not _MISSING:
            return obj
    return _lookup(name)


def missing_names(entries: list[Entry]) -> list[str]:
    """``module.name`` for every name of a module's ``__all__`` that no entry under it lists."""
    listed: dict[str, list[tuple[str, Any]]] = {}
    for e in entries:
        listed.setdefault(e.module, []).append((e.text.lstrip("~").rsplit(".", 1)[-1], resolve(e)))
    missing = []
    for module_name in filter(_available, MODULES):
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            if not any(n == name and o is obj for n, o in listed.get(module_name, [])):
                missing.append(f"{module_name}.{name}")
    return missing


def _require_reference() -> None:
    if not REFERENCE.is_dir():
        pytest.skip(f"no {REFERENCE} (the tests run outside a checkout)")


def test_every_public_name_is_in_the_reference() -> None:
    _require_reference()
    missing = missing_names(reference_entries())
    assert not missing, (
        "public names missing from the API reference (add each to the autosummary or auto* "
        "directives of its module's page in docs/reference/):\n" + "\n".join(missing)
    )


def test_every_reference_entry_resolves() -> None:
    _require_reference()
    entries = reference_entries()
    assert len(entries) > 100, f"only {len(entries)} entries found: is the parser still reading the pages?"
    broken = [f"{e.page}:{e.line}: {e.text} (current module {e.module})" for e in entries if _available(e.module) and resolve(e) is _MISSING]
    assert not broken, "reference entries that name no object:\n" + "\n".join(broken)


def test_a_name_left_out_is_reported(tmp_path: Path) -> None:
    page = tmp_path / "page.rst"
    page.write_text(
        ".. currentmodule:: gridbuf.kernels\n\n"
        ".. autosummary::\n   :toctree: generated/\n\n   copy\n   ~gridbuf.kernels.hdiff\n\n"
        ".. autodata:: laplacian\n"
    )
    entries = _entries(page)
    assert [e.text for e in entries] == ["copy", "~gridbuf.kernels.hdiff", "laplacian"]
    missing = missing_names(entries)
    assert {"gridbuf.kernels.ALL", "gridbuf.kernels.noop", "gridbuf.kernels.tridiag"} <= set(missing)
    assert not {"gridbuf.kernels.copy", "gridbuf.kernels.hdiff", "gridbuf.kernels.laplacian"} & set(missing)
