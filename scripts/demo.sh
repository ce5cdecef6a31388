#!/usr/bin/env bash
# Builds gridbuf and runs the demo: fields for several presets, their strides and alignment,
# and a timing comparison with NumPy.
source "$(dirname "$0")/_env.sh" requirements.txt
.venv/bin/python examples/demo.py
