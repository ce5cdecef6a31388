#!/usr/bin/env bash
# Builds gridbuf, then the documentation (user guide and API reference, from the installed
# package's docstrings) into docs/_build/html. Warnings are errors (-W), every cross-reference
# must resolve (nitpicky, set in docs/conf.py), and --keep-going reports all of them at once.
source "$(dirname "$0")/_env.sh" requirements-docs.txt
# A clean build: an incremental one does not reread unchanged pages, so it would not repeat their
# warnings, and stub pages of names that were removed would linger.
rm -rf docs/_build docs/reference/generated
.venv/bin/python -m sphinx -W --keep-going -b html docs docs/_build/html
echo "open docs/_build/html/index.html"
