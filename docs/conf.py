"""Sphinx configuration of gridbuf's documentation.

Built by ``bash scripts/docs.sh`` (warnings are errors). The API reference is generated from the
docstrings of the installed package: the Python modules under ``python/gridbuf`` and the compiled
module ``gridbuf._gridbuf``, whose docstrings and signatures (``__text_signature__``) come from
PyO3.
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
    ("py:class", "collections.abc.Callable"),
    ("py:class", "collections.abc.Iterable"),
    ("py:class", "collections.abc.Iterator"),
    ("py:class", "collections.abc.Sequence"),
    ("py:class", "MPI.Intracomm"),  # mpi4py's, imported for type checking only
    # Private names in public signatures: the context manager ``gridbuf.acquired`` returns, the
    # internal constructor argument of MirroredField (made by gridbuf.mirrored's functions), and
    # the Literal of NumPy's casting names in Field.astype.
    ("py:class", "gridbuf._gridbuf.Acquired"),
    ("py:class", "gridbuf.mirrored._Pair"),
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
