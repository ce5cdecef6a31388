"""Helpers the gtscript test files share to compare gridbuf.gtscript with GT4Py: loading
definitions from source files (both frontends read a definition's source), the field kinds GT4Py's
descriptors give, and bit-for-bit comparison of results."""

from __future__ import annotations

import importlib.util
import inspect
import os
import sys

import numpy as np


def load_source(directory: str, key: str, source: str):
    """Imports `source` as module `key` from a file written in `directory`."""
    path = os.path.join(directory, f"{key}.py")
    with open(path, "w") as fh:
        fh.write(source)
    spec = importlib.util.spec_from_file_location(key, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[key] = mod
    spec.loader.exec_module(mod)
    return mod


def field_kinds(definition, descriptor) -> dict[str, tuple[str, np.dtype, tuple[int, ...]]]:
    """Axes, dtype and data dims of every field argument of a GT4Py `definition`, from its
    annotations that are instances of `descriptor` (GT4Py's ``_FieldDescriptor``)."""
    out = {}
    for n, p in inspect.signature(definition).parameters.items():
        ann = p.annotation
        if isinstance(ann, descriptor):
            out[n] = ("".join(a.name for a in ann.axes), np.dtype(ann.dtype), tuple(ann.data_dims))
    return out


def same_bits(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Where `x` and `y` are equal: floats bit for bit (any NaN equals any NaN; the sign of a zero
    counts), other types exactly."""
    if x.dtype.kind != "f":
        return x == y
    bits = np.dtype(f"u{x.dtype.itemsize}")
    return (x.view(bits) == y.view(bits)) | (np.isnan(x) & np.isnan(y))


def assert_same(got: dict, want: dict, what: str) -> None:
    """Every array equal (see `same_bits`), the same arguments, dtypes and shapes; an argument
    GT4Py left None must be None."""
    assert got.keys() == want.keys()
    for k, y in want.items():
        x = got[k]
        if y is None:
            assert x is None
            continue
        assert x.dtype == y.dtype and x.shape == y.shape, f"{what}: {k!r}"
        same = same_bits(x, y)
        assert same.all(), f"{what}: argument {k!r} differs at {np.argwhere(~same)[:4].tolist()}: gridbuf {x[~same][:4]}, GT4Py {y[~same][:4]}"
