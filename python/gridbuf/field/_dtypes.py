"""Result dtypes of ufuncs, reductions and scans on Fields, by NumPy's own rules (cached)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from typing import Literal, TypeAlias

    #: The ``casting`` values NumPy accepts (its overloads take only these literals).
    _Casting: TypeAlias = Literal["no", "equiv", "safe", "same_kind", "unsafe"]

import numpy as np

from . import _cache
from ._cache import _remember


# Bound by assignment, not import: CPython 3.11 compiles `name.get(...)` on an imported name
# as an attribute load plus call instead of a method call, which costs tens of nanoseconds.
_DTYPES = _cache._DTYPES

def _resolve_dtypes(ufunc: Any, dtypes: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Output dtypes of a ufunc call by NumPy's rules (cached), or None if NumPy cannot say."""
    extra = (kwargs.get("dtype"), kwargs.get("signature"), kwargs.get("casting")) if kwargs else None
    key = (ufunc, dtypes, extra)
    got = _DTYPES.get(key, False)
    if got is False:
        signature = None if extra is None else extra[1]
        if extra is not None and extra[0] is not None and signature is None:
            signature = (None,) * ufunc.nin + (np.dtype(extra[0]),) * ufunc.nout
        options: dict[str, Any] = {}
        if signature is not None:
            options["signature"] = signature
        if extra is not None and extra[2] is not None:
            options["casting"] = extra[2]
        try:
            got = ufunc.resolve_dtypes(dtypes + (None,) * ufunc.nout, **options)[ufunc.nin :]
        except Exception:  # noqa: BLE001 - let the ufunc call raise NumPy's own error
            got = None
        _remember(_DTYPES, key, got)
    return got


def _probe_dtype(fn: Any, dtype: np.dtype[Any], dtype_kw: Any) -> np.dtype[Any]:
    """Result dtype of a reduction or scan ``fn`` on ``dtype`` (cached; NumPy decides)."""
    key = (fn, dtype, dtype_kw)
    got = _DTYPES.get(key)
    if got is None:
        sample = np.ones((1,), dtype=dtype)
        extra = {} if dtype_kw is None else {"dtype": dtype_kw}
        with np.errstate(all="ignore"):
            got = np.asarray(fn(sample, axis=0, **extra)).dtype
        _remember(_DTYPES, key, got)
    return got
