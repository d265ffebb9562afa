"""A CPU run's memory figure in the reports: alloc_peak_bytes (torch's count of what a call
allocated) where the run recorded it, peak RSS (peak_bytes) where it did not."""

from __future__ import annotations

from pathlib import Path

from synthetic_runs import series, write_run

from linbench.report.analysis import analyse
from linbench.report.load import read_run
from linbench.report.plot import draw
from linbench.report.plot_parts import metrics
from linbench.report.series import memory_column, ok_points, scenarios

SEQS = (1024, 2048, 4096)
# Peak RSS as one run read it (falling with length); what the calls allocated, doubling.
RSS = {1024: 129 << 20, 2048: 77 << 20, 4096: 51 << 20}
ALLOCATED = {1024: 10 << 20, 2048: 20 << 20, 4096: 40 << 20}


def _rows(recorded: bool) -> list[dict[str, object]]:
    rows = series("cosine", "recurrent", lambda s: 0.01 * s, peak_bytes=lambda s: RSS[s], seqs=SEQS)
    return [dict(row, alloc_peak_bytes=ALLOCATED[int(row["seq"])] if recorded else None) for row in rows]


def test_the_memory_panel_and_its_fit_show_what_the_calls_allocated(tmp_path: Path) -> None:
    run = read_run(write_run(tmp_path, _rows(recorded=True)))
    ((scenario, rows),) = list(scenarios(run.results, "seq"))
    assert memory_column(rows) == "alloc_peak_bytes"
    assert ok_points(rows, "seq", "memory") == [(s, ALLOCATED[s]) for s in SEQS]
    metric = metrics("cpu", memory_column(rows))["memory"]
    ax = draw(rows, scenario, metric, analyse(run)).axes[0]
    drawn = {tuple(line.get_ydata()) for line in ax.get_lines()}
    assert tuple(float(ALLOCATED[s]) for s in SEQS) in drawn


def test_a_run_without_the_count_shows_peak_rss(tmp_path: Path) -> None:
    run = read_run(write_run(tmp_path, _rows(recorded=False)))
    ((_, rows),) = list(scenarios(run.results, "seq"))
    assert memory_column(rows) == "peak_bytes"
    assert ok_points(rows, "seq", "memory") == [(s, RSS[s]) for s in SEQS]
