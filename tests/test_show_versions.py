"""``gridbuf.show_versions()`` and ``python -m gridbuf``, with and without each optional dependency."""

from __future__ import annotations

import importlib
import io
import platform
import subprocess
import sys
import types

import numpy as np
import pytest

import gridbuf
from gridbuf import _versions


def _report() -> str:
    out = io.StringIO()
    gridbuf.show_versions(file=out)
    return out.getvalue()


def test_report_names_gridbuf_python_numpy_and_the_machine():
    text = _report()
    for title in ("GRIDBUF", "OPTIONAL DEPENDENCIES", "MACHINE"):
        assert title in text.splitlines()
    v = _versions.versions()
    assert v["gridbuf"]["gridbuf"].startswith(gridbuf.__version__ + " (")
    assert v["gridbuf"]["numpy"] == np.__version__
    assert v["gridbuf"]["python"].startswith(platform.python_version())
    assert set(v["optional dependencies"]) == {"gt4py", "cupy", "mpi4py", "xarray"}
    info = gridbuf._gridbuf.machine_info()
    assert v["machine"]["threads"].startswith(f"{info['threads']} (")
    assert info["threads"] >= 1 and info["cores"] >= 1
    if platform.machine() in ("x86_64", "AMD64"):
        assert info["jit_architecture"] == "x86_64"
        # Every x86-64 CPU has SSE2, and Cranelift's x86 backend needs at least SSE3 and SSSE3.
        assert "has_sse3" in info["jit_features"] and v["machine"]["jit"].startswith("x86_64: ")


def test_threads_follow_the_environment():
    code = "import gridbuf; print(gridbuf._gridbuf.machine_info()['threads'])"
    env = {**__import__("os").environ, "GRIDBUF_NUM_THREADS": "3"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert done.stdout.strip() == "3"


@pytest.mark.parametrize("name", _versions.OPTIONAL)
def test_a_missing_dependency_is_reported_and_the_others_are_not_affected(monkeypatch, name):
    present = {}
    for other in _versions.OPTIONAL:
        try:
            present[other] = importlib.import_module(other).__version__
        except ImportError:
            present[other] = None
    monkeypatch.setitem(sys.modules, name, None)  # makes `import name` raise ImportError
    optional = _versions.versions()["optional dependencies"]
    assert optional[name] == "not installed"
    for other, version in present.items():
        if other != name and version is not None:
            assert optional[other].startswith(str(version))
        elif other != name:
            assert optional[other] == "not installed"


def test_a_broken_dependency_is_reported_not_raised(monkeypatch):
    real = importlib.import_module

    def fake(name, *args, **kwargs):
        if name == "xarray":
            raise RuntimeError("broken build")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(_versions.importlib, "import_module", fake)
    assert _versions.versions()["optional dependencies"]["xarray"] == "fails to import: RuntimeError: broken build"


def test_cupy_without_a_gpu_is_reported():
    class Runtime:
        @staticmethod
        def runtimeGetVersion():  # noqa: N802 - CuPy's name
            return 13000

        @staticmethod
        def getDeviceCount():  # noqa: N802 - CuPy's name
            raise RuntimeError("cudaErrorNoDevice")

    cupy = types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=Runtime))
    assert _versions._cuda(cupy) == "no GPU reachable: RuntimeError"
    Runtime.getDeviceCount = staticmethod(lambda: 1)  # type: ignore[method-assign]
    assert _versions._cuda(cupy) == "CUDA runtime 13.0, 1 device(s)"


def test_mpi_library_is_asked_without_initialising_mpi_here():
    pytest.importorskip("mpi4py")
    had_mpi = "mpi4py.MPI" in sys.modules
    optional = _versions.versions()["optional dependencies"]["mpi4py"]
    import mpi4py

    assert optional.startswith(mpi4py.__version__ + " (") and "unknown" not in optional, optional
    assert ("mpi4py.MPI" in sys.modules) == had_mpi


def test_python_dash_m_gridbuf_prints_the_report():
    done = subprocess.run([sys.executable, "-m", "gridbuf"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "GRIDBUF" and any(line.startswith("numpy") and np.__version__ in line for line in lines)


def test_import_gridbuf_imports_no_optional_dependency():
    code = (
        "import sys, gridbuf; gridbuf.show_versions; "
        "print([m for m in ('gt4py', 'cupy', 'mpi4py', 'xarray') if m in sys.modules])"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
