"""The public API, name by name, against a committed snapshot (``tests/data/public_api.json``).

For every public module of the package (``gridbuf`` and each submodule whose dotted name has no
part starting with an underscore, found by walking the package), the snapshot holds the public
names of ``dir(module)`` (those not starting with ``_``), and for every class that a public
module exposes and that gridbuf defines (``__module__`` starting with ``gridbuf``), its public
attributes: the public names and the dunder names (``__array_ufunc__``, ``__gt_dims__``, ...)
that gridbuf's classes in its MRO define themselves; what Python's or NumPy's base classes add
(``args``, ``add_note``) depends on their versions and is left out. A test fails naming each module, class
or name that went missing or appeared, so a refactoring that is meant to change no behaviour
cannot change the API unnoticed.

A deliberate API change regenerates the snapshot (and the diff is reviewed with the change)::

    PYTHONPATH=python .venv/bin/python tests/test_public_api.py --regenerate

``--check`` (or no argument) prints the differences and exits non-zero when there are any.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import pkgutil
import sys
from pathlib import Path
from typing import Any

SNAPSHOT = Path(__file__).parent / "data" / "public_api.json"

#: Dunder names every class has or that say nothing about the API; left out of the snapshot.
_IGNORED_DUNDERS = frozenset(
    {
        "__dict__",
        "__doc__",
        "__module__",
        "__weakref__",
        "__annotations__",
        "__firstlineno__",
        "__static_attributes__",
        "__qualname__",
        "__orig_bases__",
        "__parameters__",
        "__abstractmethods__",
        "_abc_impl",
    }
)


#: Public modules that import an optional dependency, and that dependency: where it is not
#: installed, the module (its names, its classes, and its name in the package) is left out of
#: both sides of the comparison.
OPTIONAL_MODULES = {"gridbuf.gt4py": "gt4py"}


def unavailable_modules() -> set[str]:
    """The modules of `OPTIONAL_MODULES` whose dependency is not installed."""
    return {m for m, dep in OPTIONAL_MODULES.items() if importlib.util.find_spec(dep) is None}


def without(api: dict[str, Any], modules: set[str]) -> dict[str, Any]:
    """``api`` less `modules`: their entries, their classes and their names in their packages."""
    out_modules = {}
    for name, names in api["modules"].items():
        if name in modules:
            continue
        out_modules[name] = [n for n in names if f"{name}.{n}" not in modules]
    classes = {k: v for k, v in api["classes"].items() if not any(k.startswith(m + ".") for m in modules)}
    return {"modules": out_modules, "classes": classes}


def public_modules() -> list[str]:
    """``gridbuf`` and its submodules whose dotted names have no private part, sorted."""
    import gridbuf

    names = ["gridbuf"]
    skip = unavailable_modules()
    for info in pkgutil.walk_packages(gridbuf.__path__, "gridbuf.", onerror=lambda _name: None):
        if not any(part.startswith("_") for part in info.name.split(".")) and info.name not in skip:
            names.append(info.name)
    return sorted(names)


def _class_attributes(cls: type) -> list[str]:
    # Only what gridbuf's own classes define: names inherited from Python's or NumPy's classes
    # (BaseException.add_note, a NumPy mixin's helpers) vary with their versions, not gridbuf's.
    names: set[str] = set()
    for klass in cls.__mro__:
        if klass is object or not getattr(klass, "__module__", "").startswith("gridbuf"):
            continue
        names.update(
            n
            for n in vars(klass)
            if not n.startswith("_") or (n.startswith("__") and n.endswith("__") and n not in _IGNORED_DUNDERS)
        )
    return sorted(names)


def current_api() -> dict[str, Any]:
    """``{"modules": {module: [names]}, "classes": {module.qualname: [attributes]}}``."""
    modules: dict[str, list[str]] = {}
    classes: dict[str, list[str]] = {}
    # Every public module first: importing a submodule binds it in its parent's namespace, so
    # dir() of a package is only deterministic once all of them are imported.
    names = public_modules()
    for name in names:
        importlib.import_module(name)
    for name in names:
        module = sys.modules[name]
        public = sorted(n for n in dir(module) if not n.startswith("_"))
        modules[name] = public
        for attr in public:
            value = getattr(module, attr)
            if inspect.isclass(value) and str(getattr(value, "__module__", "")).startswith("gridbuf"):
                classes[f"{value.__module__}.{value.__qualname__}"] = _class_attributes(value)
    return {"modules": modules, "classes": dict(sorted(classes.items()))}


def differences(expected: dict[str, Any], actual: dict[str, Any]) -> list[str]:
    """One line per module, class or name that is missing from ``actual`` or new in it."""
    lines = []
    for section, what in (("modules", "module"), ("classes", "class")):
        want, got = expected[section], actual[section]
        for key in sorted(set(want) - set(got)):
            lines.append(f"missing public {what}: {key}")
        for key in sorted(set(got) - set(want)):
            lines.append(f"new public {what}: {key} (regenerate the snapshot if deliberate)")
        for key in sorted(set(want) & set(got)):
            for n in sorted(set(want[key]) - set(got[key])):
                lines.append(f"missing public name: {key}.{n}")
            for n in sorted(set(got[key]) - set(want[key])):
                lines.append(f"new public name: {key}.{n} (regenerate the snapshot if deliberate)")
    return lines


def _snapshot() -> dict[str, Any]:
    return without(json.loads(SNAPSHOT.read_text()), unavailable_modules())


def test_public_modules_match_the_snapshot() -> None:
    diff = [line for line in differences(_snapshot(), current_api()) if "module" in line.split(":")[0]]
    assert not diff, "\n".join(diff)


def test_public_names_match_the_snapshot() -> None:
    diff = differences(_snapshot(), current_api())
    assert not diff, "the public API changed:\n" + "\n".join(diff)


def test_the_differences_name_what_changed() -> None:
    expected = {"modules": {"m": ["a", "b"]}, "classes": {"m.C": ["x"]}}
    actual = {"modules": {"m": ["b", "c"], "n": []}, "classes": {"m.C": []}}
    diff = differences(expected, actual)
    assert "missing public name: m.a" in diff
    assert any(line.startswith("new public name: m.c") for line in diff)
    assert any(line.startswith("new public module: n") for line in diff)
    assert "missing public name: m.C.x" in diff


def main(argv: list[str]) -> int:
    if argv[1:] == ["--regenerate"]:
        if unavailable_modules():
            print(f"cannot regenerate: {', '.join(sorted(unavailable_modules()))} need their optional dependencies installed")
            return 2
        SNAPSHOT.parent.mkdir(parents=True, exist_ok=True)
        SNAPSHOT.write_text(json.dumps(current_api(), indent=1, sort_keys=True) + "\n")
        print(f"wrote {SNAPSHOT}")
        return 0
    if argv[1:] not in ([], ["--check"]):
        print(__doc__)
        return 2
    diff = differences(_snapshot(), current_api())
    print("\n".join(diff) or "the public API matches the snapshot")
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
