"""Helpers the gtscript test files share to compare gridbuf.gtscript with GT4Py: loading
definitions from source files (both frontends read a definition's source), the field kinds GT4Py's
descriptors give, and the one comparison the conformance files make (test_gtscript_conformance,
_frontend22, _vindex22, _regions): GT4Py's results on copies of the inputs
(:func:`gt4py_reference`), gridbuf's on copies allocated in a layout (:func:`in_layout`,
:func:`run_in_layout`), and the two compared bit for bit (:func:`assert_same`)."""

from __future__ import annotations

import importlib.util
import inspect
import os
import sys

from collections.abc import Container

import numpy as np

import gridbuf as gb


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


def assert_same(got: dict, want: dict, what: str, inputs: dict | None = None) -> None:
    """Every array equal (see `same_bits`), the same arguments, dtypes and shapes; an argument
    GT4Py left None must be None. With `inputs`, a difference is reported with the input values
    (those of as many axes as the argument) at the first points that differ."""
    assert got.keys() == want.keys(), f"{what}: arguments {sorted(got)}, GT4Py's {sorted(want)}"
    for k, y in want.items():
        x = got[k]
        if y is None:
            assert x is None, f"{what}: argument {k!r} is not None, GT4Py's is"
            continue
        assert x.dtype == y.dtype and x.shape == y.shape, f"{what}: argument {k!r} is {x.dtype}{x.shape}, GT4Py's {y.dtype}{y.shape}"
        same = same_bits(x, y)
        if same.all():
            continue
        bad = np.argwhere(~same)
        if inputs is None:
            raise AssertionError(f"{what}: argument {k!r} differs at {bad[:4].tolist()}: gridbuf {x[~same][:4]}, GT4Py {y[~same][:4]}")
        lines = []
        for idx in bad[:4]:
            idx = tuple(int(i) for i in idx)
            at = {n: v[idx[: v.ndim]].item() for n, v in inputs.items() if v.ndim == x.ndim}
            lines.append(f"  at {idx}: gridbuf {x[idx]!r}, GT4Py {y[idx]!r}; inputs there {at}")
        raise AssertionError(f"{what}: argument {k!r} ({x.dtype}) differs at {len(bad)} of {x.size} points\n" + "\n".join(lines))


def in_layout(a, layout: str, axes: str = "IJK", *, preset_axes: Container[str] | None = None):
    """A copy of `a` as the comparisons pass it to gridbuf in `layout`: None stays None; a
    GlobalTable (`axes` "") is a NumPy copy; for "C" or "F" a NumPy copy in that order; for a
    gridbuf preset, the preset's allocation (``gb.from_array``, checked to keep dtype and shape)
    when `axes` is one of `preset_axes` (default: every kind but a K column), else a C-ordered
    NumPy copy."""
    if a is None:
        return None
    if axes == "":
        return np.array(a)
    on_preset = axes != "K" if preset_axes is None else axes in preset_axes
    if layout in ("C", "F") or not on_preset:
        return np.array(a, order=layout if layout in ("C", "F") else "C")
    out = gb.from_array(a, backend=layout)
    assert out.dtype == a.dtype and out.shape == a.shape
    return out


def gt4py_reference(stencil, inputs: dict, *, origin, domain, scalars: dict | None = None) -> dict:
    """GT4Py's results: `stencil` (built by the caller, any backend) run on copies of `inputs`
    (None stays None), floating-point warnings silenced."""
    ref = {k: None if v is None else v.copy() for k, v in inputs.items()}
    with np.errstate(all="ignore"):
        stencil(**ref, **(scalars or {}), origin=origin, domain=domain)
    return ref


def run_in_layout(
    stencil,
    inputs: dict,
    layout: str,
    axes: dict | None = None,
    *,
    origin,
    domain,
    scalars: dict | None = None,
    preset_axes: Container[str] | None = None,
) -> dict:
    """gridbuf's results: `stencil` run on copies of `inputs` in `layout` (see `in_layout`;
    `axes` names each argument's axes, "IJK" where it does not), floating-point warnings
    silenced; every argument after the run as a NumPy array (None stays None)."""
    axes = axes or {}
    args = {k: in_layout(v, layout, axes.get(k, "IJK"), preset_axes=preset_axes) for k, v in inputs.items()}
    with np.errstate(all="ignore"):
        stencil(**args, **(scalars or {}), origin=origin, domain=domain)
    return {k: None if v is None else np.array(np.asarray(v)) for k, v in args.items()}
