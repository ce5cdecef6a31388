"""pytest plugin: GT4Py's cartesian tests with gridbuf's GT4Py backends among their parameters.

Loaded by ``scripts/gt4py_tests.sh`` as ``-p gridbuf_gt4py_plugin`` (this folder on
``PYTHONPATH``); it edits nothing in the GT4Py checkout.

* Importing this module imports :mod:`gridbuf.gt4py`, which registers ``gridbuf:cpu_ifirst``,
  ``gridbuf:cpu_kfirst`` and ``gridbuf:cpu_jfirst`` in GT4Py's backend registry. pytest imports
  ``-p`` plugins before it collects, so when GT4Py's ``tests/cartesian_tests/definitions.py``
  builds ``ALL_BACKENDS``/``CPU_BACKENDS``/``PERFORMANCE_BACKENDS`` from
  ``gt4py.cartesian.backend.REGISTRY``, and the ``StencilTestSuite`` classes of
  ``test_suites.py`` take ``backends = ALL_BACKENDS``, gridbuf's names are among them, with the
  marks GT4Py gives every CPU backend.
* ``EXTENDED`` names the tests whose backend list GT4Py writes by hand (the backends that have a
  feature: ``.at(K=...)``, the K index, IJ temporaries, exec_info timings); gridbuf's names are
  added to those lists too. gt:cpu_ifirst does not run them.
* ``--gridbuf-backends=a,b`` keeps only the tests whose backend parameter is one of these names
  (``backend``, ``backend_name``, or a suite's ``test["backend"]``). Tests with no backend
  parameter (they name GT4Py's backends in their body: ``test_origin_selection``,
  ``test_ignore_np_errstate``, ...) say nothing about gridbuf and are deselected.
* ``EXCLUDED`` marks as skipped, for gridbuf's backends only, the tests that are about GT4Py's
  code generation or disk cache and cannot apply to a backend that generates no code; the skip
  reason says why. Nothing else is skipped: every other failure is a gridbuf gap.
* Without pytest-xdist installed, the plugin gives its ``worker_id`` fixture (``"master"``, what
  xdist gives a run without workers), which GT4Py's ``test_exec_info.py`` asks for.
* ``--gridbuf-report=FILE`` writes one line per test as it finishes
  (``outcome<TAB>backend<TAB>nodeid``), which
  ``gt4py_tests.sh`` turns into the table of counts and the list of tests a reference backend
  passes and gridbuf's fail; the terminal summary prints the counts as well.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import pytest

import gridbuf.gt4py  # noqa: F401  (registers gridbuf's backends before GT4Py's tests are collected)

DEFAULT_BACKENDS = ("gt:cpu_ifirst", "numpy", "gridbuf:cpu_ifirst", "gridbuf:cpu_kfirst")

#: (regular expression searched in the node id, reason). Applied to gridbuf backends only.
#: Each is a test of GT4Py's code generation or of its disk cache, which a backend that lowers
#: the definition in memory and generates no code has not; see the header of gt4py_tests.sh.
EXCLUDED: list[tuple[str, str]] = [
    (
        r"backend_tests/test_backend\.py::test_toolchain_profiling\[[^\]]*-False\]",
        "asserts build_info['load_time'] > 0 on a build without rebuild, i.e. a load from GT4Py's"
        " disk cache; gridbuf has no disk cache (it lowers and compiles each build in memory)",
    ),
]

#: Tests whose ``backend`` list GT4Py writes out by hand (the backends that have a feature), with
#: the reason gridbuf's names are added to it. Tests that expect a backend to *refuse* a feature
#: (``..._raise``/``..._raises``, xfail) and tests of GT4Py's internals
#: (``test_stencil_object_cache``: ``StencilObject._domain_origin_cache``) are not extended.
EXTENDED: dict[str, str] = {
    "feature_tests/test_call_interface.py::test_exec_info": "exec_info timings (numpy, gt:cpu_kfirst)",
    "multi_feature_tests/test_code_generation.py::test_absolute_K_index": ".at(K=...) (debug, dace)",
    "multi_feature_tests/test_code_generation.py::test_iterator_access": "the K index in expressions (debug, numpy, dace)",
    "multi_feature_tests/test_code_generation.py::test_2d_temporaries": "IJ temporaries (debug, numpy, dace)",
}

_outcomes: dict[str, tuple[str, str]] = {}
_BACKEND = pytest.StashKey[str]()

try:
    import xdist  # noqa: F401
except ImportError:

    @pytest.fixture(scope="session")
    def worker_id() -> str:
        """pytest-xdist's fixture, which GT4Py's ``test_exec_info.py`` asks for, as xdist gives
        it to a run without workers (GT4Py's test requirements include xdist; ours do not)."""
        return "master"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gridbuf", "gridbuf backends in GT4Py's tests")
    group.addoption(
        "--gridbuf-backends",
        default=",".join(DEFAULT_BACKENDS),
        help="comma-separated GT4Py backend names to keep (default: %(default)s)",
    )
    group.addoption("--gridbuf-report", default=None, help="write outcome<TAB>backend<TAB>nodeid lines here")


@pytest.hookimpl(tryfirst=True)
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Adds gridbuf's backends to the hand-written ``backend`` lists of ``EXTENDED`` before
    pytest's own hook turns the ``parametrize`` marks into tests."""
    nodeid = metafunc.definition.nodeid.split("[")[0]
    if not any(nodeid.endswith(key) for key in EXTENDED):
        return
    markers = metafunc.definition.own_markers
    for i, mark in enumerate(markers):
        if mark.name == "parametrize" and mark.args and mark.args[0] == "backend":
            values = list(mark.args[1])
            names = {v if isinstance(v, str) else v.values[0] for v in values}
            values += [b for b in gridbuf.gt4py.BACKENDS if b not in names]
            markers[i] = pytest.mark.parametrize("backend", values, **mark.kwargs).mark


def backend_of(item: pytest.Item) -> str | None:
    """The GT4Py backend name a collected test runs on, or None where it has no such parameter."""
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return None
    params: dict[str, Any] = callspec.params
    for key in ("backend", "backend_name"):
        value = params.get(key)
        if isinstance(value, str):
            return value
    test = params.get("test")
    if isinstance(test, dict) and isinstance(test.get("backend"), str):
        return test["backend"]
    return None


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    wanted = [b.strip() for b in config.getoption("--gridbuf-backends").split(",") if b.strip()]
    import gt4py.cartesian.backend as gt_backend

    unknown = [b for b in wanted if b not in gt_backend.REGISTRY]
    if unknown:
        raise pytest.UsageError(f"--gridbuf-backends: not GT4Py backends: {unknown}; known: {list(gt_backend.REGISTRY)}")
    keep, drop = [], []
    for item in items:
        backend = backend_of(item)
        if backend is None or backend not in wanted:
            drop.append(item)
        else:
            keep.append(item)
            item.stash[_BACKEND] = backend
            if backend.startswith("gridbuf:"):
                for pattern, reason in EXCLUDED:
                    if re.search(pattern, item.nodeid):
                        item.add_marker(pytest.mark.skip(reason=f"gridbuf: excluded: {reason}"))
                        break
    if drop:
        config.hook.pytest_deselected(items=drop)
    items[:] = keep


def pytest_sessionstart(session: pytest.Session) -> None:
    path = session.config.getoption("--gridbuf-report")
    if path:
        open(path, "w", encoding="utf-8").close()


def pytest_runtest_logfinish(nodeid: str, location: Any) -> None:
    """Appends the test's outcome to the report as soon as it is known, so that an interrupted
    run (the slow gt:cpu_ifirst column) still leaves the outcomes of the tests that ran."""
    path = _config.getoption("--gridbuf-report") if _config is not None else None
    if path and nodeid in _outcomes:
        state, backend = _outcomes[nodeid]
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"{state}\t{backend}\t{nodeid}\n")


_config: pytest.Config | None = None


def pytest_configure(config: pytest.Config) -> None:
    global _config
    _config = config
    # GT4Py's StencilTestSuites mark their tests xdist_group (pytest-xdist's marker).
    config.addinivalue_line("markers", "xdist_group(name): pytest-xdist's group of tests")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report: pytest.TestReport = yield
    backend = item.stash.get(_BACKEND, None)
    if backend is None:
        return report
    # One outcome per test: a failure in setup, call or teardown wins; else the call's outcome.
    if report.when == "setup" and report.outcome != "passed":
        state = "skipped" if report.skipped else "error"
        _outcomes[item.nodeid] = ("xfailed" if hasattr(report, "wasxfail") else state, backend)
    elif report.when == "call":
        if hasattr(report, "wasxfail"):
            state = "xfailed" if report.skipped else "xpassed"
        else:
            state = report.outcome
        _outcomes[item.nodeid] = (state, backend)
    elif report.when == "teardown" and report.failed:
        _outcomes[item.nodeid] = ("error", backend)
    return report


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    wanted = [b.strip() for b in config.getoption("--gridbuf-backends").split(",") if b.strip()]
    counts: dict[str, Counter[str]] = {b: Counter() for b in wanted}
    for state, backend in _outcomes.values():
        counts.setdefault(backend, Counter())[state] += 1
    tr = terminalreporter
    tr.section("outcomes per backend (gridbuf_gt4py_plugin)")
    cols = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")
    tr.write_line(f"{'backend':<22}" + "".join(f"{c:>9}" for c in cols))
    for backend, c in counts.items():
        tr.write_line(f"{backend:<22}" + "".join(f"{c[k]:>9}" for k in cols))
