#!/usr/bin/env bash
# Builds gridbuf and runs the demo: fields for several presets, their strides and alignment, a
# timing comparison with NumPy, an hdiff time loop, a gtscript stencil from definition to first
# result (beside GT4Py's build when GT4Py is installed) and a halo exchange on 2 MPI ranks.
source "$(dirname "$0")/_env.sh" requirements.txt
.venv/bin/python examples/demo.py
