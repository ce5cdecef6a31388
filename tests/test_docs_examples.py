"""The Python examples of the documentation's pages (``docs/*.rst``) run.

Every ``.. code-block:: python`` of a page runs, in page order, as one script in a fresh Python
process (so that later blocks use what earlier ones defined, and ``gb.stencil`` can read the
source of the functions it is given). A block's ``:class:`` option says what else it needs:

- ``needs-gpu``: run after the page's other blocks, in a second script: once with
  ``tests/fake_cupy.py`` standing in for CuPy (host memory behind CuPy's interface, so that the
  device code paths the examples take run everywhere), and once with the real CuPy where it and
  a GPU are present (skipped otherwise);
- ``mpiexec-n-2``: run, with the page's other blocks of that class, under ``mpiexec -n 2``
  (skipped without mpi4py or an ``mpiexec``);
- ``needs-gt4py``: run after the page's other blocks, in a second script, where GT4Py is
  installed (skipped otherwise: the wheel's Rust-free test environment has none).

Blocks in other languages (``bash``) are not run.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, NamedTuple

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
TIMEOUT_S = 300

_CODE_BLOCK = re.compile(r"^(\s*)\.\. code-block:: python\s*$")
_OPTION = re.compile(r"^\s*:(\w[\w-]*):\s*(.*)$")


class Block(NamedTuple):
    page: str
    line: int
    needs: str  # "", "needs-gpu", "needs-gt4py" or "mpiexec-n-2"
    code: str


def page_blocks(path: Path) -> list[Block]:
    """The Python code blocks of a page, in order, with what each needs."""
    lines = path.read_text().splitlines()
    blocks = []
    i = 0
    while i < len(lines):
        m = _CODE_BLOCK.match(lines[i])
        if not m:
            i += 1
            continue
        indent, start = len(m.group(1)), i + 1
        i += 1
        needs = ""
        while i < len(lines) and (o := _OPTION.match(lines[i])):
            if o.group(1) == "class":
                needs = o.group(2).strip()
            i += 1
        body = []
        while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > indent):
            body.append(lines[i])
            i += 1
        if needs not in ("", "needs-gpu", "needs-gt4py", "mpiexec-n-2"):
            raise ValueError(f"{path.name}:{start}: unknown code-block class {needs!r}")
        blocks.append(Block(path.name, start, needs, textwrap.dedent("\n".join(body)).strip() + "\n"))
    return blocks


def _pages() -> list[Path]:
    return sorted(DOCS.glob("*.rst")) if DOCS.is_dir() else []


def _script(blocks: list[Block]) -> str:
    return "\n".join(f"# {b.page}, line {b.line}\n{b.code}" for b in blocks)


def _cases() -> list[Any]:
    cases = []
    for page in _pages():
        blocks = page_blocks(page)
        plain = [b for b in blocks if b.needs == ""]
        if plain:
            cases.append(pytest.param(page.stem, "", plain, id=page.stem))
        gpu = [b for b in blocks if b.needs in ("", "needs-gpu")]
        if any(b.needs == "needs-gpu" for b in gpu):
            cases.append(pytest.param(page.stem, "fake-cupy", gpu, id=f"{page.stem}-fake-cupy"))
            cases.append(pytest.param(page.stem, "needs-gpu", gpu, id=f"{page.stem}-gpu"))
        gt = [b for b in blocks if b.needs in ("", "needs-gt4py")]
        if any(b.needs == "needs-gt4py" for b in gt):
            cases.append(pytest.param(page.stem, "needs-gt4py", gt, id=f"{page.stem}-gt4py"))
        mpi = [b for b in blocks if b.needs == "mpiexec-n-2"]
        if mpi:
            cases.append(pytest.param(page.stem, "mpiexec-n-2", mpi, id=f"{page.stem}-mpiexec-n-2"))
    return cases


def _mpiexec() -> str | None:
    venv = Path(sys.executable).parent / "mpiexec"
    return str(venv) if venv.exists() else shutil.which("mpiexec")


def _has_gpu() -> bool:
    if importlib.util.find_spec("cupy") is None:
        return False
    probe = "import cupy; assert cupy.cuda.runtime.getDeviceCount() > 0"
    return subprocess.run([sys.executable, "-c", probe], capture_output=True, timeout=120).returncode == 0


@pytest.mark.parametrize(("page", "needs", "blocks"), _cases())
def test_page_examples_run(page: str, needs: str, blocks: list[Block], tmp_path: Path) -> None:
    cmd = [sys.executable]
    if needs == "needs-gpu" and not _has_gpu():
        pytest.skip("needs CuPy and a GPU")
    if needs == "needs-gt4py" and importlib.util.find_spec("gt4py") is None:
        pytest.skip("gt4py is not installed")
    if needs == "mpiexec-n-2":
        if importlib.util.find_spec("mpi4py") is None:
            pytest.skip("mpi4py is not installed")
        mpiexec = _mpiexec()
        if mpiexec is None:
            pytest.skip("no mpiexec found")
        cmd = [mpiexec, "-n", "2", sys.executable]
    script = tmp_path / f"{page}.py"
    preamble = ""
    if needs == "fake-cupy":
        tests = str(Path(__file__).resolve().parent)
        preamble = f"import sys\nsys.path.insert(0, {tests!r})\nimport fake_cupy\nsys.modules['cupy'] = fake_cupy\n"
    script.write_text(preamble + _script(blocks))
    env = dict(os.environ, GRIDBUF_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    # In a scratch directory, so that examples that write files leave nothing behind.
    proc = subprocess.Popen([*cmd, str(script)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env, cwd=tmp_path, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"the examples of docs/{page}.rst did not finish in {TIMEOUT_S} s:\n{out[-6000:]}")
    assert proc.returncode == 0, f"the examples of docs/{page}.rst failed:\n{out[-8000:]}"


def test_the_pages_have_examples() -> None:
    if not DOCS.is_dir():
        pytest.skip(f"no {DOCS} (the tests run outside a checkout)")
    pages = {c.values[0] for c in _cases()}
    assert {"getting_started", "allocation", "interfaces", "storage", "gtscript", "distributed", "device"} <= pages, pages


def test_blocks_are_read_with_their_options(tmp_path: Path) -> None:
    page = tmp_path / "p.rst"
    page.write_text(
        "Text\n\n.. code-block:: python\n\n   a = 1\n\n   b = a\nafter\n\n"
        ".. code-block:: bash\n\n   ls\n\n"
        ".. code-block:: python\n   :class: needs-gpu\n\n   import cupy\n"
    )
    blocks = page_blocks(page)
    assert [(b.needs, b.code) for b in blocks] == [("", "a = 1\n\nb = a\n"), ("needs-gpu", "import cupy\n")]
