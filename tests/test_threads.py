"""Parallel calls on the thread team (``crate::runtime::team``): several Python threads calling
stencils and kernels at once, each call large enough to run in parallel, all computing NumPy's
values. One call leads the team at a time; the others run on their own threads."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

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


_FORK_PROBE = """
import os
import numpy as np
import gridbuf as gb
from gridbuf import gtscript
from gridbuf.gtscript import PARALLEL, Field, computation, interval

def add_three(inp: Field[np.float64], out: Field[np.float64]):
    with computation(PARALLEL), interval(...):
        x = inp
        n = 0
        while n < 3:
            x = x + 1.0
            n = n + 1
        out = x

def smooth(inp: Field[np.float64], out: Field[np.float64]):
    with computation(PARALLEL), interval(...):
        out = 0.5 * inp[0, 0, 0] + 0.125 * (inp[-1, 0, 0] + inp[1, 0, 0] + inp[0, -1, 0] + inp[0, 1, 0])

backend = "gt:cpu_ifirst"
looped = gtscript.stencil(backend=backend, definition=add_three)
plain = gtscript.stencil(backend=backend, definition=smooth)
shape = (68, 68, 24)
a = np.random.default_rng(0).random(shape)
inp = gb.from_array(a, backend=backend)
want = 0.5 * a[2:-2, 2:-2] + 0.125 * (a[1:-3, 2:-2] + a[3:-1, 2:-2] + a[2:-2, 1:-3] + a[2:-2, 3:-1])

def check(tag):
    out = gb.zeros(shape, np.float64, backend=backend)
    looped(inp, out)
    assert np.array_equal(np.asarray(out), a + 3.0), tag + ": looped"
    plain(inp, out, origin=(2, 2, 0), domain=(64, 64, 24))
    assert np.array_equal(np.asarray(out)[2:-2, 2:-2], want), tag + ": plain"
    copy = gb.zeros(shape, np.float64, backend="gt:cpu_kfirst")
    gb.kernels.copy(inp, copy)
    assert np.array_equal(np.asarray(copy), a), tag + ": copy"

check("parent")  # starts the team and the runner
pid = os.fork()
if pid == 0:
    try:
        check("child")
        if os.fork() == 0:  # and a grandchild, forked after the child's new team started
            check("grandchild")
            os._exit(0)
        _, status = os.waitpid(-1, 0)
        os._exit(os.waitstatus_to_exitcode(status))
    except BaseException as exc:
        print(exc, flush=True)
        os._exit(3)
_, status = os.waitpid(pid, 0)
check("parent again")
print("child exit:", os.waitstatus_to_exitcode(status))
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
@pytest.mark.parametrize("threads", ["1", "2"])
def test_a_forked_child_runs_stencils_on_teams_of_its_own(tmp_path, threads):
    # The parent's workers and while-loop runner do not exist in a forked child (Python's
    # multiprocessing forks on Linux): the child's first looped call used to wait for them forever.
    probe = tmp_path / "probe.py"
    probe.write_text(_FORK_PROBE)
    env = dict(os.environ, GRIDBUF_NUM_THREADS=threads)
    done = subprocess.run([sys.executable, str(probe)], env=env, capture_output=True, text=True, check=True, timeout=120)
    assert done.stdout.strip() == "child exit: 0", done.stdout + done.stderr
