"""Parallel calls on the thread team (``crate::runtime::team``): several Python threads calling
stencils and kernels at once, each call large enough to run in parallel, all computing NumPy's
values. One call leads the team at a time; the others run on their own threads."""

from __future__ import annotations

import os
import subprocess
import sys

_PROBE = """
import threading
import numpy as np
import gridbuf as gb
from gridbuf import gtscript
from gridbuf.gtscript import PARALLEL, FORWARD, Field, computation, interval

def smooth(inp: Field[np.float64], out: Field[np.float64]):
    with computation(PARALLEL), interval(...):
        out = 0.5 * inp[0, 0, 0] + 0.125 * (inp[-1, 0, 0] + inp[1, 0, 0] + inp[0, -1, 0] + inp[0, 1, 0])

def prefix(inp: Field[np.float64], out: Field[np.float64]):
    with computation(FORWARD):
        with interval(0, 1):
            out = inp
        with interval(1, None):
            out = out[0, 0, -1] + inp

backend = "gt:cpu_ifirst"
st_smooth = gtscript.stencil(backend=backend, definition=smooth)
st_prefix = gtscript.stencil(backend=backend, definition=prefix)
shape = (68, 68, 24)
errors = []

def worker(seed):
    try:
        rng = np.random.default_rng(seed)
        for _ in range(40):
            a = rng.random(shape)
            inp = gb.from_array(a, backend=backend)
            out = gb.zeros(shape, np.float64, backend=backend)
            st_smooth(inp, out, origin=(2, 2, 0), domain=(64, 64, 24))
            want = 0.5 * a[2:-2, 2:-2] + 0.125 * (a[1:-3, 2:-2] + a[3:-1, 2:-2] + a[2:-2, 1:-3] + a[2:-2, 3:-1])
            assert np.array_equal(np.asarray(out)[2:-2, 2:-2], want), "smooth"
            st_prefix(inp, out)
            assert np.allclose(np.asarray(out), np.cumsum(a, axis=2), rtol=0, atol=1e-12), "prefix"
            copy = gb.zeros(shape, np.float64, backend="gt:cpu_kfirst")
            gb.kernels.copy(inp, copy)
            assert np.array_equal(np.asarray(copy), a), "copy"
    except BaseException as exc:
        errors.append(repr(exc))

threads = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("errors:", errors)
"""


def test_calls_from_several_python_threads_at_once_compute_numpy_values(tmp_path):
    probe = tmp_path / "probe.py"  # a file: the frontend reads the definitions' source
    probe.write_text(_PROBE)
    for spin in ("0", "200"):
        env = dict(os.environ, GRIDBUF_NUM_THREADS="2", GRIDBUF_SPIN_US=spin)
        done = subprocess.run([sys.executable, str(probe)], env=env, capture_output=True, text=True, check=True, timeout=600)
        assert done.stdout.strip() == "errors: []", done.stdout + done.stderr
