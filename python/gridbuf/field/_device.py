"""Where a Field's array lives: host or GPU memory."""

from __future__ import annotations

from typing import Any

import numpy as np


def _on_gpu(array: Any) -> bool:
    """Whether an array's memory is device memory (CUDA array interface, or a DLPack device that
    is not the CPU)."""
    if isinstance(array, np.ndarray):
        return False
    if hasattr(array, "__cuda_array_interface__"):
        return True
    if not hasattr(array, "__array_interface__") and hasattr(array, "__dlpack_device__"):
        try:
            return int(array.__dlpack_device__()[0]) != 1  # 1 is kDLCPU
        except Exception:  # noqa: BLE001 - an object that cannot say lives on the host
            return False
    return False
