"""The caches of the Field operations. The core's answers depend only on dims, shapes and
storage parameters, so each Field gets an id for that combination (its "descriptor") and the
answers (broadcasts, reductions, index labels, ...) are cached per tuple of ids. Ids are never
reused: when the id table is full it is emptied, with the caches keyed by ids, and new ids are
drawn. Every cache is bounded the same way: emptied when full."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .._gridbuf import FieldDescriptor


#: Entries each cache holds at most.
_CACHE_LIMIT = 4096
#: Descriptor -> id.
_DESC_IDS: dict[FieldDescriptor, int] = {}
_NEXT_ID = itertools.count(1).__next__
#: Broadcasts (``_Broadcast``) by operand ids.
_BROADCASTS: dict[Any, Any] = {}
#: Reductions, scans, transpositions, index labels and concatenations by operand ids.
_AXIS_CACHE: dict[Any, Any] = {}
#: Result dtypes by function and operand dtypes.
_DTYPES: dict[Any, Any] = {}
#: (broadcast, result dtypes) of keyword-less ufunc calls by ufunc, operand ids and dtypes.
_CALLS: dict[Any, Any] = {}


def _intern(desc: FieldDescriptor) -> int:
    """The id of a Field descriptor (drawn on first sight)."""
    kid = _DESC_IDS.get(desc)
    if kid is None:
        if len(_DESC_IDS) >= _CACHE_LIMIT:
            _DESC_IDS.clear()
            _BROADCASTS.clear()
            _AXIS_CACHE.clear()
        kid = _DESC_IDS[desc] = _NEXT_ID()
    return kid


def _remember(cache: dict[Any, Any], key: Any, value: Any) -> Any:
    """Caches ``value`` under ``key`` (emptying the cache first when it is full)."""
    if len(cache) >= _CACHE_LIMIT:
        cache.clear()
    cache[key] = value
    return value
