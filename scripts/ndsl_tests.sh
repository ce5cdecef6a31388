#!/usr/bin/env bash
# NDSL's own stencil tests, run once as NDSL wrote them and once with gridbuf's GT4Py backend in
# place of NDSL's default CPU backend, with the counts side by side.
#
#   bash scripts/ndsl_tests.sh /path/to/NDSL-checkout [--python PY] [--gridbuf a,b,...]
#                              [--replace n1,n2] [--out DIR] [--paths "p1 p2"]
#                              [--no-default] [-- extra pytest arguments]
#
# The checkout is an NDSL *source* checkout (github.com/NOAA-GFDL/NDSL; its tests are not in any
# release on a registry). It is read only: nothing is copied, patched or downloaded, pytest runs
# from a scratch directory with no bytecode or cache written, and NDSL is imported from the
# checkout (on PYTHONPATH; it need not be installed). PY is a Python with gridbuf, GT4Py, DaCe and
# NDSL's other dependencies installed (default: $NDSL_PYTHON, else python3). NDSL pins GT4Py and
# DaCe as git submodules; install the GT4Py release nearest the checkout's pin (the script prints
# both). scripts/ndsl_suite/requirements-ndsl.txt pins what was measured (Python 3.11):
#   python3.11 -m venv venv && venv/bin/pip install -r scripts/ndsl_suite/requirements-ndsl.txt dist/gridbuf-*.whl
# Measured with NDSL 3bd3824 (2026-04-27, GT4Py pin v1.1.9-16-g99b79b58b) on GT4Py 1.1.12,
# DaCe 2.0.0b1, Python 3.11, and on GT4Py 1.2.3, DaCe 2.0.0a10, Python 3.12.
#
# How: pytest runs NDSL's tests with our plugin (scripts/ndsl_suite/gridbuf_ndsl_plugin.py, loaded
# with -p). NDSL's backend names form a closed table (ndsl.config.backend: NDSL name -> GT4Py
# name, the framework part an Enum). The first run ("default", --ndsl-backend=default) changes
# nothing. Each gridbuf run adds ONE entry to that table, st:gridbuf:cpu:<loop order> -> the
# gridbuf name (gridbuf:cpu_kfirst by default; the loop order is the one NDSL gives GT4Py's
# backend of the same layout), and makes the NDSL names of --replace build that entry. The
# default, --replace auto, names every stencil (st:) CPU name whose GT4Py backend has the gridbuf
# backend's storage layout. For gridbuf:cpu_kfirst these are st:python:cpu:IJK (Backend.python(),
# GT4Py's "debug": NDSL's default backend of StencilConfig, CompilationConfig and the boilerplate
# factories, which most of its stencil tests use), st:numpy:cpu:IJK (the CPU backend of the test
# set-up's ndsl_backend fixture), st:gt:cpu:IJK and st:dace:cpu:IJK; for gridbuf:cpu_ifirst
# st:gt:cpu:KJI and st:dace:cpu:KJI (few tests); for gridbuf:cpu_jfirst st:dace:cpu:KIJ (the
# column stencils, one StencilFactory parameter). A name of another layout is refused: NDSL
# sizes fields by the layout (SubtileGridSizer pads non-interface dims unless the backend is
# Fortran-aligned) and its tests hard-code the sizes of the backend they name. Orchestrated
# (orch:dace) names run as written in every run.
#
# Tests run (--paths, relative to the checkout's tests/): the stencil and quantity tests
# (StencilFactory, FrozenStencil, StencilConfig, CompilationConfig, quantities and QuantityFactory,
# boilerplate, NDSLRuntime, 4-D fields, basic operations, the column stencils, eta):
# dsl/test_stencil*.py dsl/test_compilation_config.py dsl/test_skip_passes.py stencils quantity
# test_basic_operations.py test_4d_fields.py test_boilerplate.py test_ndsl_runtime.py
# test_dimension_sizer.py config grid. Left out: DaCe's schedule-tree and orchestration tests
# (orch:dace only), the MPI/halo/partitioner/IO tests (no stencils). GPU parameters are
# deselected (-m "not gpu"). The plugin's summary line says how many tests built and ran a
# gridbuf stencil; the others exercise gridbuf's storage (allocation, layout checks) only.
#
# Excluded in gridbuf runs (skipped, with the reason; EXCLUDED in the plugin): the two tests that
# check NDSL's table of names itself, which the replacement makes say something else:
# dsl/test_stencil_wrapper.py::test_backend_options[backend0] (expects st:python:cpu:IJK's GT4Py
# name 'debug') and dsl/test_stencil_config.py::test_different_backend_not_equal (the python and
# numpy names both build the gridbuf entry).
#
# Environment: GT4Py 1.1.12 compiles its DaCe stencils with -std=c++17, DaCe 2.0's runtime headers
# need C++20 (std::bit_cast): GT4PY_EXTRA_COMPILE_ARGS defaults to -std=c++20 here (the later flag
# wins), so the default run's st:dace tests build. Orchestrated tests need cmake (pip install
# cmake): PY's bin folder goes first on PATH. GT_CACHE_ROOT defaults to DIR/gt_cache. pytest runs
# in a fresh scratch directory holding only a link "tests" to the checkout's tests/ (NDSL's eta
# test reads ./tests/data).
#
# Output: pytest's report of each run, then a table of passed/failed/error/skipped/xfailed/xpassed
# per run and the tests the default run passes that a gridbuf run does not (and the reverse).
# Reports: DIR/report-<label>.tsv (default DIR ./ndsl-tests). --no-default reuses DIR's default
# report. Exit status: 0 when there are no such tests, 1 when there are, 2 on a usage error, 3
# when pytest could not collect.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

usage() { sed -n '2,8p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }

[ $# -ge 1 ] || usage
case "$1" in -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
checkout="$1"; shift
python="${NDSL_PYTHON:-}"
gridbuf_backends="gridbuf:cpu_kfirst"
replace="auto"
out=""
paths="dsl/test_stencil.py dsl/test_stencil_factory.py dsl/test_stencil_wrapper.py dsl/test_stencil_config.py dsl/test_stencil_tables.py dsl/test_compilation_config.py dsl/test_skip_passes.py stencils quantity test_basic_operations.py test_4d_fields.py test_boilerplate.py test_ndsl_runtime.py test_dimension_sizer.py config grid"
run_default=1
extra=()
while [ $# -gt 0 ]; do
    case "$1" in
        --python) python="$2"; shift 2 ;;
        --python=*) python="${1#*=}"; shift ;;
        --gridbuf) gridbuf_backends="$2"; shift 2 ;;
        --gridbuf=*) gridbuf_backends="${1#*=}"; shift ;;
        --replace) replace="$2"; shift 2 ;;
        --replace=*) replace="${1#*=}"; shift ;;
        --out) out="$2"; shift 2 ;;
        --out=*) out="${1#*=}"; shift ;;
        --paths) paths="$2"; shift 2 ;;
        --paths=*) paths="${1#*=}"; shift ;;
        --no-default) run_default=0; shift ;;
        --) shift; extra=("$@"); break ;;
        *) echo "ndsl_tests.sh: unknown argument '$1'" >&2; usage ;;
    esac
done
python="${python:-python3}"
# An absolute path (pytest runs in a scratch directory), not resolved through links (a venv's
# python is a link, and the venv is where it looks for its packages).
case "$python" in
    /*) ;;
    */*) python="$(cd "$(dirname "$python")" && pwd)/$(basename "$python")" ;;
    *) python="$(command -v "$python" || echo "$python")" ;;
esac

if [ ! -d "$checkout" ]; then
    echo "ndsl_tests.sh: '$checkout' is not a directory: give the path of an NDSL source checkout" >&2
    exit 2
fi
checkout="$(cd "$checkout" && pwd)"
if [ ! -f "$checkout/ndsl/config/backend.py" ] || [ ! -f "$checkout/tests/conftest.py" ]; then
    echo "ndsl_tests.sh: '$checkout' is not an NDSL source checkout (no ndsl/config/backend.py or tests/conftest.py)" >&2
    exit 2
fi

# The interpreter's own bin folder first on PATH: DaCe runs cmake, which a venv provides there.
pybin="$(dirname "$(command -v "$python" || echo "$python")")"
export PATH="$pybin:$PATH"
export PYTHONPATH="$here/ndsl_suite:$checkout${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONDONTWRITEBYTECODE=1
versions="$("$python" -c 'import ndsl.config.backend, gt4py, dace, gridbuf, gridbuf.gt4py, pytest, sys; print(f"GT4Py {gt4py.__version__}, DaCe {dace.__version__}, gridbuf {gridbuf.__version__}, pytest {pytest.__version__}, Python {sys.version.split()[0]}")' 2>/dev/null | tail -1)" || {
    echo "ndsl_tests.sh: $python cannot import the checkout's ndsl.config.backend, then gt4py, dace, gridbuf.gt4py and pytest" >&2
    echo "  (install gridbuf, the GT4Py release nearest NDSL's pin, DaCe and NDSL's dependencies in it, or pass --python)" >&2
    exit 2
}
commit="$(git -C "$checkout" rev-parse --short HEAD 2>/dev/null || echo "not a git checkout")"
pin="$(git -C "$checkout" ls-tree HEAD external/gt4py 2>/dev/null | awk '{print $3}')"

out="${out:-$PWD/ndsl-tests}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
export GT_CACHE_ROOT="${GT_CACHE_ROOT:-$out/gt_cache}"
export GT4PY_EXTRA_COMPILE_ARGS="${GT4PY_EXTRA_COMPILE_ARGS:--std=c++20}"
mkdir -p "$GT_CACHE_ROOT"

targets=()
for p in $paths; do
    if [ -e "$checkout/tests/$p" ]; then targets+=("$checkout/tests/$p"); else echo "ndsl_tests.sh: this NDSL has no tests/$p: left out" >&2; fi
done
[ ${#targets[@]} -gt 0 ] || { echo "ndsl_tests.sh: no test paths left" >&2; exit 2; }

echo "NDSL $commit ($checkout; GT4Py pinned at ${pin:-unknown}), $versions, $python"
echo "runs: $([ $run_default = 1 ] && echo "default, ")$gridbuf_backends (replacing $replace); reports: $out"

labels=()
[ $run_default = 1 ] && labels+=(default)
IFS=',' read -r -a gb <<< "$gridbuf_backends"
labels+=("${gb[@]}")
status=0
for label in "${labels[@]}"; do
    report="$out/report-$(echo "$label" | tr ':' '_').tsv"
    echo
    echo "== NDSL's tests: $label =="
    set +e
    (
        # A scratch directory whose only entry is a link to the checkout's tests/: NDSL's tests
        # find their data as ./tests/data (grid/test_eta.py), and what they and GT4Py/DaCe write
        # to the working directory lands here, not in the checkout.
        cd "$(mktemp -d)"
        ln -s "$checkout/tests" tests
        "$python" -m pytest -p gridbuf_ndsl_plugin -p no:cacheprovider \
            -c "$checkout/pyproject.toml" --rootdir "$checkout" -m "not gpu" \
            --ndsl-backend="$label" --ndsl-replace="$replace" --ndsl-report="$report" \
            -q -rfE --tb=short -W ignore::DeprecationWarning "${targets[@]}" ${extra[@]+"${extra[@]}"}
    )
    rc=$?
    set -e
    if [ $rc -ge 2 ]; then
        echo "ndsl_tests.sh: pytest ($label) stopped with status $rc (interrupted, usage or collection error)" >&2
        [ -s "$report" ] || status=3
    fi
done
[ $status = 0 ] || exit $status

reports=()
[ -s "$out/report-default.tsv" ] && reports+=("$out/report-default.tsv")
for label in "${gb[@]}"; do reports+=("$out/report-$(echo "$label" | tr ':' '_').tsv"); done
echo
echo "== NDSL $commit: outcomes per run (reports in $out) =="
"$python" "$here/ndsl_suite/summarize.py" "${reports[@]}"
