"""The hand-written C kernels of ``_hand_kernels.c`` (laplacian and hdiff with rows fused),
compiled with the system's C compiler and called through ctypes on arrays with unit stride
along I (gridbuf's ``gt:cpu_ifirst``): the witness, in ``bench_tier_two.py``, of what C written
by hand reaches against the bandwidth floor on the machine."""

from __future__ import annotations

import ctypes
import os
import shlex
import shutil
import subprocess
from typing import Callable, Optional, Sequence

import numpy as np

_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_hand_kernels.c")
#: Flags of tier two's own compiles that bear on speed and results (no contraction into fused
#: multiply-adds, so the kernels compute the stencils' bits), with OpenMP for the threads.
FLAGS = ("-O3", "-march=native", "-ffp-contract=off", "-fopenmp", "-shared", "-fPIC")
#: Stencil name -> (C function, number of array arguments).
KERNELS = {"laplacian": ("hand_laplacian", 2), "hdiff": ("hand_hdiff", 3)}


def compile_kernels(directory: str) -> Optional[ctypes.CDLL]:
    """The kernels compiled into `directory`, or None (with a message) where no C compiler with
    OpenMP is found or the compile fails; `CC` may carry flags, as tier two reads it."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        print("hand-written C: no C compiler found; its column is left out", flush=True)
        return None
    lib = os.path.join(directory, "hand_kernels.so")
    try:
        done = subprocess.run([*shlex.split(cc), *FLAGS, _SOURCE, "-o", lib], capture_output=True, text=True)
    except OSError as e:
        print(f"hand-written C: {cc} cannot run ({e}); its column is left out", flush=True)
        return None
    if done.returncode != 0:
        print(f"hand-written C: {cc} failed; its column is left out:\n{done.stderr}", flush=True)
        return None
    return ctypes.CDLL(lib)


def kernel(lib: ctypes.CDLL, name: str, arrays: Sequence[object], origin: Sequence[int], domain: Sequence[int]) -> Optional[Callable[[], None]]:
    """A call of stencil `name`'s kernel on `arrays` (inputs then output) over `domain` from
    `origin`, or None where there is none or the arrays lack unit stride along I or share
    strides unequally."""
    if name not in KERNELS:
        return None
    symbol, count = KERNELS[name]
    views = [np.asarray(a) for a in arrays]
    if len(views) != count or any(v.dtype != np.float64 or v.strides != views[0].strides for v in views):
        return None
    si, sj, sk = (s // 8 for s in views[0].strides)
    if si != 1:
        return None
    offset = 8 * (origin[0] + origin[1] * sj + origin[2] * sk)
    pointers = [ctypes.c_void_p(v.ctypes.data + offset) for v in views]
    fn = getattr(lib, symbol)
    fn.restype = ctypes.c_int if name == "hdiff" else None
    dims = [ctypes.c_long(sj), ctypes.c_long(sk)] + [ctypes.c_int(d) for d in domain]

    def call(views: list[np.ndarray] = views) -> None:  # the arrays stay alive while it does
        if fn(*pointers, *dims) == -1:
            raise MemoryError(f"{symbol}: its row buffers could not be allocated")

    return call
