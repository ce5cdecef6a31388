"""Sphinx configuration of gridbuf's documentation.

Built by ``bash scripts/docs.sh`` (warnings are errors). The API reference is generated from the
docstrings of the installed package: the Python modules under ``python/gridbuf`` and the compiled
module ``gridbuf._gridbuf``, whose docstrings come from PyO3 and whose typed signatures come from
its stubs (``_gridbuf.pyi``; see the end of this file).
"""

from __future__ import annotations

import gridbuf

project = "gridbuf"
author = "the gridbuf developers"
copyright = "the gridbuf developers"  # noqa: A001 - Sphinx's name
release = gridbuf.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
]

templates_path = ["_templates"]
exclude_patterns = ["_build"]

# Every cross-reference must resolve (``-n`` is on for every build, and ``-W`` makes a broken one
# an error). Targets outside gridbuf are listed in ``nitpick_ignore`` below.
nitpicky = True

# -- autodoc / autosummary ---------------------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = False
autodoc_default_options = {"member-order": "bysource"}
# Type hints are shown in the signature; the parameter tables come from the NumPy-style sections.
autodoc_typehints = "signature"
autodoc_typehints_format = "short"

# -- numpydoc ----------------------------------------------------------------------------------
# The class template (``_templates/autosummary/class.rst``) documents members with autodoc;
# numpydoc's own member tables would list them a second time.
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# -- cross-references that cannot resolve -------------------------------------------------------
# Each entry is a type that appears in a signature's type hints and has no page to link to. Only
# ``py:class`` references are ignored, by exact name; a broken reference in a docstring or a
# page is still an error.
nitpick_ignore = [
    # Outside gridbuf. The build must work without network access, so there is no intersphinx
    # (it would download NumPy's and Python's inventories).
    ("py:class", "numpy.ndarray"),
    ("py:class", "numpy.dtype"),
    ("py:class", "numpy.typing.ArrayLike"),
    ("py:class", "numpy.typing.DTypeLike"),
    ("py:class", "numpy.typing.NDArray"),
    ("py:class", "collections.abc.Callable"),
    ("py:class", "collections.abc.Iterable"),
    ("py:class", "collections.abc.Iterator"),
    ("py:class", "collections.abc.Sequence"),
    ("py:class", "MPI.Intracomm"),  # mpi4py's, imported for type checking only
    # GT4Py's classes that gridbuf.gt4py's classes derive from (GT4Py publishes no inventory).
    ("py:class", "gt4py.cartesian.frontend.exceptions.GTScriptDefinitionError"),
    ("py:class", "gt4py.cartesian.stencil_object.StencilObject"),
    # Private names in public signatures: the context manager ``gridbuf.acquired`` returns, the
    # internal constructor argument of MirroredField (made by gridbuf.mirrored's functions), and
    # the Literal of NumPy's casting names in Field.astype.
    ("py:class", "gridbuf._gridbuf.Acquired"),
    ("py:class", "gridbuf.mirrored._Pair"),
    ("py:class", "gridbuf.gtscript._values.FieldType"),  # GTStencil.field_types' values
    ("py:class", "_Casting"),
]

# -- HTML ----------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"gridbuf {release}"
html_static_path = ["_static"]
html_css_files = ["custom.css"]
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
}
html_show_sourcelink = False
# The user-guide pages (top level) have no sub-pages: no left sidebar, so the text gets the width.
# The reference pages (reference/...) keep the theme's section navigation.
html_sidebars = {"*": []}


# -- signatures of the compiled module from its stubs ------------------------------------------
# PyO3 gives compiled functions and methods an untyped ``__text_signature__``; the typed
# signatures are in the stubs (``_gridbuf.pyi``, checked against the module by mypy.stubtest in
# the test command). Autodoc shows the stub's signature wherever the compiled module's object is
# documented (also under a re-exported name such as ``gridbuf.zeros``).
import ast  # noqa: E402
import inspect  # noqa: E402
import re  # noqa: E402
from pathlib import Path  # noqa: E402


def _stub_signatures() -> dict[str, list[tuple[str, str | None]]]:
    """``{qualname: [(parameters, return annotation), ...]}`` (several for an overload)."""
    stub = Path(gridbuf._gridbuf.__file__).with_name("_gridbuf.pyi")
    found: dict[str, list[tuple[str, str | None]]] = {}

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                visit(node.body, f"{prefix}{node.name}.")
            elif isinstance(node, ast.FunctionDef):
                args = node.args
                if prefix and args.args and args.args[0].arg in ("self", "cls"):
                    args.args = args.args[1:]
                returns = ast.unparse(node.returns) if node.returns is not None else None
                found.setdefault(prefix + node.name, []).append((f"({ast.unparse(args)})", returns))

    tree = ast.parse(stub.read_text())
    # The stub's private aliases (``_Shape = Sequence[int]``) have no page: spell them out, in the
    # order they are defined (a later alias may use an earlier one). ``npt`` is numpy.typing.
    aliases = [
        (node.targets[0].id, ast.unparse(node.value))
        for node in tree.body
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and node.targets[0].id.startswith("_")
    ]

    def spell_out(text: str) -> str:
        for alias, value in reversed(aliases):
            text = re.sub(rf"\b{alias}\b", value, text)
        return re.sub(r"\bnpt\.", "numpy.typing.", text)

    visit(tree.body, "")
    return {
        key: [(spell_out(params), None if returns is None else spell_out(returns)) for params, returns in sigs]
        for key, sigs in found.items()
    }


_STUBS = _stub_signatures()


def _from_stub(app, what, name, obj, options, signature, return_annotation):  # noqa: ANN001 - Sphinx's hook
    if getattr(obj, "__module__", None) not in ("gridbuf._gridbuf", "gridbuf") or not (
        inspect.isbuiltin(obj) or inspect.ismethoddescriptor(obj) or inspect.isclass(obj)
    ):
        return None
    qualname = getattr(obj, "__qualname__", "")
    key = f"{qualname}.__new__" if inspect.isclass(obj) else qualname
    overloads = _STUBS.get(key) or (_STUBS.get(f"{qualname}.__init__") if inspect.isclass(obj) else None)
    if not overloads:
        return None
    params, returns = overloads[0]
    return params, (None if inspect.isclass(obj) else returns)


def setup(app):  # noqa: ANN001, ANN201 - Sphinx's hook
    # Before numpydoc's listener (priority 500), which would answer with the text signature.
    app.connect("autodoc-process-signature", _from_stub, priority=400)
