"""Charts of the benchmarks' measured results (``--plot DIR``), shared by every ``bench_*.py``.

Every script that takes ``--plot DIR`` writes its figure(s) into DIR (created if missing) as
``<script-stem>.png``, or ``<script-stem>_<what>.png`` when it draws several, from the very
results its tables print: nothing is measured a second time and no number is typed in by hand.

matplotlib is an optional dependency of the benchmarks only. This module does not import it when
it is imported; ``prepare`` (called right after the arguments are parsed, so that a missing
matplotlib stops the run before minutes of measuring) and ``bar_chart`` do, with the
non-interactive Agg backend.

The charts are simple grouped bar charts: one group of bars per case (a stencil, a shape, a
call), one bar colour per competitor (a library, a backend, a layout), times on a labelled axis
with its unit, a log axis where the values span decades, a title naming the benchmark, the shape
and the machine, and a caption line saying what each bar is the median of. A figure may hold
several panels side by side (for example one per layout, or small and large arrays).
"""

from __future__ import annotations

import math
import os
import platform
import sys
import textwrap
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

#: What ``add_argument`` puts in each script's ``--help``.
HELP = (
    "write PNG charts of the measured results into DIR (created if missing): <script>.png, or "
    "<script>_<what>.png where the script draws several; needs matplotlib"
)

_UNITS = (("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3), ("s", 1.0))
_UNIT_LABEL = {"ns": "ns", "us": "µs", "ms": "ms", "s": "s"}

#: Values spanning more than this ratio (largest / smallest) get a log axis unless told otherwise.
LOG_RATIO = 30.0

#: Panels side by side wider than this (inches) are stacked one above the other instead.
STACK_WIDTH = 15.0

#: Roughly the width of one character of the tick and legend labels (8 pt), inches.
_CHAR_IN = 0.066


class MatplotlibMissing(SystemExit):
    """Raised (as a clean exit with a message) when --plot is given and matplotlib is missing."""


def add_argument(parser: Any) -> None:
    """Adds the common ``--plot DIR`` option to an argparse parser."""
    parser.add_argument("--plot", metavar="DIR", default=None, help=HELP)


def pyplot() -> Any:
    """matplotlib.pyplot on the Agg backend, or a clear exit when matplotlib is not installed."""
    try:
        import matplotlib
    except ImportError as exc:
        raise MatplotlibMissing(
            "--plot needs matplotlib, an optional dependency of the benchmarks only "
            f"({exc}). Install it with `pip install matplotlib` (requirements-dev.txt pins it), "
            "or run without --plot."
        ) from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def prepare(directory: str | None) -> str | None:
    """Checks that matplotlib can be imported and creates ``directory``; returns it (None when
    --plot was not given). Call it before measuring, so a missing matplotlib fails fast."""
    if directory is None:
        return None
    pyplot()
    os.makedirs(directory, exist_ok=True)
    return directory


def path(directory: str, script: str, what: str = "") -> str:
    """``DIR/<script-stem>.png`` or ``DIR/<script-stem>_<what>.png``; ``script`` is ``__file__``
    or the stem itself."""
    stem = os.path.splitext(os.path.basename(script))[0]
    return os.path.join(directory, f"{stem}_{what}.png" if what else f"{stem}.png")


def machine() -> str:
    """The machine, briefly: operating system, architecture, cores (and the thread settings)."""
    cores = os.cpu_count() or 0
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        usable = cores
    text = f"{platform.system()} {platform.machine()}, {cores} cores"
    if usable != cores:
        text += f" ({usable} usable)"
    threads = [f"{v}={os.environ[v]}" for v in ("GRIDBUF_NUM_THREADS", "OMP_NUM_THREADS") if v in os.environ]
    if threads:
        text += ", " + ", ".join(threads)
    return text


def ramp(series: Sequence[str], cmap: str = "Blues") -> dict[str, str]:
    """Colours of a sequential colour map for ordered series (sizes, counts), light to dark."""
    pyplot()
    from matplotlib import colormaps
    from matplotlib.colors import to_hex

    cm = colormaps[cmap]
    n = len(series)
    return {s: to_hex(cm(0.35 + 0.6 * (i / max(1, n - 1)))) for i, s in enumerate(series)}


def pick_unit(seconds: Sequence[float]) -> str:
    """The largest time unit in which the smallest value reads as at least 0.01 (ns below that)."""
    low = min(seconds)
    unit = "ns"
    for name, scale in _UNITS:
        if low >= 0.01 * scale:
            unit = name
    return unit


def wrap(text: str, chars: int) -> str:
    """``text`` wrapped at spaces to lines of about ``chars`` characters, its own line breaks
    kept, words never split."""
    return "\n".join(
        textwrap.fill(line, max(1, chars), break_long_words=False, break_on_hyphens=False) for line in text.split("\n")
    )


def _longest_word(text: str) -> int:
    return max((len(w) for w in text.split()), default=0)


def fmt(value: float) -> str:
    """A value already in its unit, with three significant digits (whole numbers from 100)."""
    return f"{value:.3g}" if abs(value) < 100 else f"{value:.0f}"


@dataclass
class Panel:
    """One axes of a figure: ``values[(group, series)]`` in seconds; absent pairs draw no bar.

    ``groups`` and ``series`` give the order (default: first appearance in ``values``). ``unit``
    is "ns", "us", "ms" or "s" (default: the largest in which the smallest value is at least 0.01);
    ``log`` forces or refuses a log axis (default: when the values span more than ``LOG_RATIO``).
    """

    values: Mapping[tuple[str, str], float]
    title: str = ""
    groups: Sequence[str] | None = None
    series: Sequence[str] | None = None
    ylabel: str = "time per call"
    xlabel: str = ""
    unit: str | None = None
    log: bool | None = None
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        bad = {k: v for k, v in self.values.items() if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0)}
        if bad:
            raise ValueError(f"bar values must be positive finite seconds (leave a missing bar out): {bad}")

    def ordered(self) -> tuple[list[str], list[str]]:
        groups = list(self.groups) if self.groups is not None else list(dict.fromkeys(g for g, _ in self.values))
        series = list(self.series) if self.series is not None else list(dict.fromkeys(s for _, s in self.values))
        return groups, series

    def _widths(self) -> tuple[float, float]:
        """Inches one group needs for its bars, and for its label's longest word."""
        groups, series = self.ordered()
        most = max(sum((g, s) in self.values for s in series) for g in groups)
        return max(0.55, 0.3 * most + 0.25), _CHAR_IN * max(_longest_word(g) for g in groups) + 0.2

    def slanted(self) -> bool:
        """Many groups whose labels are much wider than their bars: labels slanted, not wrapped."""
        bars, label = self._widths()
        return len(self.ordered()[0]) >= 6 and label > 1.25 * bars

    def group_inches(self) -> float:
        """The width one group of bars gets: room for its bars, and for its label's longest word
        unless the labels are slanted."""
        bars, label = self._widths()
        return bars if self.slanted() else max(bars, label)

    def inches(self) -> float:
        return len(self.ordered()[0]) * self.group_inches() + 0.2

    def auto_log(self) -> bool:
        return max(self.values.values()) / min(self.values.values()) > LOG_RATIO


def bar_chart(
    out: str,
    *,
    benchmark: str,
    title: str,
    shape: str,
    panels: Sequence[Panel],
    repeats: int | None,
    note: str = "",
    colors: Mapping[str, str] | None = None,
) -> str:
    """Draws ``panels`` side by side as grouped bar charts and saves the PNG at ``out``.

    ``benchmark`` names the script (title), ``title`` what is measured, ``shape`` the problem size
    (subtitle, with the machine). The caption line reads "median of ``repeats`` repeats" followed
    by ``note``; ``repeats=None`` leaves only ``note``. ``colors`` fixes a series' colour (the same
    competitor keeps its colour across panels and figures). Returns ``out`` (and names it on
    stderr). The figure is closed
    before returning, also when saving fails.
    """
    plt = pyplot()
    panels = [p for p in panels if p.values]
    if not panels:
        raise ValueError("nothing to plot: every panel is empty")
    # series in order of appearance, those with at least one bar only (the legend)
    all_series = list(dict.fromkeys(s for p in panels for s in p.ordered()[1] if any(k[1] == s for k in p.values)))
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    colour = {s: (colors or {}).get(s) or palette[i % len(palette)] for i, s in enumerate(all_series)}
    # A panel's axes: its groups' room plus the y axis' labels; then the legend at the right.
    # Panels that would make the figure too wide for a page are stacked instead.
    axes_in = [max(2.4, p.inches()) for p in panels]
    legend_in = 0.6 + _CHAR_IN * max(len(s) for s in all_series)
    width = max(7.5, sum(a + 0.9 for a in axes_in) + legend_in + 0.3)
    stacked = len(panels) > 1 and width > STACK_WIDTH
    if stacked:
        width = max(7.5, max(axes_in) + 0.9 + legend_in + 0.3)
    width = min(24.0, width)
    height = 4.8 + (0.35 if len(all_series) > 8 else 0.0)
    if stacked:
        height = 1.4 + 3.6 * len(panels)
    # Log axes where a panel's values span decades; where one panel of the figure needs one, every
    # panel left to choose gets one too, so that the panels read alike.
    any_log = any(p.log if p.log is not None else p.auto_log() for p in panels)
    fig, axes = plt.subplots(
        len(panels) if stacked else 1,
        1 if stacked else len(panels),
        figsize=(width, height),
        layout="constrained",
        **({} if stacked else {"width_ratios": axes_in}),
        squeeze=False,
    )
    try:
        for ax, panel in zip(axes.flat, panels):
            _draw_panel(ax, panel, colour, panel.log if panel.log is not None else any_log)
        handles = [plt.Rectangle((0, 0), 1, 1, color=colour[s]) for s in all_series]
        fig.legend(handles, all_series, loc="outside right center", fontsize=8, frameon=False)
        fig.suptitle(wrap(f"{benchmark}: {title}\n{shape} · {machine()}", int(width * 12.5)), fontsize=10.5)
        caption = f"median of {repeats} repeats" if repeats is not None else ""
        caption = "; ".join(x for x in (caption, note) if x)
        fig.supxlabel(wrap(caption, int(width * 15)), fontsize=8, color="0.25")
        # "tight": nothing (a long legend entry, a wrapped label) is cut off at the figure's edge
        fig.savefig(out, dpi=110, bbox_inches="tight", pad_inches=0.15)
    finally:
        plt.close(fig)
    print(f"plot: {out}", file=sys.stderr, flush=True)
    return out


def _draw_panel(ax: Any, panel: Panel, colour: Mapping[str, str], log: bool) -> None:
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    groups, series = panel.ordered()
    present = list(panel.values.values())
    unit = panel.unit or pick_unit(present)
    scale = dict(_UNITS)[unit]
    bar_w = 0.8 / max(1, max(sum((g, s) in panel.values for s in series) for g in groups))
    centres = []
    for gi, g in enumerate(groups):
        here = [s for s in series if (g, s) in panel.values]
        for si, s in enumerate(here):
            x = gi + (si - (len(here) - 1) / 2) * bar_w
            v = panel.values[(g, s)] / scale
            bars = ax.bar(x, v, bar_w * 0.92, color=colour[s], label=s)
            ax.bar_label(bars, labels=[fmt(v)], fontsize=6.5, rotation=90, padding=2)
        centres.append(gi)
    ax.set_xticks(centres)
    if panel.slanted():
        ax.set_xticklabels([wrap(g, 28) for g in groups], fontsize=8, rotation=30, ha="right", rotation_mode="anchor")
    else:
        chars = int((panel.group_inches() - 0.1) / _CHAR_IN)
        ax.set_xticklabels([wrap(g, chars) for g in groups], fontsize=8)
    ax.set_xlim(-0.6, len(groups) - 0.4)
    ax.set_ylabel(f"{panel.ylabel} ({_UNIT_LABEL[unit]}{', log scale' if log else ''})")
    if panel.xlabel:
        ax.set_xlabel(panel.xlabel, fontsize=8.5)
    if panel.title:
        ax.set_title(panel.title, fontsize=9.5)
    lo, hi = min(present) / scale, max(present) / scale
    if log:
        ax.set_yscale("log")
        # room below the shortest bar and above the tallest one's rotated value label
        bottom = 10 ** math.floor(math.log10(lo) - 0.05)
        ax.set_ylim(bottom, hi * 10 ** (0.2 * max(1.0, math.log10(hi / bottom))))
        # few decades: ticks at 1, 2 and 5 of each, labelled, so that a bar's height can be read
        few = math.log10(ax.get_ylim()[1] / bottom) < 2.5
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0) if few else (1.0,)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:,.0f}" if y >= 1 else f"{y:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
    else:
        ax.set_ylim(0, hi * 1.2)
    ax.grid(True, axis="y", which="major", alpha=0.3)
    ax.set_axisbelow(True)
    for i, text in enumerate(panel.notes):
        ax.text(0.01, 0.98 - 0.06 * i, text, transform=ax.transAxes, fontsize=7, va="top", color="0.3")
