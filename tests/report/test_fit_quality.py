"""Every exponent linbench shows carries what backs it: R² and the number of points for a power
law, "2 points only", "flat" or "no power law found" otherwise, in legends, tables and JSON."""

from __future__ import annotations

import re
from pathlib import Path

from synthetic_runs import series, write_run

from linbench.gate.compare import Thresholds, compare_runs
from linbench.gate.render import exponent_table
from linbench.report.analysis import analyse
from linbench.report.load import read_run
from linbench.report.plot import draw
from linbench.report.plot_parts import metrics
from linbench.report.render import report_tables
from linbench.report.series import scenarios

SEQS = tuple(1024 * 2**n for n in range(7))  # 1k .. 64k
# An exponent as the legend (mathtext), the table or compare print it.
EXPONENT = re.compile(r"\^\{?-?\d\.\d\d")
QUALITY = re.compile(r"R² \d\.\d{3}, \d+ points|2 points only|flat \(.*\d+ points|no power law found \(.*\d+ points")


def _run(tmp_path: Path):
    zigzag = lambda s: 1.0 if s in (1024, 4096, 16384, 65536) else 8.0  # noqa: E731
    rows = series("cosine", "kernel", lambda s: max(0.6, 0.6 * s / 8192), seqs=SEQS)  # launch-bound start
    rows += series("cosine", "naive", zigzag, seqs=SEQS, peak_bytes=lambda s: 1e6)  # no law; memory flat
    rows += series("cosine", "chunked", lambda s: 0.01 * s, seqs=(1024, 2048))  # two points
    rows += series("softmax", "sdpa", lambda s: 2e-8 * s * s, seqs=SEQS)
    return read_run(write_run(tmp_path, rows))


def _shown(texts: list[str]) -> list[str]:
    """The texts that show an exponent or say there is none."""
    return [t for t in texts if EXPONENT.search(t) or "no power law" in t or "flat" in t]


def test_every_exponent_in_a_legend_says_what_backs_it(tmp_path: Path) -> None:
    run = _run(tmp_path)
    analysis = analyse(run)
    ((scenario, rows),) = scenarios(run.results, "seq")
    for metric in ("time", "memory"):
        ax = draw(rows, scenario, metrics("cpu")[metric], analysis).axes[0]
        legend = [t.get_text() for t in ax.get_legend().get_texts()]
        shown = _shown(legend)
        assert len(shown) == 4, legend
        assert all(QUALITY.search(text) for text in shown), shown
    ax = draw(rows, scenario, metrics("cpu")["time"], analysis).axes[0]
    legend = {t.get_text().split("  ")[0]: t.get_text() for t in ax.get_legend().get_texts()}
    assert legend["cosine:kernel"].endswith("from 8k (R² 1.000, 4 points)")
    assert legend["cosine:chunked"].endswith("(2 points only)")
    assert legend["cosine:naive"].endswith("no power law found (7 points)")


def test_every_exponent_in_the_table_says_what_backs_it(tmp_path: Path) -> None:
    (table,) = report_tables(analyse(_run(tmp_path)))
    cells = {row[0]: row[1:3] for row in table.rows}
    assert cells["cosine:kernel"][0] == "s^1.00 (R² 1.000, 4 points, 8k–64k)"
    assert cells["cosine:naive"] == ["no power law found (7 points, 1k–64k)", "flat (s^0.00, 7 points, 1k–64k)"]
    assert cells["cosine:chunked"][0] == "s^1.00 (2 points only, 1k–2k)"
    assert all(QUALITY.search(cell) for row in table.rows for cell in row[1:3]), table.rows


def test_every_fit_in_the_json_has_its_law_r2_and_points(tmp_path: Path) -> None:
    fits = analyse(_run(tmp_path)).to_json()["fits"]
    assert fits and all({"law", "r2", "points", "x_min", "x_max", "left_out"} <= set(fit) for fit in fits)
    assert all(fit["points"] >= 2 and (fit["exponent"] is None) == (fit["law"] == "none") for fit in fits)


def test_compare_shows_the_points_behind_an_exponent_it_gates(tmp_path: Path) -> None:
    rows = series("cosine", "chunked", lambda s: 0.01 * s)
    base, cur = (read_run(write_run(tmp_path / name, rows)) for name in ("base", "cur"))
    comparison = compare_runs(base, cur, Thresholds(max_exponents={"cosine": 1.2}))
    (check,) = comparison.exponents
    assert check.points == 5 and comparison.to_json()["exponents"][0]["points"] == 5
    (row,) = exponent_table(comparison.exponents).rows
    assert row[2] == "s^1.00 (R² 1.000, 5 points)"


def test_a_law_on_fewer_than_four_points_warns_in_the_legend_and_the_table(tmp_path: Path) -> None:
    rows = series("cosine", "chunked", lambda s: 1e-4 * s**1.5, seqs=(1024, 2048, 4096))
    rows += series("softmax", "sdpa", lambda s: 2e-8 * s * s, seqs=(1024, 2048, 4096, 8192))
    run = read_run(write_run(tmp_path, rows))
    analysis = analyse(run)
    ((scenario, frame),) = scenarios(run.results, "seq")
    ax = draw(frame, scenario, metrics("cpu")["time"], analysis).axes[0]
    legend = {t.get_text().split("  ")[0]: t.get_text() for t in ax.get_legend().get_texts()}
    assert legend["cosine:chunked"].endswith("(R² 1.000, 3 points: too few to trust)")
    assert legend["softmax:sdpa"].endswith("(R² 1.000, 4 points)")
    (table,) = report_tables(analysis)
    cells = {row[0]: row[1] for row in table.rows}
    assert cells["cosine:chunked"] == "s^1.50 (R² 1.000, 3 points: too few to trust, 1k–4k)"
    (busy,) = report_tables(analysis, busy=True)
    cells = {row[0]: row[1:3] for row in busy.rows}
    assert cells["softmax:sdpa"][0] == "s^2.00 (R² 1.000, 4 points; busy machine, 1k–8k)"
    assert "busy" not in cells["softmax:sdpa"][1]  # memory: a busy machine does not move it
