# Shared by demo.sh, test.sh and docs.sh: a virtual environment inside the repository with gridbuf
# built from this checkout. Usage: source scripts/_env.sh REQUIREMENTS_FILE
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -r "$1"
# Builds the wheel users install (scripts/build_wheel.sh: release mode, incremental in ./target)
# and installs it, so the tests and the demo run what a user gets.
wheel=$(bash scripts/build_wheel.sh)
.venv/bin/python -m pip install --quiet --force-reinstall --no-deps "$wheel"
