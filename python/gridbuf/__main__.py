"""``python -m gridbuf``: prints :func:`gridbuf.show_versions`'s report."""

from gridbuf._versions import show_versions

show_versions()
