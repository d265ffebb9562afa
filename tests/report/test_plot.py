"""Figures: which are drawn, and what each one shows (read back from the matplotlib objects)."""

from __future__ import annotations

from pathlib import Path

from synthetic_runs import failed, series, write_run

from linbench.report.analysis import analyse
from linbench.report.load import read_run
from linbench.report.plot import draw, plot_run
from linbench.report.plot_parts import metrics
from linbench.report.series import scenarios

LINEAR = lambda s: 0.01 * s  # noqa: E731
QUADRATIC_4 = lambda s: 4e-6 * s * s  # noqa: E731


def _run(tmp_path: Path):
    rows = series("cosine", "chunked", LINEAR) + series("softmax", "sdpa", QUADRATIC_4, seqs=(1024, 2048, 4096))
    rows += [failed("softmax", "sdpa", 8192, "oom"), failed("softmax", "sdpa", 16384, "skipped")]
    return read_run(write_run(tmp_path, rows, baselines=["softmax:sdpa"]))


def test_time_memory_and_throughput_figures_are_written_per_scenario(tmp_path: Path) -> None:
    written = plot_run(_run(tmp_path / "run"), tmp_path / "plots", ["png", "svg"])
    names = sorted(path.name for path in written)
    stem = "vs-seq_fp32_fwd_causal_B1_H8_D64"
    assert names == sorted(f"{m}-{stem}.{ext}" for m in ("memory", "throughput", "time") for ext in ("png", "svg"))
    assert all(path.stat().st_size > 5000 for path in written)
    assert (tmp_path / "plots" / f"time-{stem}.png").read_bytes()[:4] == b"\x89PNG"


def test_head_dim_sweeps_get_their_own_figures(tmp_path: Path) -> None:
    rows = []
    for dim in (32, 64, 128):
        rows += series("cosine", "chunked", lambda s, d=dim: 1e-5 * s * d, seqs=(4096,), dim_k=dim, dim_v=dim)
    written = plot_run(read_run(write_run(tmp_path / "run", rows)), tmp_path / "plots")
    assert sorted(p.name for p in written) == [
        "memory-vs-dim_fp32_fwd_causal_B1_H8_S4k.png",
        "time-vs-dim_fp32_fwd_causal_B1_H8_S4k.png",
    ]


def _time_figure(run):
    (scenario, rows), *_ = scenarios(run.results, "seq")
    return draw(rows, scenario, metrics("cpu")["time"], analyse(run)).axes[0]


def test_the_time_figure_says_what_it_shows(tmp_path: Path) -> None:
    ax = _time_figure(_run(tmp_path))
    title = ax.get_title(loc="left")
    for fragment in ("Test CPU", "fp32", "fwd", "causal", "B=1", "H=8", "D=64"):
        assert fragment in title
    assert "time per call" in ax.get_ylabel() and "tokens" in ax.get_xlabel()
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1k", "2k", "4k", "8k", "16k"]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(text.startswith("cosine:chunked") and "^{1.00}" in text for text in legend)
    assert any(text.startswith("softmax:sdpa") and "^{2.00}" in text for text in legend)
    assert "reference slopes" in legend and any("oom" in text and "skipped" in text for text in legend)


def test_failures_and_the_crossover_are_marked_where_they_happened(tmp_path: Path) -> None:
    ax = _time_figure(_run(tmp_path))
    notes = {t.get_text(): t for t in ax.texts}
    assert {"oom", "skipped", "O(s)", "O(s²)"} <= set(notes)
    assert notes["oom"].xy[0] == 8192 and notes["skipped"].xy[0] == 16384
    (crossing,) = [text for text in notes if "beats" in text]
    # 0.01·s against 4e-6·s² cross at 2.5k: chunked is faster at 4k, sdpa's last ok length.
    assert crossing == "cosine:chunked beats softmax:sdpa from 4k"


def test_a_decode_run_gets_the_decode_figure(tmp_path: Path) -> None:
    from synthetic_runs import decode_series

    from linbench.report.plot_decode import draw_decode

    rows = decode_series("cosine", "recurrent", lambda c: 0.05, lambda c: 131072.0)
    rows += decode_series("softmax", "kvcache", lambda c: 1e-4 * c, lambda c: 4096.0 * c)
    rows += decode_series("softmax", "recompute", lambda c: 1e-6 * c * c, lambda c: 6144.0 * c, contexts=(1024, 4096))
    rows += [{**failed("softmax", "recompute", 16384, "skipped"), "mode": "decode"}]
    run = read_run(write_run(tmp_path / "run", rows, baselines=["softmax:kvcache", "softmax:recompute"]))
    written = plot_run(run, tmp_path / "plots")
    assert [p.name for p in written] == ["decode-vs-context_fp32_decode_B1_H8_D64.png"]
    (scenario, decode_rows), *_ = scenarios(run.results, "seq")
    state, peak, time = draw_decode(decode_rows, scenario, analyse(run)).axes
    titles = [ax.get_title(loc="left") for ax in (state, peak, time)]
    assert titles == ["State held", "Peak of one step", "Time per token"]
    for ax in (state, peak, time):
        assert ax.get_xscale() == "log" and ax.get_yscale() == "log" and "context" in ax.get_xlabel()
        assert [t.get_text() for t in ax.get_xticklabels()] == ["1k", "4k", "16k", "64k", "256k", "1m"]
        assert "skipped" in {t.get_text() for t in ax.texts}
    legend = [t.get_text() for t in state.get_legend().get_texts()]
    assert any(text.startswith("cosine:recurrent") and "^{0.00}" in text for text in legend)
    assert any(text.startswith("softmax:kvcache") and "^{1.00}" in text for text in legend)
    assert {"O(1)", "O(s)"} <= {t.get_text() for t in state.texts}
    assert any("beats softmax:kvcache" in t.get_text() for t in time.texts)
