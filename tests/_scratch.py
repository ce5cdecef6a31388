"""Scratch directories for the test suite and the benchmarks (GT4Py's build caches, tier two's
module cache, definitions written to files): each is removed when the process that made it
exits, so repeated runs do not fill the temporary directory (a run of ``bench_gtscript`` left
about 22 MB of GT4Py builds behind)."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile


def _remove(path: str, owner: int) -> None:
    # Only the process that made the directory removes it: a child forked from it (whose exit
    # runs the handlers it inherited) must not take it from under its parent.
    if os.getpid() == owner:
        shutil.rmtree(path, ignore_errors=True)


def scratch_dir(prefix: str) -> str:
    """A new directory under the system's temporary directory, its name starting with
    `prefix`, removed with its contents when this process exits.

    Parameters
    ----------
    prefix : str
        The start of the directory's name (``tempfile.mkdtemp``'s prefix).

    Returns
    -------
    str
        The directory's absolute path.
    """
    path = tempfile.mkdtemp(prefix=prefix)
    atexit.register(_remove, path, os.getpid())
    return path
