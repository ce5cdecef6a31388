"""The acquire / touch / release protocol of the data interface around a computation.

The order of the calls is the core's (``gridbuf::binding::callbacks``), the same the stencil
binder uses; the binding reads the callbacks from each field's data interface.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ._gridbuf import Acquired


def acquired(fields: Iterable[Any], outputs: Iterable[Any] = (), *, device: str = "cpu") -> Acquired:
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
        Which buffer's callbacks to use (host keys ``None``/``"cpu"``, GPU keys
        ``"gpu"``/``"cuda"``).

    Returns
    -------
    Acquired
        A context manager: ``with gb.acquired([a, b], [b]): ...``.

    Raises
    ------
    GridbufTypeError
        A data interface holds a callback that is not callable.
    """
    return Acquired(fields, outputs, device)
