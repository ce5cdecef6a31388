#!/usr/bin/env bash
# Builds gridbuf and runs every check: no import cycle between the engine's files or the binding's,
# rustfmt, clippy, the Rust tests, the stubs of the compiled
# module against the module itself (mypy.stubtest), mypy on the package, and the Python tests.
source "$(dirname "$0")/_env.sh" requirements-dev.txt
python3 scripts/check_import_cycles.py crates/gridbuf/src/gtscript crates/gridbuf-python/src
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
cargo test --workspace --exclude gridbuf-python --quiet
.venv/bin/python -m mypy.stubtest gridbuf._gridbuf --allowlist scripts/stubtest-allowlist.txt
.venv/bin/python -m mypy --config-file scripts/mypy.ini python/gridbuf
.venv/bin/python -m pytest -q
