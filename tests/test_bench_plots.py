"""The benchmarks' charts (``benchmarks/_plot.py``, ``--plot DIR``): drawn from made-up results
here, never from timings, and nothing here times anything.

The GPU chart of ``bench_device.py`` can only be drawn from made-up results on a machine without
CuPy and a GPU; this is where it is tried.
"""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
if str(BENCHMARKS) not in sys.path:  # the benchmarks are scripts, not a package
    sys.path.insert(0, str(BENCHMARKS))

import _plot  # noqa: E402

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
NEEDS_MATPLOTLIB = "matplotlib is an optional dependency of the benchmarks (their --plot charts) and is not installed"


@pytest.fixture
def plt(monkeypatch):
    """matplotlib.pyplot, with every figure that ``plt.subplots`` opens recorded in ``plt.opened``;
    checks afterwards that the test left no figure open."""
    pytest.importorskip("matplotlib", reason=NEEDS_MATPLOTLIB)
    pyplot = _plot.pyplot()
    before = set(pyplot.get_fignums())
    opened = []
    real = pyplot.subplots

    def recording(*args, **kwargs):
        fig, axes = real(*args, **kwargs)
        opened.append(fig)
        return fig, axes

    monkeypatch.setattr(pyplot, "subplots", recording)
    pyplot.opened = opened
    yield pyplot
    del pyplot.opened
    assert set(pyplot.get_fignums()) == before, "a figure was left open"


def check_png(path: Path, plt) -> tuple[int, int]:
    """The PNG's width and height, after checking its signature and header and that matplotlib
    reads it back."""
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE
    length, kind = struct.unpack(">I4s", data[8:16])
    assert (length, kind) == (13, b"IHDR")
    width, height = struct.unpack(">II", data[16:24])
    assert width > 100 and height > 100
    assert data[-8:-4] == b"IEND"
    image = plt.imread(path)
    assert image.shape[:2] == (height, width)
    return width, height


def made_up_results() -> list[_plot.Panel]:
    """First results spanning four decades (a log axis) and per-call times within one decade,
    kept on a linear axis."""
    first = {}
    for stencil, t in (("copy", 0.005), ("hdiff", 0.012), ("tridiag", 0.021)):
        first[(stencil, "gridbuf")] = t
        first[(stencil, "gt4py gt:cpu_ifirst")] = 10.5
        first[(stencil, "gt4py numpy")] = 0.6
    per_call = {("copy", "gridbuf"): 2.1e-3, ("copy", "gt4py gt:cpu_ifirst"): 8.1e-3, ("hdiff", "gridbuf"): 7.6e-3}
    return [_plot.Panel(first, title="first result", ylabel="definition to first result"), _plot.Panel(per_call, title="per call", log=False)]


def test_bar_chart_writes_a_png_and_closes_its_figure(plt, tmp_path):
    out = tmp_path / "bench_made_up.png"
    got = _plot.bar_chart(
        str(out), benchmark="bench_made_up", title="made-up results", shape="4x4x4 float64", panels=made_up_results(), repeats=5
    )
    assert got == str(out)
    check_png(out, plt)
    assert len(plt.opened) == 1
    fig = plt.opened[0]
    assert not plt.fignum_exists(fig.number)
    first, per_call = fig.axes[:2]
    assert first.get_yscale() == "log"  # 5 ms to 10.5 s
    assert per_call.get_yscale() == "linear"  # 2.1 to 8.1 ms, log=False
    assert first.get_ylabel() == "definition to first result (ms, log scale)"
    assert per_call.get_ylabel() == "time per call (ms)"
    assert "bench_made_up" in fig._suptitle.get_text() and "4x4x4 float64" in fig._suptitle.get_text()
    assert "cores" in fig._suptitle.get_text()
    assert fig._supxlabel.get_text().startswith("median of 5 repeats")
    assert len(first.patches) == 9 and len(per_call.patches) == 3  # one bar per result, none invented


def test_log_axis_only_where_values_span_decades(plt, tmp_path):
    near = _plot.Panel({("a", "x"): 2e-6, ("a", "y"): 3e-6, ("b", "x"): 20e-6})
    far = _plot.Panel({("c", "x"): 1e-6, ("c", "y"): 1e-3})
    _plot.bar_chart(str(tmp_path / "near.png"), benchmark="b", title="t", shape="s", panels=[near], repeats=3)
    _plot.bar_chart(str(tmp_path / "both.png"), benchmark="b", title="t", shape="s", panels=[near, far], repeats=3)
    one, (two, three) = plt.opened[0].axes[0], plt.opened[1].axes[:2]
    assert one.get_yscale() == "linear" and one.get_ylabel() == "time per call (µs)"
    # where one panel needs a log axis, the others that leave it to the chart get one too
    assert two.get_yscale() == "log" and three.get_yscale() == "log"


def test_wide_panels_are_stacked(plt, tmp_path):
    wide = {(f"case {g}", f"library {s}"): (g + 1) * (s + 1) * 1e-3 for g in range(5) for s in range(6)}
    _plot.bar_chart(str(tmp_path / "wide.png"), benchmark="b", title="t", shape="s",
                    panels=[_plot.Panel(wide, title="one"), _plot.Panel(wide, title="two")], repeats=3)
    top, bottom = plt.opened[0].axes[:2]
    assert top.get_position().y0 > bottom.get_position().y1  # one above the other
    assert plt.opened[0].get_figwidth() <= _plot.STACK_WIDTH


def test_a_failed_save_still_closes_the_figure(plt, tmp_path):
    with pytest.raises(OSError):
        _plot.bar_chart(
            str(tmp_path / "no such directory" / "x.png"),
            benchmark="b",
            title="t",
            shape="s",
            panels=made_up_results(),
            repeats=3,
        )
    assert len(plt.opened) == 1 and not plt.fignum_exists(plt.opened[0].number)


def test_device_gpu_chart_from_made_up_results(plt, tmp_path):
    """bench_device's GPU chart, which needs CuPy and a GPU to be drawn from measurements."""
    import bench_device

    gpu = {
        "10x11x12": {"zeros": 9e-6, "cupy_zeros": 7e-6, "from_array": 30e-6, "cupy_asarray": 25e-6, "bytes": 10560, "sync": 20e-6, "set": 15e-6},
        "128x128x80": {"zeros": 40e-6, "cupy_zeros": 35e-6, "from_array": 1.2e-3, "cupy_asarray": 1.1e-3, "bytes": 10485760, "sync": 1.0e-3, "set": 0.9e-3},
    }
    out = Path(bench_device.plot_gpu(str(tmp_path), gpu, repeats=7))
    assert out.name == "bench_device_gpu.png"
    check_png(out, plt)
    standin = {"10x11x12": {"bytes": 10560, "sync": 2e-6, "copy": 1e-6, "clean": 0.2e-6, "access": 0.5e-6}}
    out = Path(bench_device.plot_standin(str(tmp_path), standin, repeats=7))
    assert out.name == "bench_device_standin.png"
    check_png(out, plt)
    assert len(plt.opened) == 2


def test_names_units_and_refusals():
    assert _plot.path("d", "/x/benchmarks/bench_gtscript.py", "first_result") == str(Path("d", "bench_gtscript_first_result.png"))
    assert _plot.path("d", "bench_halo") == str(Path("d", "bench_halo.png"))
    assert _plot.pick_unit([0.3e-6, 2e-3]) == "us"
    assert _plot.pick_unit([5e-3, 11.0]) == "ms"
    assert _plot.pick_unit([2e-9]) == "ns"
    with pytest.raises(ValueError):
        _plot.Panel({("a", "b"): 0.0})
    assert _plot.prepare(None) is None


def test_missing_matplotlib_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` raises ImportError
    with pytest.raises(SystemExit, match="--plot needs matplotlib"):
        _plot.prepare(str(tmp_path / "plots"))
    assert not (tmp_path / "plots").exists()


def test_benchmarks_import_matplotlib_only_for_plot():
    """Importing the shared module and the scripts (without running them) leaves matplotlib alone;
    no script imports it itself. (bench_gtscript makes a GT4Py cache directory and bench_halo
    starts MPI when imported: they are only read here.)"""
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "import _plot, bench_allocation, bench_call_checks, bench_definition_time, bench_device, bench_field,"
        " bench_interfaces, bench_stencil;"
        "assert 'matplotlib' not in sys.modules, 'matplotlib imported'"
    )
    subprocess.run([sys.executable, "-c", code, str(BENCHMARKS)], check=True, timeout=120)
    for script in sorted(BENCHMARKS.glob("bench_*.py")):
        text = script.read_text()
        assert "import matplotlib" not in text, f"{script.name} imports matplotlib itself: charts go through _plot"
        assert "_plot.add_argument" in text and "_plot.prepare" in text, f"{script.name} has no --plot DIR"
