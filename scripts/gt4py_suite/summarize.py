"""Counts per backend from the reports of gridbuf_gt4py_plugin, and the tests a reference backend
passes that gridbuf's backends do not.

    python summarize.py REPORT_DIR [--reference gt:cpu_ifirst]

REPORT_DIR holds ``report-*.tsv`` files (``outcome<TAB>backend<TAB>nodeid``). Each test's
outcome comes from the newest file that has it, so a slow column (``gt:cpu_ifirst`` compiles
C++) can be measured once, or in parts (``-k``), and the gridbuf columns rerun beside it; delete
the folder to start afresh. Standard library only.

Exit status: 0 when every test the reference passes passes on every gridbuf backend measured (or
when the reference was not measured), 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections import Counter
from pathlib import Path

COLUMNS = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")


def read_reports(folder: Path) -> dict[str, dict[str, str]]:
    """{backend: {nodeid: outcome}}, each test's outcome from the newest report that has it."""
    files = sorted(folder.glob("report-*.tsv"), key=os.path.getmtime)
    by_backend: dict[str, dict[str, str]] = {}
    for path in files:  # oldest first: a newer report's outcome of a test replaces an older one
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                outcome, backend, nodeid = line.split("\t", 2)
                by_backend.setdefault(backend, {})[nodeid] = outcome
    return by_backend


def generic_id(nodeid: str, backend: str) -> str:
    """The node id with the backend name in its parameters replaced, so that one test matches
    across backends (``test_numpy_allocators[C-numpy]`` -> ``test_numpy_allocators[C-<backend>]``)."""
    head, bracket, params = nodeid.partition("[")
    return head + bracket + re.sub(rf"(?<![A-Za-z0-9_:]){re.escape(backend)}(?![A-Za-z0-9:])", "<backend>", params)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder", type=Path)
    ap.add_argument("--reference", default="gt:cpu_ifirst")
    ap.add_argument("--order", default="", help="comma-separated backends, printed in this order first")
    args = ap.parse_args(argv)

    data = read_reports(args.folder)
    if not data:
        print(f"no report-*.tsv in {args.folder}", file=sys.stderr)
        return 2
    first = [b for b in dict.fromkeys(args.order.split(",")) if b in data]
    order = first + sorted(b for b in data if b not in first)

    print(f"{'backend':<22}" + "".join(f"{c:>9}" for c in COLUMNS) + f"{'total':>9}")
    for backend in order:
        c = Counter(data[backend].values())
        print(f"{backend:<22}" + "".join(f"{c[k]:>9}" for k in COLUMNS) + f"{sum(c.values()):>9}")

    ref = data.get(args.reference)
    if ref is None:
        print(f"\n(no '{args.reference}' column measured: nothing to compare gridbuf's backends with)")
        return 0
    ref_passed = {generic_id(n, args.reference): n for n, o in ref.items() if o == "passed"}
    status = 0
    for backend in order:
        if not backend.startswith("gridbuf:"):
            continue
        mine = {generic_id(n, backend): (n, o) for n, o in data[backend].items()}
        missing = sorted(g for g in ref_passed if g not in mine)
        gaps = sorted((g, mine[g][1]) for g in ref_passed if g in mine and mine[g][1] != "passed")
        print(f"\n{args.reference} passes, {backend} does not: {len(gaps)}" + (f" (and {len(missing)} not run)" if missing else ""))
        for g, outcome in gaps:
            print(f"  {outcome:<8} {re.sub(r'^.*?cartesian_tests/', '', mine[g][0])}")
        if gaps:
            status = 1
        ref_all = {generic_id(n, args.reference) for n in ref}
        others = sorted(n for g, (n, o) in mine.items() if g not in ref_all and o not in ("passed", "skipped", "xfailed"))
        if others:
            print(f"  and {len(others)} failing on {backend} that the {args.reference} column does not have (a hand-written backend list without it, or a partial run):")
            for n in others:
                print(f"  {data[backend][n]:<8} {re.sub(r'^.*?cartesian_tests/', '', n)}")
    return status


if __name__ == "__main__":
    sys.exit(main())
