"""pytest plugin: NDSL's own tests, run once as NDSL wrote them and once with gridbuf's GT4Py
backend in place of NDSL's default CPU backends.

Loaded by ``scripts/ndsl_tests.sh`` as ``-p gridbuf_ndsl_plugin`` (this folder on
``PYTHONPATH``); it edits nothing in the NDSL checkout.

NDSL names its backends ``strategy:framework:device:loop-order`` and keeps the names it accepts
in a closed table, ``ndsl.config.backend._NDSL_TO_GT4PY_BACKEND_NAMING`` (NDSL name -> GT4Py
name), whose framework part must be a member of the enum ``BackendFramework``. Its tests pick
their backends in their bodies: ``Backend.python()`` (``st:python:cpu:IJK``, GT4Py's ``debug``:
the default of ``StencilConfig``/``CompilationConfig`` and of ``boilerplate``'s factories), the
conftest's CPU ``ndsl_backend`` (``st:numpy:cpu:IJK``) and a few DaCe names.

``--ndsl-backend=default`` (the reference run) changes nothing: NDSL's tests run as written.

``--ndsl-backend=gridbuf:cpu_kfirst`` (or another name of :data:`gridbuf.gt4py.BACKENDS`):

* imports :mod:`gridbuf.gt4py` (registers the name with GT4Py) and adds ONE entry to NDSL's
  table: ``st:gridbuf:cpu:<loop order>`` -> the gridbuf name, with ``gridbuf`` added to
  ``BackendFramework``. The loop order is the one NDSL gives GT4Py's backend of the same storage
  layout (``IJK`` as ``st:gt:cpu:IJK`` = ``gt:cpu_kfirst``, ``KJI`` as ``gt:cpu_ifirst``, ``KIJ``
  as ``dace:cpu``), so NDSL's ``as_layout_map``/``is_fortran_aligned`` answer as for that layout;
* makes the NDSL names of ``--ndsl-replace`` build that entry. ``auto`` (the default) names every
  stencil (``st:``) CPU name whose GT4Py backend has the gridbuf backend's storage layout: for
  ``gridbuf:cpu_kfirst`` ``st:python:cpu:IJK`` (``debug``: NDSL's default CPU backend),
  ``st:numpy:cpu:IJK`` (the test set-up's CPU backend), ``st:gt:cpu:IJK`` and
  ``st:dace:cpu:IJK``; for ``gridbuf:cpu_ifirst`` ``st:gt:cpu:KJI`` and ``st:dace:cpu:KJI``; for
  ``gridbuf:cpu_jfirst`` ``st:dace:cpu:KIJ``. A name of another layout is refused: NDSL sizes
  fields by the layout (``SubtileGridSizer`` pads the non-interface dims unless the backend is
  Fortran-aligned) and its tests hard-code the sizes of the backend they name. Replacing: ``Backend(name)``
  for a replaced name builds ``Backend("st:gridbuf:...")``, and the module-level singleton
  ``ndsl.config.backend.backend_python`` (``Backend.python()``, the default argument of NDSL's
  configs and factories) is re-initialised as it. Everything NDSL does with the backend then
  (StencilFactory, FrozenStencil, QuantityFactory, gt4py.storage allocations) uses the gridbuf
  name; comparisons in the tests (``factory.backend == Backend.python()``) compare the same
  object. Orchestrated (``orch:dace``) names and names of other layouts are left as they are.
  The terminal summary says how many tests built and ran a gridbuf stencil (the others exercise
  gridbuf's storage only: allocations and layout checks).

``EXCLUDED`` skips, in gridbuf runs only and with the reason as the message, the two tests that
check NDSL's table of names itself (the GT4Py name of ``st:python:cpu:IJK``; that the python and
numpy names differ), which the replacement makes say something else.

``--ndsl-report=FILE`` writes one line per test as it finishes (``outcome<TAB>label<TAB>nodeid``,
the label being ``default`` or the gridbuf name), which ``summarize.py`` turns into the table of
counts and the tests the default run passes and the gridbuf run does not.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

#: (node id ending, reason): tests that check NDSL's table of names itself, which the replacement
#: of --ndsl-replace makes say something else. Skipped in gridbuf runs only, with the reason as
#: the skip message; every other failure is reported.
EXCLUDED: list[tuple[str, str]] = [
    (
        "dsl/test_stencil_wrapper.py::test_backend_options[backend0]",
        "expects the GT4Py name NDSL's table gives st:python:cpu:IJK ('debug'); the replaced name builds"
        " the gridbuf entry, whose GT4Py name is the gridbuf one",
    ),
    (
        "dsl/test_stencil_config.py::test_different_backend_not_equal",
        "asserts that configs of st:python:cpu:IJK and st:numpy:cpu:IJK differ; both names are replaced"
        " by the one gridbuf entry",
    ),
]

_outcomes: dict[str, str] = {}
_label = "default"
_config: pytest.Config | None = None


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gridbuf", "gridbuf's GT4Py backend in NDSL's tests")
    group.addoption(
        "--ndsl-backend",
        default="default",
        help="'default' (NDSL's tests as written) or a gridbuf GT4Py backend name (gridbuf:cpu_kfirst, ...)",
    )
    group.addoption(
        "--ndsl-replace",
        default="auto",
        help="comma-separated NDSL backend names that build the gridbuf entry instead; 'auto' (default):"
        " every stencil CPU name whose GT4Py backend has the gridbuf backend's layout",
    )
    group.addoption("--ndsl-report", default=None, help="write outcome<TAB>label<TAB>nodeid lines here")


def _add_gridbuf_entry(gt4py_name: str, replaced: list[str]) -> str:
    """Adds the one NDSL backend entry for ``gt4py_name`` and makes ``replaced`` build it.
    Returns the NDSL name of the entry."""
    import ndsl.config.backend as nb  # first: NDSL refuses to be imported after GT4Py's config

    import gridbuf.gt4py

    if gt4py_name not in gridbuf.gt4py.BACKENDS:
        raise pytest.UsageError(f"--ndsl-backend: '{gt4py_name}' is not one of gridbuf's backends {list(gridbuf.gt4py.BACKENDS)}")
    from gt4py.cartesian import backend as gt_backend

    table: dict[str, str] = nb._NDSL_TO_GT4PY_BACKEND_NAMING

    def layout(gt_name: str) -> tuple[int, ...]:
        return tuple(gt_backend.from_name(gt_name).storage_info["layout_map"](("I", "J", "K")))

    ours = layout(gt4py_name)
    if replaced == ["auto"]:
        # Every stencil (not orchestrated) CPU name whose GT4Py backend has gridbuf's layout.
        replaced[:] = [k for k, v in table.items() if k.startswith("st:") and ":cpu:" in k and layout(v) == ours]
    unknown = [name for name in replaced if name not in table]
    if unknown:
        raise pytest.UsageError(f"--ndsl-replace: not NDSL backend names: {unknown}; known: {list(table)}")
    # NDSL sizes fields by the layout (SubtileGridSizer pads the non-interface dims unless the
    # backend is Fortran-aligned) and its tests hard-code the sizes of the backend they name: a
    # name is replaced only by a gridbuf backend of the same storage layout.
    other = [f"{name} (GT4Py {table[name]}, layout {layout(table[name])})" for name in replaced if layout(table[name]) != ours]
    if other:
        raise pytest.UsageError(
            f"--ndsl-replace: {', '.join(other)} do not have the layout of {gt4py_name} {ours}; NDSL sizes and"
            " checks fields by the layout, so replace names of the same layout (or --ndsl-replace=auto)"
        )

    # The loop order NDSL gives GT4Py's stencil backend of the same layout.
    same_layout = gridbuf.gt4py.BACKENDS[gt4py_name]
    orders = [k.split(":")[3] for k, v in table.items() if v == same_layout and k.startswith("st:")]
    if not orders:
        raise pytest.UsageError(f"NDSL has no stencil backend of the layout of {gt4py_name} ({same_layout})")
    entry = f"st:gridbuf:cpu:{orders[0]}"

    # BackendFramework is a closed Enum: add the member "gridbuf" (what NDSL parses the
    # framework part of a name with; NDSL compares it only with DACE).
    fw = nb.BackendFramework
    if "gridbuf" not in fw._value2member_map_:
        member = object.__new__(fw)
        member._name_, member._value_ = "GRIDBUF", "gridbuf"
        member.__objclass__ = fw
        fw._member_map_["GRIDBUF"] = member
        fw._value2member_map_["gridbuf"] = member
        fw._member_names_.append("GRIDBUF")
        type.__setattr__(fw, "GRIDBUF", member)
    table[entry] = gt4py_name

    original_init = nb.Backend.__init__

    def __init__(self: Any, ndsl_backend: str) -> None:
        original_init(self, entry if ndsl_backend in replaced else ndsl_backend)

    nb.Backend.__init__ = __init__  # type: ignore[method-assign]
    _count_gridbuf_use(gridbuf.gt4py)
    # Singletons built when ndsl was imported (Backend.python() and the default arguments that
    # hold it): re-initialised in place, so every holder sees the entry.
    for singleton in (nb.backend_python, nb.backend_cpu, nb.backend_gpu):
        if singleton.as_humanly_readable() in replaced:
            original_init(singleton, entry)
    return entry


_used: dict[str, set[str]] = {"built": set(), "ran": set()}
_current: list[str] = [""]


def _count_gridbuf_use(module: Any) -> None:
    """Notes which tests built and which ran a gridbuf stencil (the summary says how many), so
    that a pass says something about gridbuf."""
    generate = module._GridbufBackend.generate
    call, run = module.GridbufStencilObject.__call__, module.GridbufStencilObject.run

    def counted_generate(self: Any) -> Any:
        _used["built"].add(_current[0])
        return generate(self)

    def counted_call(self: Any, *args: Any, **kwargs: Any) -> Any:
        _used["ran"].add(_current[0])
        return call(self, *args, **kwargs)

    def counted_run(self: Any, *args: Any, **kwargs: Any) -> Any:
        _used["ran"].add(_current[0])
        return run(self, *args, **kwargs)

    module._GridbufBackend.generate = counted_generate
    module.GridbufStencilObject.__call__ = counted_call
    module.GridbufStencilObject.run = counted_run


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    _current[0] = item.nodeid


def pytest_configure(config: pytest.Config) -> None:
    global _config, _label
    _config = config
    backend = config.getoption("--ndsl-backend")
    if backend != "default":
        replaced = [b.strip() for b in config.getoption("--ndsl-replace").split(",") if b.strip()]
        entry = _add_gridbuf_entry(backend, replaced)
        _label = backend
        config.stash[_ENTRY] = f"{entry} -> {backend}, replacing {', '.join(replaced)}"
        config.stash[_REPLACED] = list(replaced)


_ENTRY = pytest.StashKey[str]()
_REPLACED = pytest.StashKey[list]()


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--ndsl-backend") == "default":
        return
    replaced = config.stash[_REPLACED]
    for item in items:
        for ending, reason in EXCLUDED:
            if item.nodeid.endswith(ending) and "st:python:cpu:IJK" in replaced:
                item.add_marker(pytest.mark.skip(reason=f"gridbuf: excluded: {reason}"))


def pytest_report_header(config: pytest.Config) -> str:
    return "gridbuf_ndsl_plugin: " + (config.stash.get(_ENTRY, None) or "NDSL's tests as written (no gridbuf entry)")


def pytest_sessionstart(session: pytest.Session) -> None:
    path = session.config.getoption("--ndsl-report")
    if path:
        open(path, "w", encoding="utf-8").close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report: pytest.TestReport = yield
    # One outcome per test: a failure in setup, call or teardown wins; else the call's outcome.
    if report.when == "setup" and report.outcome != "passed":
        state = "skipped" if report.skipped else "error"
        _outcomes[item.nodeid] = "xfailed" if hasattr(report, "wasxfail") else state
    elif report.when == "call":
        if hasattr(report, "wasxfail"):
            _outcomes[item.nodeid] = "xfailed" if report.skipped else "xpassed"
        else:
            _outcomes[item.nodeid] = report.outcome
    elif report.when == "teardown" and report.failed:
        _outcomes[item.nodeid] = "error"
    return report


def pytest_runtest_logfinish(nodeid: str, location: Any) -> None:
    """Appends the test's outcome to the report as soon as it is known."""
    path = _config.getoption("--ndsl-report") if _config is not None else None
    if path and nodeid in _outcomes:
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"{_outcomes[nodeid]}\t{_label}\t{nodeid}\n")


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    c = Counter(_outcomes.values())
    cols = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")
    tr = terminalreporter
    tr.section("outcomes (gridbuf_ndsl_plugin)")
    tr.write_line(f"{'run':<22}" + "".join(f"{k:>9}" for k in cols))
    tr.write_line(f"{_label:<22}" + "".join(f"{c[k]:>9}" for k in cols))
    tr.write_line("gridbuf_ndsl_plugin: " + (config.stash.get(_ENTRY, None) or "NDSL's tests as written (no gridbuf entry)"))
    if _label != "default":
        built, ran = (_used[k] - {""} for k in ("built", "ran"))
        passed = {n for n, o in _outcomes.items() if o == "passed"}
        tr.write_line(
            f"tests that built a gridbuf stencil: {len(built)} ({len(built & passed)} passed); "
            f"that ran one: {len(ran)} ({len(ran & passed)} passed)"
        )
