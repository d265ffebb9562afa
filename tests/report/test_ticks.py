"""Log axes are labelled however little of them the data spans."""

from __future__ import annotations

from pathlib import Path

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from synthetic_runs import series, write_run

from linbench.report.analysis import analyse
from linbench.report.load import read_run
from linbench.report.plot import draw
from linbench.report.plot_parts import metrics
from linbench.report.series import scenarios
from linbench.report.ticks import ReadableLogLocator


def labelled_ticks(ax, which: str = "y") -> list[str]:
    """The major tick labels of ``ax`` that are drawn inside its view, after a draw."""
    FigureCanvasAgg(ax.figure).draw()
    axis = ax.yaxis if which == "y" else ax.xaxis
    lo, hi = sorted(axis.get_view_interval())
    return [t.get_text() for t in axis.get_ticklabels() if t.get_text() and lo <= t.get_position()[which == "y"] <= hi]


def _figure(tmp_path: Path, metric: str, rows: list[dict], device: str = "cpu"):
    run = read_run(write_run(tmp_path, rows))
    ((scenario, scenario_rows),) = scenarios(run.results, "seq")
    return draw(scenario_rows, scenario, metrics(device)[metric], analyse(run)).axes[0]


@pytest.mark.parametrize(
    ("metric", "time_ms", "peak_bytes"),
    [
        ("throughput", lambda s: s / 300e3, lambda s: 1e6),  # 3e9 FLOP/s everywhere: a flat line
        ("throughput", lambda s: 1e-3 * (s / 1024) ** 0.8, lambda s: 1e6),  # 1e12 down to 0.6e12: under 2x
        ("throughput", lambda s: 0.2 * (s / 1024) ** 0.3, lambda s: 1e6),  # 5e9 to 2.2e9
        ("memory", lambda s: 1.0, lambda s: 100 * 2**20 + 1000 * s),  # 101 to 116 MiB
        ("memory", lambda s: 1.0, lambda s: 2**20 * (s / 1024) ** 0.5),  # 1 to 4 MiB
        ("time", lambda s: 3.0 + 1e-4 * s, lambda s: 1e6),  # short sweep: 1k, 2k
    ],
)
def test_an_axis_spanning_less_than_a_decade_is_labelled(tmp_path: Path, metric, time_ms, peak_bytes) -> None:
    seqs = (1024, 2048) if metric == "time" else (1024, 2048, 4096, 8192, 16384)
    rows = series("cosine", "chunked", time_ms, peak_bytes=peak_bytes, seqs=seqs)
    for row in rows:  # the FLOP count of a call grows with s, so the rate follows time_ms
        row["flops"] = 3e9 * row["seq"] / 1024 * 1e-3 * 1024 / 1000
        row["tflops"] = row["flops"] / (row["time_ms"] * 1e-3) / 1e12
    ax = _figure(tmp_path, metric, rows)
    labels = labelled_ticks(ax)
    assert len(labels) >= 3 and len(set(labels)) == len(labels), labels


@pytest.mark.parametrize(
    ("vmin", "vmax", "binary", "expected"),
    [
        (60, 400, False, [100, 200]),  # must hold more than "100"
        (300, 450, False, [300, 350, 400, 450]),
        (243.2, 477.6, False, [250, 300, 350, 400, 450]),  # sdpa on an H100 from 4k to 64k, in TFLOP/s
        (1e-3, 1e6, False, [1e-2, 1, 1e2, 1e4, 1e6]),  # wide: every second decade, not ten ticks
        (100 * 2**20, 116 * 2**20, True, [100 * 2**20, 105 * 2**20, 110 * 2**20, 115 * 2**20]),  # round MiB
        (2**20, 4 * 2**20, True, [2**20, 2 * 2**20, 4 * 2**20]),
    ],
)
def test_the_locator_puts_three_ticks_or_more_in_any_view(vmin, vmax, binary, expected) -> None:
    ticks = [t for t in ReadableLogLocator(binary).tick_values(vmin, vmax) if vmin <= t <= vmax]
    assert 3 <= len(ticks) <= 9
    assert all(any(abs(t - e) <= 1e-9 * e for t in ticks) for e in expected), ticks
