"""GPU presets: planned anywhere, allocated through CuPy, a clear error without it."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import gridbuf as gb

HAS_CUPY = importlib.util.find_spec("cupy") is not None


@pytest.mark.parametrize("backend", ["gt:gpu", "dace:gpu", "dace:gpu_IJK"])
def test_gpu_presets_plan_without_a_gpu(backend):
    p = gb.plan((10, 11, 12), np.float32, backend=backend)
    assert p.device == "gpu"
    assert p.strides[p.layout.index(2)] == 4


@pytest.mark.skipif(HAS_CUPY, reason="CuPy is installed")
@pytest.mark.parametrize("call", [
    lambda: gb.zeros((4, 5, 6), backend="gt:gpu"),
    lambda: gb.empty((4, 5, 6), backend="dace:gpu"),
    lambda: gb.full((4, 5, 6), 2.0, backend="gt:gpu"),
    lambda: gb.from_array(np.ones((4, 5, 6)), backend="gt:gpu"),
])
def test_gpu_allocation_without_cupy_is_a_clear_error(call):
    with pytest.raises(gb.GridbufDeviceError, match="CuPy"):
        call()


@pytest.mark.skipif(not HAS_CUPY, reason="CuPy is not installed")
def test_gpu_allocation_with_cupy():  # pragma: no cover - needs a GPU
    import cupy as cp

    a = gb.full((10, 11, 12), 3.0, backend="gt:gpu", aligned_index=(1, 0, 0))
    assert isinstance(a, cp.ndarray)
    assert a.strides == gb.plan((10, 11, 12), backend="gt:gpu").strides
    assert (a.data.ptr + 8) % 128 == 0
    assert float(a.sum()) == 3.0 * 10 * 11 * 12
