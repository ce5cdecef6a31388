"""Loads pace's stencil definitions from a pace source checkout, for ``bench_pace.py``.

pace (https://github.com/ai2cm/pace) is not part of gridbuf and is not installed with it: the
benchmark is handed the path of a checkout (``--pace PATH``) and imports pace's own stencil
modules from there, unchanged:

- ``pace.fv3core.stencils.*``, ``pace.physics.stencils.*``, ``pace.physics.functions.*``,
  ``pace.stencils.*`` (the shared stencils), ``pace.dsl.typing``, ``pace.util.constants`` and
  ``pace.util.namelist`` are pace's files, executed as they are;
- ``pace.dsl.typing`` (pace's field type aliases) is rebuilt here with the same names and
  values, because pace's file spells NumPy 1's ``np.float_`` (gone in NumPy 2): ``Float`` is
  ``np.float64``, ``Int`` ``np.int_``, ``Bool`` ``np.bool_``, ``FloatField`` ``Field[IJK, Float]``, ...;
- pace's framework modules they also import (``pace.dsl.stencil``, ``pace.util.grid``,
  ``pace.dsl.dace``, ... : classes used only when pace's model objects are built, never by a
  stencil definition) are stubbed where importing them would need pace's whole environment
  (MPI, dace, xarray, ...). A stub module hands out placeholder classes for every name.

The definitions are the functions of those modules that hold a ``with computation(...)`` block
and are not ``gtscript.function``s: found by reading each module's source (``ast``), then taken
from the imported module, so they are pace's own function objects.
"""

from __future__ import annotations

import ast
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types
from dataclasses import dataclass
from typing import Any, Callable

#: pace's package roots inside a checkout: import prefix -> directory (relative to the checkout).
PACKAGES = {
    "pace.fv3core": "fv3core/pace/fv3core",
    "pace.physics": "physics/pace/physics",
    "pace.stencils": "stencils/pace/stencils",
    "pace.dsl": "dsl/pace/dsl",
    "pace.util": "util/pace/util",
}

#: Modules executed from the checkout (a prefix matches the module and its submodules).
REAL = (
    "pace.fv3core.stencils",
    "pace.physics.stencils",
    "pace.physics.functions",
    "pace.stencils",
    "pace.util.constants",
    "pace.util.namelist",
)

#: The modules whose definitions are benchmarked, in this order (directories of the checkout).
STENCIL_DIRS = (
    ("pace.fv3core.stencils", "fv3core/pace/fv3core/stencils"),
    ("pace.physics.stencils", "physics/pace/physics/stencils"),
    ("pace.stencils", "stencils/pace/stencils"),
)


class PaceMissing(SystemExit):
    """A clean exit with a message: no pace checkout at the path given."""


def check_checkout(path: str | None) -> str:
    """The checkout's absolute path, or a clear exit when it is not a pace source checkout."""
    if not path:
        raise PaceMissing(
            "bench_pace.py needs a pace source checkout: --pace PATH (pace is not part of gridbuf; "
            "clone https://github.com/ai2cm/pace anywhere and pass its path; nothing is installed "
            "or built from it)."
        )
    path = os.path.abspath(path)
    missing = [d for _, d in STENCIL_DIRS if not os.path.isdir(os.path.join(path, d))]
    if missing:
        raise PaceMissing(
            f"--pace {path}: not a pace source checkout (missing {', '.join(missing)}); pass the "
            "root of a clone of https://github.com/ai2cm/pace."
        )
    return path


# --- stubs for pace's framework modules --------------------------------------------------------


class _StubMeta(type):
    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _stub_class(name)

    def __getitem__(cls, item: Any) -> Any:
        return cls

    def __or__(cls, other: Any) -> Any:
        return cls

    __ror__ = __or__


class _Stub(metaclass=_StubMeta):
    """A placeholder for a class or function of a stubbed pace module: it can be subclassed,
    subscripted, called and used as a decorator (then it returns the decorated object)."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and callable(args[0]):
            return args[0]  # used as a decorator
        return super().__new__(cls)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _stub_class(name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return args[0] if len(args) == 1 and callable(args[0]) else _Stub()

    def __iter__(self):
        return iter(())


def _stub_class(name: str) -> type:
    return _StubMeta(name, (_Stub,), {})


class _StubModule(types.ModuleType):
    """A stubbed module (or a package of the checkout whose ``__init__`` is not run): a name
    that is a submodule in the checkout is imported from there, any other name is a stub."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        for d in self.__dict__.get("__path__", []):
            if os.path.isfile(os.path.join(d, name + ".py")) or os.path.isdir(os.path.join(d, name)):
                return importlib.import_module(f"{self.__name__}.{name}")
        value = _stub_class(name)
        setattr(self, name, value)
        return value


class _PaceFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports ``pace`` and its subpackages: the REAL modules from the checkout, packages as
    namespaces over the checkout's directories, every other module as a stub."""

    def __init__(self, root: str) -> None:
        self.root = root

    def _directory(self, fullname: str) -> str | None:
        for prefix, rel in PACKAGES.items():
            if fullname == prefix or fullname.startswith(prefix + "."):
                return os.path.join(self.root, rel, *fullname[len(prefix) + 1 :].split(".")) if fullname != prefix else os.path.join(self.root, rel)
        return None

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != "pace" and not fullname.startswith("pace."):
            return None
        base = self._directory(fullname)
        real = any(fullname == p or fullname.startswith(p + ".") for p in REAL)
        if real and base is not None and os.path.isfile(base + ".py"):
            return importlib.util.spec_from_file_location(fullname, base + ".py")
        if base is not None and os.path.isdir(base) and (real or any(p.startswith(fullname + ".") for p in REAL)):
            # a package on the way to a real module: a namespace over its directory (its
            # __init__.py, which imports pace's framework, is not run)
            spec = importlib.machinery.ModuleSpec(fullname, self, is_package=True)
            spec.submodule_search_locations = [base]
            return spec
        spec = importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        spec.submodule_search_locations = []
        return spec

    def create_module(self, spec: Any) -> types.ModuleType:
        m = _StubModule(spec.name)
        m.__path__ = list(spec.submodule_search_locations or [])
        return m

    def exec_module(self, module: types.ModuleType) -> None:
        if isinstance(module, _StubModule):
            # the constants every pace module reads from pace.util at import time
            if module.__name__ == "pace.dsl.typing":
                _typing_module(module)
            if module.__name__ == "pace.util":
                for dim in ("X_DIM", "Y_DIM", "Z_DIM", "X_INTERFACE_DIM", "Y_INTERFACE_DIM", "Z_INTERFACE_DIM", "Z_SOIL_DIM"):
                    setattr(module, dim, dim.lower())


def _typing_module(m: types.ModuleType) -> None:
    """pace.dsl.typing's names, as pace defines them (with NumPy 2's spelling of float_)."""
    import typing

    import numpy as np
    from gt4py.cartesian import gtscript

    F = gtscript.Field
    names = dict(
        Field=F, IJK=gtscript.IJK, IJ=gtscript.IJ, IK=gtscript.IK, JK=gtscript.JK,
        I=gtscript.I, J=gtscript.J, K=gtscript.K, Float=np.float64, Int=np.int_, Bool=np.bool_,
        DTypes=typing.Union[bool, np.bool_, int, np.int32, np.int64, float, np.float32, np.float64],
        Index3D=typing.Tuple[int, int, int],
    )
    Fl, In = np.float64, np.int_
    names.update(
        FloatField=F[gtscript.IJK, Fl], FloatFieldI=F[gtscript.I, Fl], FloatFieldJ=F[gtscript.J, Fl],
        FloatFieldIJ=F[gtscript.IJ, Fl], FloatFieldK=F[gtscript.K, Fl], IntField=F[gtscript.IJK, In],
        IntFieldIJ=F[gtscript.IJ, In], IntFieldK=F[gtscript.K, In], BoolField=F[gtscript.IJK, np.bool_],
        cast_to_index3d=lambda val: tuple(val),
    )
    m.__dict__.update(names)


def install(root: str) -> None:
    """Makes ``import pace...`` resolve against the checkout at ``root`` (see the module doc).
    Refuses when a real pace is already imported or installed, so the two never mix."""
    if "pace" in sys.modules and not isinstance(sys.modules["pace"].__spec__.loader, _PaceFinder):
        raise RuntimeError("a pace package is already imported; run bench_pace.py in a fresh process")
    for f in sys.meta_path:
        if isinstance(f, _PaceFinder):
            sys.meta_path.remove(f)
    sys.meta_path.insert(0, _PaceFinder(root))
    try:  # pace.util.namelist imports f90nml, used only to read Fortran namelists
        import f90nml  # noqa: F401
    except ImportError:
        sys.modules["f90nml"] = _StubModule("f90nml")


# --- the definitions ---------------------------------------------------------------------------


@dataclass
class Definition:
    module: str  # "fv3core.stencils.d_sw"
    name: str  # "flux_capacitor"
    func: Callable[..., Any] | None
    externals_used: frozenset[str]
    error: str = ""  # why the module could not be imported

    @property
    def label(self) -> str:
        return f"{self.module.replace('pace.', '')}.{self.name}"


def _is_definition(node: ast.FunctionDef) -> bool:
    if any("function" in ast.unparse(d) for d in node.decorator_list):
        return False
    return any(
        isinstance(w, ast.With) and any("computation" in ast.unparse(i.context_expr) for i in w.items)
        for w in ast.walk(node)
    )


def definitions(root: str) -> list[Definition]:
    """Every stencil definition of pace's stencil modules, in file order, with the names it
    imports from ``__externals__`` (its own; those of the gtscript.functions it calls are
    added by ``externals_of``)."""
    out: list[Definition] = []
    for package, rel in STENCIL_DIRS:
        directory = os.path.join(root, rel)
        for fname in sorted(os.listdir(directory)):
            if not fname.endswith(".py") or fname == "__init__.py":
                continue
            modname = f"{package}.{fname[:-3]}"
            tree = ast.parse(open(os.path.join(directory, fname)).read())
            defs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and _is_definition(n)]
            if not defs:
                continue
            module, error = None, ""
            try:
                module = importlib.import_module(modname)
            except Exception as exc:  # reported, not hidden
                error = f"import failed: {type(exc).__name__}: {exc}"
            for d in defs:
                used = {a.name for n in ast.walk(d) if isinstance(n, ast.ImportFrom) and n.module == "__externals__" for a in n.names}
                out.append(Definition(modname, d.name, getattr(module, d.name, None) if module else None, frozenset(used), error))
    return out
