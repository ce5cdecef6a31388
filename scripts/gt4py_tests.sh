#!/usr/bin/env bash
# GT4Py's own cartesian tests, run with gridbuf's GT4Py backends among their backend parameters.
#
#   bash scripts/gt4py_tests.sh /path/to/gt4py-checkout [--backends a,b,...] [--python PY]
#                                [--out DIR] [--paths "p1 p2"] [-- extra pytest arguments]
#
# The checkout is a GT4Py *source* checkout (git clone or tag archive) of the GT4Py version the
# Python interpreter has installed: GT4Py's registry releases carry no tests. It is read only;
# nothing is copied, patched or downloaded. The versions must agree (the tests of another version
# test another frontend): the script stops with a message otherwise.
#
# How: pytest runs GT4Py's tests with our plugin (scripts/gt4py_suite/gridbuf_gt4py_plugin.py,
# loaded with -p). Importing it imports gridbuf.gt4py, which registers gridbuf:cpu_ifirst,
# gridbuf:cpu_kfirst and gridbuf:cpu_jfirst in GT4Py's backend registry before pytest collects,
# so GT4Py's tests/cartesian_tests/definitions.py puts them in ALL_BACKENDS, CPU_BACKENDS and
# PERFORMANCE_BACKENDS, and every StencilTestSuite of test_suites.py (backends = ALL_BACKENDS)
# generates its tests for them. The plugin then keeps the tests whose backend parameter is one
# of --backends (tests with no backend parameter name GT4Py's own backends in their body and are
# deselected) and writes one outcome per test, as it finishes, to DIR/report-<backends>-<time>.tsv.
#
# Tests run (--paths, relative to the checkout's tests/cartesian_tests/; those absent in a GT4Py
# version are left out): integration_tests/ (the feature tests: call interface, exec_info, field
# layouts, stencil object; the multi-feature tests: test_code_generation.py, whose test_generation
# builds every definition of the stencil-definition registry stencil_definitions.py, and the
# StencilTestSuites of test_suites.py; test_math_functions.py; test_dace_parsing.py is DaCe-only)
# and the two unit-test files that take every backend: unit_tests/test_lazy_stencil.py and
# unit_tests/backend_tests/test_backend.py.
#
# Excluded for gridbuf's backends (skipped, with the reason as the skip message; see EXCLUDED in
# the plugin). Only tests that are about GT4Py's code generation or disk cache, which a backend
# that lowers a definition in memory and writes nothing to disk has not:
#   * unit_tests/backend_tests/test_backend.py::test_toolchain_profiling[...-False]: asserts
#     build_info["load_time"] > 0 when a stencil is built a second time without rebuild, i.e. that
#     it was loaded from GT4Py's disk cache. gridbuf has no disk cache (each build lowers and
#     compiles in milliseconds). The rebuild=True variant is not excluded.
# Everything else that fails on a gridbuf backend is a gridbuf gap and is reported as a failure.
#
# Output: pytest's own report, then a table of passed/failed/error/skipped/xfailed/xpassed per
# backend, merged with the earlier reports in DIR (each test's outcome from the newest report that
# has it: the slow gt:cpu_ifirst column can be measured once, or in -k parts, and the gridbuf
# columns rerun beside it; delete DIR to start afresh), then the tests the reference backend
# gt:cpu_ifirst passes and a gridbuf backend does not, and the gridbuf failures of tests the
# gt:cpu_ifirst column lacks. Exit status: 0 when there are none (or gt:cpu_ifirst was not measured), 1 when there are,
# 2 on a usage error or a mismatched checkout, 3 when pytest could not collect the tests.
#
# Caches and time: gt:cpu_ifirst compiles C++ for each stencil (about a minute each on a loaded
# machine; StencilTestSuites rebuild every time). GT_CACHE_ROOT (default: DIR/gt_cache) holds
# GT4Py's cache, kept between runs (--keep-gtcache). GT4PY_COMPILE_OPT_LEVEL=0 in the environment
# makes those compilations quicker. numpy and the gridbuf columns take a few minutes.
#
# Defaults: --backends gt:cpu_ifirst,numpy,gridbuf:cpu_ifirst,gridbuf:cpu_kfirst
#           --python .venv/bin/python if it exists, else python3
#           --out ./gt4py-tests-<gt4py version>
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"

usage() { sed -n '2,5p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }

[ $# -ge 1 ] || usage
case "$1" in -h|--help) sed -n '2,60p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
checkout="$1"; shift
backends="gt:cpu_ifirst,numpy,gridbuf:cpu_ifirst,gridbuf:cpu_kfirst"
python=""
out=""
paths="integration_tests unit_tests/test_lazy_stencil.py unit_tests/backend_tests/test_backend.py"
extra=()
while [ $# -gt 0 ]; do
    case "$1" in
        --backends) backends="$2"; shift 2 ;;
        --backends=*) backends="${1#*=}"; shift ;;
        --python) python="$2"; shift 2 ;;
        --python=*) python="${1#*=}"; shift ;;
        --out) out="$2"; shift 2 ;;
        --out=*) out="${1#*=}"; shift ;;
        --paths) paths="$2"; shift 2 ;;
        --paths=*) paths="${1#*=}"; shift ;;
        --) shift; extra=("$@"); break ;;
        *) echo "gt4py_tests.sh: unknown argument '$1'" >&2; usage ;;
    esac
done

if [ -z "$python" ]; then
    if [ -x "$repo/.venv/bin/python" ]; then python="$repo/.venv/bin/python"; else python="python3"; fi
fi

if [ ! -d "$checkout" ]; then
    echo "gt4py_tests.sh: '$checkout' is not a directory: give the path of a GT4Py source checkout" >&2
    echo "  (git clone https://github.com/GridTools/gt4py and check out the tag of the installed version)" >&2
    exit 2
fi
checkout="$(cd "$checkout" && pwd)"
tests="$checkout/tests/cartesian_tests"
if [ ! -f "$tests/definitions.py" ] || [ ! -f "$checkout/pyproject.toml" ]; then
    echo "gt4py_tests.sh: '$checkout' is not a GT4Py source checkout (no tests/cartesian_tests/definitions.py or pyproject.toml)" >&2
    exit 2
fi

installed="$("$python" -c 'import gt4py, gridbuf.gt4py; print(gt4py.__version__)' 2>/dev/null)" || {
    echo "gt4py_tests.sh: $python cannot import gt4py and gridbuf.gt4py (install both in it, or pass --python)" >&2
    exit 2
}
# The checkout's version: the version string GT4Py keeps in sync with each release tag
# (src/gt4py/__about__.py's on_build_version, pyproject.toml's versioningit default-version).
source_version="$(sed -n 's/^on_build_version[^=]*= *"\([^"+]*\).*/\1/p' "$checkout/src/gt4py/__about__.py" 2>/dev/null | head -1)"
if [ -z "$source_version" ]; then
    source_version="$(sed -n 's/^default-version *= *"\([^"+]*\).*/\1/p' "$checkout/pyproject.toml" | head -1)"
fi
installed_base="$("$python" -c 'import sys; from packaging.version import Version; print(Version(sys.argv[1]).base_version)' "$installed")"
if [ -z "$source_version" ] || [ "$source_version" != "$installed_base" ]; then
    echo "gt4py_tests.sh: the checkout is GT4Py '${source_version:-unknown}', $python has GT4Py $installed installed." >&2
    echo "  Check out the tag v$installed_base (git -C '$checkout' checkout v$installed_base), or pass the --python of that GT4Py." >&2
    exit 2
fi

for mod in pytest hypothesis; do
    "$python" -c "import $mod" 2>/dev/null || { echo "gt4py_tests.sh: $python has no '$mod' (GT4Py's tests need it: pip install $mod)" >&2; exit 2; }
done

out="${out:-$PWD/gt4py-tests-$installed_base}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
export GT_CACHE_ROOT="${GT_CACHE_ROOT:-$out/gt_cache}"
export GT_CACHE_PYTEST_DIR="${GT_CACHE_PYTEST_DIR:-$GT_CACHE_ROOT/pytest}"
mkdir -p "$GT_CACHE_PYTEST_DIR"

targets=()
for p in $paths; do
    if [ -e "$tests/$p" ]; then targets+=("$tests/$p"); else echo "gt4py_tests.sh: GT4Py $installed has no tests/cartesian_tests/$p: left out" >&2; fi
done
[ ${#targets[@]} -gt 0 ] || { echo "gt4py_tests.sh: no test paths left" >&2; exit 2; }

report="$out/report-$(echo "$backends" | tr ',:' '+_')-$(date +%Y%m%dT%H%M%S).tsv"
echo "GT4Py $installed ($checkout), gridbuf $("$python" -c 'import gridbuf; print(gridbuf.__version__)'), $python"
echo "backends: $backends; reports: $out; GT4Py cache: $GT_CACHE_PYTEST_DIR"

# From a scratch directory, so that neither our checkout nor GT4Py's root lands on sys.path
# (GT4Py must be the installed one). GT4Py's pyproject.toml gives the markers; its addopts
# (coverage, xdist options of its CI) are dropped.
set +e
(
    cd "$(mktemp -d)"
    PYTHONPATH="$here/gt4py_suite${PYTHONPATH:+:$PYTHONPATH}" "$python" -m pytest \
        -p gridbuf_gt4py_plugin -p no:cacheprovider \
        -c "$checkout/pyproject.toml" --rootdir "$checkout" -o addopts="" \
        --gridbuf-backends="$backends" --gridbuf-report="$report" --keep-gtcache \
        -q -rfE --tb=short "${targets[@]}" ${extra[@]+"${extra[@]}"}
)
rc=$?
set -e
if [ $rc -ge 2 ]; then
    echo "gt4py_tests.sh: pytest stopped with status $rc (interrupted, usage or collection error)" >&2
    [ -s "$report" ] || exit 3
fi

echo
echo "== GT4Py $installed: outcomes per backend (reports in $out) =="
"$python" "$here/gt4py_suite/summarize.py" "$out" --reference gt:cpu_ifirst --order "gt:cpu_ifirst,numpy,gridbuf:cpu_ifirst,gridbuf:cpu_kfirst,$backends"
