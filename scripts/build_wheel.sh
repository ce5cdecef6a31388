#!/usr/bin/env bash
# Builds gridbuf's wheel into dist/: one abi3 wheel for every CPython >= 3.10 on manylinux2014
# x86-64 (glibc 2.17 and newer). maturin compiles the extension in release mode and zig, installed
# from the registry, links it against the old glibc, so no docker and no manylinux image are needed.
# Usage: bash scripts/build_wheel.sh   (prints the wheel's path last)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -r requirements-build.txt
rm -f dist/gridbuf-*.whl
# maturin finds zig through the venv's python (the ziglang package), so the venv goes first on PATH.
PATH="$PWD/.venv/bin:$PATH" maturin build --quiet --release --zig --compatibility manylinux2014 \
    --interpreter .venv/bin/python --out dist >&2
ls dist/gridbuf-*.whl
