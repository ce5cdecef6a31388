"""Environment switches for benchmarks: gridbuf reads its switches (``GRIDBUF_TIER2``,
``GRIDBUF_VECTOR_MATH``, ...) when a stencil is defined, so a benchmark that compares modes
defines each stencil with its switches set, and restores them after; and scratch directories
(GT4Py's build caches, tier two's caches, definitions written to files), removed when the
process that made them exits (the test suite's `scratch_dir`, one implementation)."""

from __future__ import annotations

import importlib.util
import os
from typing import Callable, Mapping, Optional, TypeVar

_SCRATCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "_scratch.py")
_spec = importlib.util.spec_from_file_location("_scratch", _SCRATCH)
assert _spec is not None and _spec.loader is not None
_scratch = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_scratch)
scratch_dir: Callable[[str], str] = _scratch.scratch_dir

T = TypeVar("T")


def set_env(env: Mapping[str, Optional[str]]) -> dict[str, Optional[str]]:
    """Sets the environment variables `env` (None: unset); returns their values before."""
    saved = {k: os.environ.get(k) for k in env}
    for k, v in env.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    return saved


def define_env(make: Callable[[], T], env: Mapping[str, Optional[str]]) -> T:
    """`make()` with the environment variables `env` set (None: unset) while it runs."""
    saved = set_env(env)
    try:
        return make()
    finally:
        set_env(saved)
