#!/usr/bin/env bash
# Installs the wheel built by scripts/build_wheel.sh into a fresh virtual environment whose PATH has
# no Rust toolchain, and runs the Python test suite against the installed wheel (not the checkout:
# the sources under python/ are never on sys.path). Optional peers (gt4py, CuPy, mpi4py, xarray)
# are not installed, so their tests skip.
# Usage: bash scripts/test_wheel.sh [PYTHON ...]   (interpreters by name or path; default: python3)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo="$PWD"
wheel=$(ls dist/gridbuf-*-abi3-*.whl)
for python in "${@:-python3}"; do
    # The interpreter itself, not a launcher such as a pyenv shim that needs the caller's PATH.
    exe=$("$python" -c 'import sys; print(sys.executable)')
    venv=$(mktemp -d)/venv
    # The caller's environment (the package index's settings and certificates stay) with every
    # PATH directory that holds cargo or rustc removed, and rustup's variables unset.
    clean_path=$(
        IFS=:
        for dir in $PATH; do
            if [ -n "$dir" ] && [ ! -e "$dir/cargo" ] && [ ! -e "$dir/rustc" ]; then printf '%s:' "$dir"; fi
        done
    )
    clean=(env -u CARGO_HOME -u RUSTUP_HOME -u RUSTUP_TOOLCHAIN -u VIRTUAL_ENV -u PYTHONPATH PATH="${clean_path%:}")
    "${clean[@]}" "$exe" -m venv "$venv"
    if "${clean[@]}" sh -c 'command -v cargo || command -v rustc'; then
        echo "test_wheel.sh: a Rust toolchain is on the clean PATH" >&2
        exit 1
    fi
    start=$EPOCHREALTIME
    "${clean[@]}" "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        -r requirements-wheel-test.txt "$wheel"
    echo "$("$venv/bin/python" -V): installed $(basename "$wheel") and the test runner in" \
        "$(awk "BEGIN { printf \"%.1f\", $EPOCHREALTIME - $start }") s"
    (cd "$venv/.." && "${clean[@]}" "$venv/bin/python" -c \
        'import gridbuf, sys; assert "site-packages" in gridbuf.__file__, gridbuf.__file__; print("gridbuf from", gridbuf.__file__)')
    # -o addopts=: no list of skip reasons (every gt4py, CuPy, mpi4py and xarray test skips here).
    "${clean[@]}" "$venv/bin/python" -m pytest -q -p no:cacheprovider -o addopts= "$repo/tests"
    rm -rf "$(dirname "$venv")"
done
