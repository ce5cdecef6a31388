#!/usr/bin/env bash
# Builds gridbuf and runs every check: rustfmt, clippy, the Rust tests and the Python tests.
source "$(dirname "$0")/_env.sh" requirements-dev.txt
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
cargo test --workspace --exclude gridbuf-python --quiet
.venv/bin/python -m pytest -q
