"""gridbuf.distributed: the MPI checks under ``mpiexec -n N`` (N = 1..4), and what needs no MPI.

The MPI checks live in tests/mpi/mpi_halo_cases.py and run in a separate ``mpiexec`` job per N
with a timeout, so that a deadlock fails the test instead of hanging the suite. They need
mpi4py and an ``mpiexec`` (requirements-dev.txt installs mpi4py and the ``mpich`` wheel, whose
``mpiexec`` lands in the virtual environment's bin).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import gridbuf as gb
from gridbuf import _gridbuf

HERE = Path(__file__).parent
TIMEOUT_S = 150


def _mpiexec() -> str | None:
    venv = Path(sys.executable).parent / "mpiexec"
    return str(venv) if venv.exists() else shutil.which("mpiexec")


@pytest.mark.parametrize("nprocs", [1, 2, 3, 4])
def test_mpi_cases_under_mpiexec(nprocs: int) -> None:
    if importlib.util.find_spec("mpi4py") is None:
        pytest.skip("mpi4py is not installed (pip install -r requirements-dev.txt)")
    mpiexec = _mpiexec()
    if mpiexec is None:
        pytest.skip("no mpiexec found (pip install mpich, or put an MPI launcher on PATH)")
    cmd = [mpiexec, "-n", str(nprocs), sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
           str(HERE / "mpi" / "mpi_halo_cases.py")]
    env = dict(os.environ, GRIDBUF_NUM_THREADS="1", RAYON_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            cwd=HERE.parent, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # mpiexec and every rank it started
        out, _ = proc.communicate()
        pytest.fail(f"mpiexec -n {nprocs} did not finish in {TIMEOUT_S} s (deadlock?):\n{out[-6000:]}")
    assert proc.returncode == 0, f"mpiexec -n {nprocs} failed:\n{out[-8000:]}"


def test_import_gridbuf_does_not_import_mpi4py() -> None:
    code = "import sys, gridbuf, gridbuf.distributed; assert 'mpi4py' not in sys.modules, 'mpi4py imported'"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


@given(g=st.integers(1, 300), p=st.integers(1, 40), periodic=st.booleans())
def test_block_decomposition_tiles_and_neighbours_wrap(g: int, p: int, periodic: bool) -> None:
    if p > g:
        with pytest.raises(gb.GridbufValueError, match="at least one point"):
            _gridbuf.BlockDecomposition(["I"], [g], [p], [periodic])
        return
    dec = _gridbuf.BlockDecomposition(["I"], [g], [p], [periodic])
    blocks = [dec.block(0, c) for c in range(p)]
    assert blocks[0][0] == 0 and blocks[-1][1] == g
    assert all(a[1] == b[0] for a, b in zip(blocks, blocks[1:]))
    assert max(e - s for s, e in blocks) - min(e - s for s, e in blocks) <= 1
    assert all(dec.owner(0, i) == c for c, (s, e) in enumerate(blocks) for i in (s, e - 1))
    left = dec.shift([0], [-1])
    assert left == (p - 1 if periodic else None)
    assert {tuple(o) for o, _ in dec.neighbours(0, True)} <= {(-1,), (1,)}


def test_hdiff_example_is_bit_identical_on_four_ranks() -> None:
    """examples/hdiff_mpi.py on 4 ranks (odd step count, so the result is in the second field)."""
    if importlib.util.find_spec("mpi4py") is None or _mpiexec() is None:
        pytest.skip("mpi4py or mpiexec is not installed (pip install -r requirements-dev.txt)")
    cmd = [_mpiexec(), "-n", "4", sys.executable, str(HERE.parent / "examples" / "hdiff_mpi.py"), "--steps", "3",
           "--backend", "gt:cpu_ifirst"]
    env = dict(os.environ, GRIDBUF_NUM_THREADS="1", RAYON_NUM_THREADS="1")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"hdiff_mpi.py did not finish in {TIMEOUT_S} s:\n{out[-4000:]}")
    assert proc.returncode == 0 and "bit-identical to the single-process run: True" in out, out[-4000:]
