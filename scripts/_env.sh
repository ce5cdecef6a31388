# Shared by demo.sh and test.sh: a virtual environment inside the repository with gridbuf built
# from this checkout. Usage: source scripts/_env.sh REQUIREMENTS_FILE
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -r "$1"
# Builds the Rust extension in release mode (maturin, incremental in ./target) and installs it.
.venv/bin/python -m pip install --quiet --force-reinstall --no-deps .
