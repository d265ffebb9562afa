"""The speedup figure, and time and memory against batch and heads where a run swept them."""

from __future__ import annotations

from pathlib import Path

import pytest
from synthetic_runs import decode_series, failed, series, write_run

from linbench.report.analysis import analyse
from linbench.report.load import read_run
from linbench.report.plot import draw, plot_run
from linbench.report.plot_parts import metrics
from linbench.report.plot_speedup import draw_speedup
from linbench.report.render import report_tables
from linbench.report.series import baseline_names, scenarios

LINEAR = lambda s: 0.01 * s  # noqa: E731
NAIVE = lambda s: 0.2 + 4e-6 * s * s  # noqa: E731
SDPA = lambda s: 3.0 + 2e-6 * s * s  # noqa: E731
STEM = "fp32_fwd_causal_B1_H8_D64"


def _speedup_run(tmp_path: Path):
    rows = series("cosine", "chunked", LINEAR) + series("cosine", "quadratic", lambda s: 8e-6 * s * s)
    rows += series("softmax", "naive", NAIVE, seqs=(1024, 2048))  # faster than sdpa at 1k only
    rows += series("softmax", "sdpa", SDPA, seqs=(1024, 2048, 4096, 8192))
    rows += [failed("softmax", "sdpa", 16384, "oom"), failed("cosine", "quadratic", 32768, "skipped")]
    return read_run(write_run(tmp_path, rows, baselines=["softmax:naive", "softmax:sdpa"]))


def _speedup_axes(run):
    ((scenario, rows),) = scenarios(run.results, "seq")
    figure = draw_speedup(rows, scenario, analyse(run), baseline_names(run.results, run.meta))
    assert figure is not None
    return figure.axes[0]


def test_plot_writes_a_speedup_figure_for_a_run_with_softmax_baselines(tmp_path: Path) -> None:
    written = plot_run(_speedup_run(tmp_path / "run"), tmp_path / "plots")
    assert f"speedup-vs-seq_{STEM}.png" in {path.name for path in written}


def test_the_speedup_is_the_fastest_softmax_time_over_the_impls_at_each_length(tmp_path: Path) -> None:
    ax = _speedup_axes(_speedup_run(tmp_path))
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    lines = {line.get_label().split("  ")[0]: line for line in ax.lines if not line.get_label().startswith("_")}
    assert set(lines) == {"cosine:chunked", "cosine:quadratic", "1×: as fast as the fastest softmax impl"}
    chunked = lines["cosine:chunked"]
    best = {1024: NAIVE(1024)} | {s: SDPA(s) for s in (2048, 4096, 8192)}
    assert list(chunked.get_xdata()) == [1024, 2048, 4096, 8192]  # no softmax impl was ok at 16k
    assert list(chunked.get_ydata()) == pytest.approx([best[s] / (0.01 * s) for s in best], rel=1e-3)
    assert set(lines["1×: as fast as the fastest softmax impl"].get_ydata()) == {1.0}
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert f"cosine:chunked  {best[8192] / 81.92:.3g}× at 8k" in legend
    (note,) = [" ".join(t.get_text().split()) for t in ax.texts if t.get_gid() == "baseline note"]  # under the axes
    assert "Fastest softmax impl: softmax:naive at 1k; softmax:sdpa at 2k–8k." in note and "≈" not in note
    assert "No softmax impl ok at 16k: no speedup there." in note
    assert any("cosine:chunked beats" in text for text in legend)
    (failures,) = [line for line in ax.lines if line.get_gid() == "not ok: cosine:quadratic"]  # the strip
    assert list(failures.get_xdata()) == [32768]


def test_no_speedup_figure_without_a_baseline_or_for_a_decode_run(tmp_path: Path) -> None:
    alone = plot_run(read_run(write_run(tmp_path / "alone", series("cosine", "chunked", LINEAR))), tmp_path / "a")
    assert not any(path.name.startswith("speedup") for path in alone)
    rows = decode_series("cosine", "recurrent", lambda c: 0.05, lambda c: 131072.0)
    rows += decode_series("softmax", "kvcache", lambda c: 1e-4 * c, lambda c: 4096.0 * c)
    decode = read_run(write_run(tmp_path / "decode", rows, baselines=["softmax:kvcache"]))
    assert [path.name for path in plot_run(decode, tmp_path / "d")] == ["decode-vs-context_fp32_decode_B1_H8_D64.png"]


def _batch_heads_run(tmp_path: Path):
    rows = []
    for batch in (1, 2, 4, 8):
        rows += series("cosine", "chunked", lambda s, b=batch: 0.01 * s * b, seqs=(4096,), batch=batch)
        rows += series("softmax", "sdpa", lambda s, b=batch: 1.0 + 1e-6 * s * s * b, seqs=(4096,), batch=batch)
    for heads in (4, 16):
        rows += series("cosine", "chunked", lambda s, h=heads: 0.01 * s * h / 8, seqs=(4096,), heads=heads)
    rows += [{**failed("softmax", "sdpa", 4096, "oom"), "batch": 16}]
    return read_run(write_run(tmp_path, rows))


def test_time_and_memory_against_batch_and_heads_are_drawn_when_swept(tmp_path: Path) -> None:
    written = {path.name for path in plot_run(_batch_heads_run(tmp_path / "run"), tmp_path / "plots")}
    assert {
        "time-vs-batch_fp32_fwd_causal_H8_S4k_D64.png",
        "memory-vs-batch_fp32_fwd_causal_H8_S4k_D64.png",
        "time-vs-heads_fp32_fwd_causal_B1_S4k_D64.png",
        "memory-vs-heads_fp32_fwd_causal_B1_S4k_D64.png",
    } <= written
    assert not any("throughput-vs-batch" in name or "seq" in name for name in written)  # one length only


def test_the_batch_figure_fits_time_in_batch_and_says_what_it_holds(tmp_path: Path) -> None:
    run = _batch_heads_run(tmp_path)
    ((scenario, rows),) = scenarios(run.results, "batch")
    ax = draw(rows, scenario, metrics("cpu")["time"], analyse(run)).axes[0]
    title = ax.get_title(loc="left")
    assert title.startswith("Time against batch size B") and "H=8 S=4k D=64" in title and "B=" not in title
    assert ax.get_xlabel() == "batch size B"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "4", "8", "16"]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(text.startswith("cosine:chunked") and "B^{1.00}" in text and "4 points" in text for text in legend)
    assert {"O(1)", "O(B)"} <= {t.get_text() for t in ax.texts}
    assert "oom 16" in {t.get_text() for t in ax.texts}
    titles = [table.title for table in report_tables(analyse(run))]
    assert any(title.startswith("Scaling in batch size") for title in titles)
    assert any(title.startswith("Scaling in heads") for title in titles)


def test_a_small_speedup_keeps_its_digits_in_the_table(tmp_path: Path) -> None:
    rows = series("cosine", "recurrent", lambda s: 78000.0 * s / 16384) + series("softmax", "sdpa", LINEAR)
    (table,) = report_tables(analyse(read_run(write_run(tmp_path, rows))))
    cells = {row[0]: row for row in table.rows}
    assert cells["cosine:recurrent"][4] == "0.0021x vs softmax:sdpa at 16k"  # not 0.00x


def _chunk_run(tmp_path: Path):
    """A --chunk sweep at one length (two chunked impls over three chunk sizes) beside an impl
    that takes no chunk size, and the same impls at 4 of 8 key/value heads."""
    rows = []
    for chunk in (32, 64, 128):
        for impl in ("chunked", "kernel"):
            rows += series("cosine", impl, lambda s, c=chunk: 0.001 * s + 0.01 * c, seqs=(4096,), chunk=chunk)
    rows += series("cosine", "recurrent", lambda s: 0.05 * s, seqs=(4096,))
    rows += series("cosine", "chunked", lambda s: 0.002 * s, seqs=(1024, 4096), kv_heads=4, gqa="native")
    return read_run(write_run(tmp_path, rows))


def test_time_against_chunk_size_is_drawn_for_the_impls_that_take_one(tmp_path: Path) -> None:
    run = _chunk_run(tmp_path / "run")
    written = {path.name for path in plot_run(run, tmp_path / "plots")}
    assert "time-vs-chunk_fp32_fwd_causal_B1_H8_S4k_D64.png" in written
    ((scenario, rows),) = scenarios(run.results, "chunk")
    assert set(rows["impl"]) == {"chunked", "kernel"}  # recurrent takes no chunk size
    ax = draw(rows, scenario, metrics("cpu")["time"], analyse(run)).axes[0]
    assert ax.get_xlabel() == "chunk size C (tokens)"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["32", "64", "128"]
    assert not any(fit.axis == "chunk" for fit in analyse(run).fits)  # drawn, not fitted


def test_grouped_heads_are_a_scenario_of_their_own_and_say_so(tmp_path: Path) -> None:
    run = _chunk_run(tmp_path)
    ((scenario, rows),) = scenarios(run.results, "seq")
    assert set(rows["kv_heads"]) == {4} and "H=8 KV=4" in scenario.label() and "_H8_KV4_" in scenario.slug()
