"""Counts per run from the reports of gridbuf_ndsl_plugin, side by side, and the tests the default
run passes that a gridbuf run does not.

    python summarize.py REPORT [REPORT ...]

Each REPORT is a ``report-<label>.tsv`` file (``outcome<TAB>label<TAB>nodeid``); the run labelled
``default`` is the reference (NDSL's tests as written). Test ids are the same in every run (the
plugin changes what a backend name builds, not the parameters), so tests are matched by id.
Standard library only.

Exit status: 0 when every test the default run passes passes (or is skipped: the plugin's
EXCLUDED) in every gridbuf run, or there is no default run; 1 otherwise.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

COLUMNS = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")


def show(nodeids: list[str], outcomes: dict[str, str], limit: int = 8) -> None:
    """The tests, by test function: each id where a function has at most ``limit``, else the
    first ``limit`` and a count of the rest."""
    by_function: dict[str, list[str]] = {}
    for n in nodeids:
        by_function.setdefault(n.split("[", 1)[0], []).append(n)
    for ids in by_function.values():
        for n in ids[:limit]:
            print(f"  {outcomes.get(n, 'not run'):<8} {n.split('tests/', 1)[-1]}")
        if len(ids) > limit:
            rest = Counter(outcomes.get(n, "not run") for n in ids[limit:])
            print(f"  ... and {len(ids) - limit} more of {ids[0].split('[', 1)[0].split('tests/', 1)[-1]} ({dict(rest)})")


def main(argv: list[str]) -> int:
    runs: dict[str, dict[str, str]] = {}
    for path in argv:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            if line.strip():
                outcome, label, nodeid = line.split("\t", 2)
                runs.setdefault(label, {})[nodeid] = outcome
    if not runs:
        print("no outcomes in the reports", file=sys.stderr)
        return 2
    order = sorted(runs, key=lambda label: (label != "default", label))
    print(f"{'backend':<22}" + "".join(f"{c:>9}" for c in COLUMNS) + f"{'total':>9}")
    for label in order:
        c = Counter(runs[label].values())
        print(f"{label:<22}" + "".join(f"{c[k]:>9}" for k in COLUMNS) + f"{sum(c.values()):>9}")

    ref = runs.get("default")
    if ref is None:
        return 0
    status = 0
    for label in order:
        if label == "default":
            continue
        mine = runs[label]
        gaps = sorted(n for n, o in ref.items() if o == "passed" and mine.get(n, "not run") != "passed")
        print(f"\ndefault passes, {label} does not: {len(gaps)}")
        show(gaps, mine)
        better = sorted(n for n, o in mine.items() if o == "passed" and ref.get(n) not in (None, "passed"))
        if better:
            print(f"{label} passes, default does not: {len(better)}")
            show(better, ref)
        # Skipped: the plugin's EXCLUDED (tests of NDSL's table of names), listed, not counted.
        status = status or (1 if any(mine.get(n) != "skipped" for n in gaps) else 0)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
