"""The acquire / touch / release protocol of the data interface around a computation."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from ._metadata import GPU_KEYS, HOST_KEYS, data_interface
from .errors import GridbufTypeError


def _callback(obj: Any, name: str, device: str) -> Any:
    iface = data_interface(obj)
    if iface is None:
        return None
    for key in HOST_KEYS if device == "cpu" else GPU_KEYS:
        if key in iface:
            fn = iface[key].get(name)
            if fn is not None and not callable(fn):
                raise GridbufTypeError(f"invalid __gt_data_interface__ {name!r} of {type(obj).__name__}: expected a callable or None, got {fn!r}")
            return fn
    return None


@contextmanager
def acquired(fields: Iterable[Any], outputs: Iterable[Any] = (), *, device: str = "cpu") -> Iterator[None]:
    """Run a block between the data-interface calls of its fields.

    Calls ``acquire`` of every field before the block; after it, ``touch`` of every output and
    then ``release`` of every field. ``release`` also runs when the block raises; ``touch`` does
    not, since the outputs were not completely written.

    Parameters
    ----------
    fields : iterable
        Every array the block reads or writes.
    outputs : iterable, optional
        The arrays the block writes (they are usually also in ``fields``).
    device : {"cpu", "gpu"}
        Which buffer's callbacks to use.

    Yields
    ------
    None
    """
    fields = list(fields)
    outputs = list(outputs)
    acquired_so_far: list[Any] = []
    try:
        for f in fields:
            fn = _callback(f, "acquire", device)
            if fn is not None:
                fn()
            acquired_so_far.append(f)
        yield
        for f in outputs:
            fn = _callback(f, "touch", device)
            if fn is not None:
                fn()
    finally:
        for f in acquired_so_far:
            fn = _callback(f, "release", device)
            if fn is not None:
                fn()
