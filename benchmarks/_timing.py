"""Timing helpers shared by the benchmark scripts (no timed assertions anywhere).

Every measurement is the median of several repeats. A repeat calls the statement ``number``
times in a ``timeit`` loop, with ``number`` chosen so that one repeat takes about
``repeat_seconds``. The statement's result is dropped right away, so an array allocated by one
call is freed before the next call allocates: large-allocation timings include the free and
reflect the steady state of the allocator, the same for every library.

Candidates that are compared with each other are measured round-robin (repeat 1 of every
candidate, then repeat 2 of every candidate, ...), so that a slow phase of the machine (another
process, frequency scaling) hits all of them alike.
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
import timeit
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

#: Environment variables that set the number of threads gridbuf's parallel fill and copy use.
THREAD_ENV_VARS = ("GRIDBUF_NUM_THREADS", "RAYON_NUM_THREADS")


@dataclass
class Candidate:
    """One thing to time: a label and a statement (source text, or a zero-argument callable)."""

    label: str
    stmt: str | Callable[[], Any]
    namespace: dict[str, Any] = field(default_factory=dict)


@dataclass
class Result:
    """The timings of one candidate: seconds per call of every repeat."""

    label: str
    stmt: str
    number: int
    per_call: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.per_call)

    @property
    def best(self) -> float:
        return min(self.per_call)


def _timer(c: Candidate) -> timeit.Timer:
    return timeit.Timer(c.stmt, globals=c.namespace)


def calibrate(timer: timeit.Timer, repeat_seconds: float = 0.15) -> int:
    """The number of calls per repeat that makes one repeat take about ``repeat_seconds``."""
    timer.timeit(1)  # warm-up: imports, caches, first-touch of lazily initialised state
    number = 1
    while True:
        t = timer.timeit(number)
        if t >= repeat_seconds / 4 or number >= 10**8:
            break
        number *= 10 if t < repeat_seconds / 40 else 2
    return max(1, round(number * repeat_seconds / max(t, 1e-9)))


def compare(
    candidates: Sequence[Candidate], repeats: int = 7, repeat_seconds: float = 0.15
) -> list[Result]:
    """Times every candidate ``repeats`` times, round-robin; returns one Result per candidate."""
    timers = [_timer(c) for c in candidates]
    numbers = [calibrate(t, repeat_seconds) for t in timers]
    samples: list[list[float]] = [[] for _ in candidates]
    for _ in range(repeats):
        for i, (t, n) in enumerate(zip(timers, numbers)):
            samples[i].append(t.timeit(n) / n)
    return [
        Result(c.label, c.stmt if isinstance(c.stmt, str) else getattr(c.stmt, "__name__", "?"), n, s)
        for c, n, s in zip(candidates, numbers, samples)
    ]


def fmt_time(seconds: float, unit: str) -> str:
    """``seconds`` in ``unit`` ("us" or "ms") with three significant digits or so."""
    scale = {"ns": 1e9, "us": 1e6, "ms": 1e3, "s": 1.0}[unit]
    v = seconds * scale
    return f"{v:.3g}" if v < 100 else f"{v:.0f}"


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A markdown table with padded columns (readable as plain text too)."""
    widths = [max([len(str(h)), *(len(str(r[i])) for r in rows)]) for i, h in enumerate(headers)]  # rows may be empty
    line = lambda cells: "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"  # noqa: E731
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(headers), sep, *(line(r) for r in rows)])


def machine_info() -> list[tuple[str, str]]:
    """(name, value) pairs describing the machine and the library versions."""
    import numpy as np

    info = [
        ("python", platform.python_version()),
        ("platform", platform.platform()),
        ("processor", platform.processor() or platform.machine()),
        ("numpy", np.__version__),
    ]
    try:
        import gridbuf

        info.append(("gridbuf", gridbuf.__version__))
    except ImportError:  # pragma: no cover - the benchmarks need it anyway
        pass
    try:
        import gt4py

        info.append(("gt4py", getattr(gt4py, "__version__", "installed")))
    except ImportError:
        info.append(("gt4py", "not installed"))
    cpus = os.cpu_count()
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        usable = cpus
    info.append(("cpu count", f"{cpus} (usable by this process: {usable})"))
    for var in THREAD_ENV_VARS:
        info.append((var, os.environ.get(var, "not set")))
    return info


def print_machine_info() -> None:
    for name, value in machine_info():
        print(f"- {name}: {value}")
    sys.stdout.flush()
