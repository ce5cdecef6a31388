"""Registers the xarray accessors as soon as xarray is imported, without importing it."""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from typing import Any


class _XarrayImportHook(importlib.abc.MetaPathFinder):
    """Finds ``xarray`` through the normal machinery and registers the accessors after it loads."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != "xarray":
            return None
        sys.meta_path.remove(self)  # one-shot; also keeps find_spec below from recursing
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader = spec.loader
        original = loader.exec_module

        def exec_module(module: Any) -> None:
            original(module)
            from . import _xarray

            _xarray.register(module)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def register_xarray_on_import() -> None:
    """Register now if xarray is loaded, else when it is."""
    xr = sys.modules.get("xarray")
    if xr is not None and hasattr(xr, "DataArray"):
        from . import _xarray

        _xarray.register(xr)
    elif not any(isinstance(f, _XarrayImportHook) for f in sys.meta_path):
        sys.meta_path.insert(0, _XarrayImportHook())
