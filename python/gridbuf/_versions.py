"""``gridbuf.show_versions()``: what a bug report needs to know about this installation.

Every optional dependency is imported only here, when the report is asked for; one that is
missing, or fails to import, is reported as such and never stops the report.
"""

from __future__ import annotations

import importlib
import os
import platform
import sys
from typing import IO, Any

#: The optional dependencies gridbuf works with, in the order the report lists them.
OPTIONAL = ("gt4py", "cupy", "mpi4py", "xarray")

# Asks a child interpreter for the MPI library behind mpi4py. Importing mpi4py.MPI initialises
# MPI by default, which the caller's process must decide itself; the child does not initialise it
# (MPI_Get_library_version may be called before MPI_Init).
_MPI_CHILD = (
    "import mpi4py; mpi4py.rc.initialize = False; mpi4py.rc.finalize = False\n"
    "from mpi4py import MPI; print(' '.join(MPI.Get_library_version().splitlines()[0].split()))"
)


def _import(name: str) -> tuple[Any, str | None]:
    """The module, or None and why it could not be imported."""
    try:
        return importlib.import_module(name), None
    except ImportError:
        return None, "not installed"
    except Exception as exc:  # a broken installation is worth reporting, not raising
        return None, f"fails to import: {type(exc).__name__}: {exc}"


def _mpi_library() -> str:
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is not None:  # already imported by the caller: ask it directly
        return " ".join(str(mpi.Get_library_version()).splitlines()[0].split())
    import subprocess

    try:
        done = subprocess.run([sys.executable, "-c", _MPI_CHILD], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"MPI library unknown ({type(exc).__name__})"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return f"MPI library unknown ({last})"
    return done.stdout.strip()


def _cuda(cupy: Any) -> str:
    try:
        runtime = cupy.cuda.runtime.runtimeGetVersion()
        devices = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # no driver or no device: CuPy imports but cannot reach a GPU
        return f"no GPU reachable: {type(exc).__name__}"
    return f"CUDA runtime {runtime // 1000}.{runtime % 1000 // 10}, {devices} device(s)"


def versions() -> dict[str, dict[str, str]]:
    """The report as sections of ``name: value`` lines (what :func:`show_versions` prints).

    Returns
    -------
    dict
        ``{"gridbuf": {...}, "optional dependencies": {...}, "machine": {...}}``: gridbuf's
        version and location, Python's, the platform's and NumPy's; each optional dependency's
        version or why it is absent; the thread count and the CPU features the JIT compiles for.
    """
    import numpy

    from . import __file__ as package_file, __version__
    from ._gridbuf import machine_info

    core = {
        "gridbuf": f"{__version__} ({os.path.dirname(package_file)})",
        "python": sys.version.replace("\n", " "),
        "platform": platform.platform(),
        "numpy": numpy.__version__,
    }
    optional: dict[str, str] = {}
    for name in OPTIONAL:
        module, why = _import(name)
        if module is None:
            optional[name] = str(why)
            continue
        version = str(getattr(module, "__version__", "version unknown"))
        if name == "mpi4py":
            version += f" ({_mpi_library()})"
        elif name == "cupy":
            version += f" ({_cuda(module)})"
        optional[name] = version
    info = machine_info()
    env = os.environ.get("GRIDBUF_NUM_THREADS")
    setting = f"GRIDBUF_NUM_THREADS={env!r}" if env is not None else "GRIDBUF_NUM_THREADS unset"
    machine = {
        "threads": f"{info['threads']} ({setting}; {info['cores']} cores available)",
        "jit": (
            "no code generator for this machine: gtscript stencils run interpreted"
            if info["jit_architecture"] is None
            else f"{info['jit_architecture']}: {' '.join(info['jit_features']) or 'no extensions'}"
        ),
    }
    return {"gridbuf": core, "optional dependencies": optional, "machine": machine}


def show_versions(file: IO[str] | None = None) -> None:
    """Print the versions of gridbuf, Python, NumPy and the optional dependencies, and the machine.

    Attach the output to bug reports. Also available as ``python -m gridbuf``.

    Parameters
    ----------
    file : file-like, optional
        Where to print (default: ``sys.stdout``).

    Notes
    -----
    The optional dependencies (gt4py, CuPy, mpi4py with the MPI library it was built against,
    xarray) are imported to read their versions; a missing one is reported as ``not installed``.
    The MPI library is asked for in a child interpreter, so this process does not initialise
    MPI. The machine section gives gridbuf's thread count and the instruction-set extensions the
    gtscript JIT detected and compiles for.
    """
    out = sys.stdout if file is None else file
    report = versions()
    width = max(len(key) for section in report.values() for key in section) + 2
    for i, (title, section) in enumerate(report.items()):
        print(("\n" if i else "") + title.upper(), file=out)
        print("-" * len(title), file=out)
        for key, value in section.items():
            print(f"{key:<{width}}{value}", file=out)
