"""Figures: which are drawn, and what each one shows (read back from the matplotlib objects)."""

from __future__ import annotations

from pathlib import Path

import pytest
from synthetic_runs import decode_series, failed, series, write_run

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


def test_time_memory_throughput_and_speedup_figures_are_written_per_scenario(tmp_path: Path) -> None:
    written = plot_run(_run(tmp_path / "run"), tmp_path / "plots", ["png", "svg"])
    names = sorted(path.name for path in written)
    stem = "vs-seq_fp32_fwd_causal_B1_H8_D64"
    kinds = ("memory", "speedup", "throughput", "time")
    assert names == sorted(f"{m}-{stem}.{ext}" for m in kinds for ext in ("png", "svg"))
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
    assert {"O(s) reference from softmax:sdpa at 1k", "O(s²) reference from softmax:sdpa at 1k"} <= set(legend)
    assert any("oom" in text and "skipped" in text for text in legend)


def test_the_reference_slopes_start_at_the_lowest_measured_point_and_say_so(tmp_path: Path) -> None:
    """At 1k SDPA (4e-6·s²: 4.19 ms) is faster than chunked (0.01·s: 10.24 ms): both slopes
    start on SDPA's point there, not between the two."""
    ax = _time_figure(_run(tmp_path))
    slopes = [line for line in ax.lines if line.get_color() == "#999999"]
    assert len(slopes) == 2
    for line, power in zip(slopes, (1, 2), strict=True):
        (x0, y0), (x1, y1) = line.get_xydata()
        assert (x0, x1) == (1024, 16384) and y0 == pytest.approx(QUADRATIC_4(1024))
        assert y1 == pytest.approx(y0 * 16**power)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "O(s) reference from softmax:sdpa at 1k" in legend


def test_failures_and_the_crossover_are_marked_where_they_happened(tmp_path: Path) -> None:
    ax = _time_figure(_run(tmp_path))
    notes = {t.get_text(): t for t in ax.texts}
    assert {"oom 8k · skipped 16k", "O(s)", "O(s²)"} <= set(notes)
    (failures,) = [line for line in ax.lines if line.get_gid() == "not ok: softmax:sdpa"]
    assert list(failures.get_xdata()) == [8192, 16384] and failures.get_fillstyle() == "none"
    assert notes["oom 8k · skipped 16k"].xy[0] == 16384  # in the right half: it ends at the last marker
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    (crossing,) = [text for text in legend if "beats" in text]
    # 0.01·s against 4e-6·s² cross at 2.5k: chunked is faster at 4k, sdpa's last ok length.
    assert crossing == "cosine:chunked beats softmax:sdpa from 4k on"


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
    assert titles == ["State held", "Peak RSS of one step", "Time per token"]  # CPU: peak RSS
    for ax in (state, peak, time):
        assert ax.get_xscale() == "log" and ax.get_yscale() == "log" and "context" in ax.get_xlabel()
        assert [t.get_text() for t in ax.get_xticklabels()] == ["1k", "4k", "16k", "64k", "256k", "1m"]
        assert "skipped 16k" in {t.get_text() for t in ax.texts}
    legend = [t.get_text() for t in state.get_legend().get_texts()]
    assert any(text.startswith("cosine:recurrent") and "^{0.00}" in text for text in legend)
    assert any(text.startswith("softmax:kvcache") and "^{1.00}" in text for text in legend)
    assert {"O(1)", "O(s)"} <= {t.get_text() for t in state.texts}
    assert any("beats softmax:kvcache" in t.get_text() for t in time.get_legend().get_texts())


def _decode_peaks(tmp_path: Path, device: str):
    """A recurrent step that allocates 264 KiB (a new state and its update) and a KV cache step
    that reads one or two pages of peak RSS, as on the CPU reference run."""
    from linbench.report.plot_decode import draw_decode

    rows = decode_series("cosine", "recurrent", lambda c: 0.12, lambda c: 131072.0, lambda c: 270336.0)
    rows += decode_series(
        "softmax", "kvcache", lambda c: 1e-4 * c, lambda c: 1024.0 * c, lambda c: 4096.0 * (c > 1024) + 4096
    )
    rows = [{**row, "device": device} for row in rows]
    run = read_run(write_run(tmp_path, rows, baselines=["softmax:kvcache"]))
    ((scenario, decode_rows),) = scenarios(run.results, "seq")
    return draw_decode(decode_rows, scenario, analyse(run)).axes[1]


def test_on_cpu_the_step_peak_panel_says_it_is_rss_and_marks_what_rss_cannot_resolve(tmp_path: Path) -> None:
    peak = _decode_peaks(tmp_path, "cpu")
    assert peak.get_title(loc="left") == "Peak RSS of one step" and "4 KiB pages" in peak.get_ylabel()
    (band,) = [patch for patch in peak.patches if patch.get_gid() == "below RSS resolution"]
    assert band.get_path().transformed(band.get_patch_transform()).get_extents().y1 == pytest.approx(16384)
    (hollow,) = [line for line in peak.lines if (line.get_gid() or "").startswith("under resolution")]
    assert hollow.get_gid() == "under resolution: softmax:kvcache" and hollow.get_markerfacecolor() == "white"
    assert list(hollow.get_xdata()) == [1024 * 4**n for n in range(6)]  # 4 KiB and 8 KiB: every context
    legend = [t.get_text() for t in peak.get_legend().get_texts()]
    assert "≤ 16 KiB (4 pages): below what peak RSS resolves (hollow)" in legend
    assert "O(1) reference from cosine:recurrent at 1k" in legend  # not from the unresolved 4 KiB


def test_on_a_gpu_the_step_peak_panel_marks_nothing(tmp_path: Path) -> None:
    peak = _decode_peaks(tmp_path, "cuda:0")
    assert peak.get_title(loc="left") == "Peak of one step"
    assert not [patch for patch in peak.patches if patch.get_gid() == "below RSS resolution"]
    legend = [t.get_text() for t in peak.get_legend().get_texts()]
    assert "O(1) reference from softmax:kvcache at 1k" in legend


def test_a_decoder_whose_step_peak_is_zero_is_named_in_the_legend_not_dropped(tmp_path: Path) -> None:
    # A GPU KV-cache step writes into its preallocated cache: 0 B, which a log axis cannot show.
    from linbench.report.plot_decode import draw_decode

    rows = decode_series("cosine", "recurrent", lambda c: 0.3, lambda c: 131072.0, lambda c: 270336.0)
    rows += decode_series("softmax", "kvcache", lambda c: 1e-4 * c, lambda c: 1024.0 * c, lambda c: 0.0)
    run = read_run(write_run(tmp_path, [{**row, "device": "cuda:0"} for row in rows], baselines=["softmax:kvcache"]))
    ((scenario, decode_rows),) = scenarios(run.results, "seq")
    state, peak, _ = draw_decode(decode_rows, scenario, analyse(run)).axes
    legend = [t.get_text() for t in peak.get_legend().get_texts()]
    assert "softmax:kvcache: 0 B at every context (no place on a log axis)" in legend
    assert not any("no place" in t.get_text() for t in state.get_legend().get_texts())  # its state is drawn


GPU_SEQS = tuple(1024 * 2**n for n in range(7))  # 1k .. 64k


def _gpu_like_run(tmp_path: Path):
    """The shape of the first H100 sweep: a slow impl along the top edge, the quadratic forms
    out of memory at 32k and skipped at 64k, where the O(s²) slope ends."""
    rows = series("cosine", "quadratic", lambda s: 2.5e-8 * s * s, seqs=GPU_SEQS[:5], peak_bytes=lambda s: 64.0 * s * s)
    rows += [failed("cosine", "quadratic", 32768, "oom"), failed("cosine", "quadratic", 65536, "skipped")]
    rows += series("cosine", "recurrent", lambda s: 0.07 * s, seqs=GPU_SEQS, peak_bytes=lambda s: 12288.0 * s)
    rows += series("cosine", "kernel", lambda s: max(0.6, 3.5e-5 * s), seqs=GPU_SEQS, peak_bytes=lambda s: 1e4 * s)
    rows += series("softmax", "naive", lambda s: 1.2e-7 * s * s, seqs=GPU_SEQS[:5], peak_bytes=lambda s: 80.0 * s * s)
    rows += [failed("softmax", "naive", 32768, "oom"), failed("softmax", "naive", 65536, "skipped")]
    rows += series("softmax", "sdpa", lambda s: 2.2e-9 * s * s + 0.03, seqs=GPU_SEQS, peak_bytes=lambda s: 1024.0 * s)
    return read_run(write_run(tmp_path, rows, baselines=["softmax:naive", "softmax:sdpa"]))


def _gpu_like_decode_run(tmp_path: Path):
    from synthetic_runs import CONTEXTS, decode_series

    contexts = tuple(1024 * 2**n for n in range(11))  # 1k .. 1m
    rows = decode_series("cosine", "recurrent", lambda c: 0.3, lambda c: 131072.0, contexts=contexts)
    rows += decode_series("softmax", "kvcache", lambda c: 40.0, lambda c: 2048.0 * c, contexts=contexts)
    rows += decode_series(
        "softmax", "recompute", lambda c: 1.6e-7 * c * c, lambda c: 3072.0 * c, lambda c: 80.0 * c * c, contexts[:5]
    )
    rows += [{**failed("softmax", "recompute", 32768, "oom"), "mode": "decode"}]
    rows += [{**failed("softmax", "recompute", c, "skipped"), "mode": "decode"} for c in contexts[6:]]
    assert CONTEXTS[-1] == contexts[-1]
    return read_run(write_run(tmp_path, rows, baselines=["softmax:kvcache", "softmax:recompute"]))


def _labels_and_marks(figure) -> list[tuple[str, object]]:
    """Every text drawn on ``figure`` (titles, slope labels, statuses, captions, legends) and every
    marker of a point that was not ok, with its box on the canvas after a draw."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    found = []
    for ax in figure.axes:
        for text in [ax.title, *ax.texts]:
            if text.get_text():
                found.append((text.get_text(), text.get_window_extent(renderer)))
        found += [(f"marker {line.get_gid()}", line.get_window_extent(renderer)) for line in ax.lines
                  if line.get_gid() and line.get_gid().startswith("not ok")]  # fmt: skip
        if ax.get_legend() is not None:
            found.append(("legend", ax.get_legend().get_window_extent(renderer)))
    return found


def _overlapping(found: list[tuple[str, object]]) -> list[tuple[str, str]]:
    pairs = []
    for n, (name, box) in enumerate(found):
        for other, other_box in found[n + 1 :]:
            if box.overlaps(other_box) and not (name.startswith("marker") and other.startswith("marker")):
                pairs.append((name, other))
    return pairs


def test_statuses_slope_labels_and_captions_never_overlap(tmp_path: Path) -> None:
    run = _gpu_like_run(tmp_path)
    analysis = analyse(run)
    ((scenario, rows),) = scenarios(run.results, "seq")
    for metric in ("time", "memory"):
        figure = draw(rows, scenario, metrics("cuda")[metric], analysis)
        found = _labels_and_marks(figure)
        names = [name for name, _ in found]
        assert {"O(s)", "O(s²)"} <= set(names) and any("oom" in name for name in names)
        assert _overlapping(found) == [], metric
        (ax,) = figure.axes
        inside = ax.get_window_extent()
        for text in ax.texts:  # the slope labels stay inside the plot, under the statuses
            if text.get_text().startswith("O("):
                assert inside.contains(*text.get_window_extent().min) and inside.contains(*text.get_window_extent().max)


def test_the_decode_figure_has_no_overlapping_labels_either(tmp_path: Path) -> None:
    from linbench.report.plot_decode import draw_decode

    run = _gpu_like_decode_run(tmp_path)
    ((scenario, rows),) = scenarios(run.results, "seq")
    figure = draw_decode(rows, scenario, analyse(run))
    for ax in figure.axes:  # every failed context, in each panel
        (failures,) = [line for line in ax.lines if line.get_gid() == "not ok: softmax:recompute"]
        assert len(failures.get_xdata()) == 6
        assert "oom 32k · skipped 64k–1m" in {t.get_text() for t in ax.texts}
    assert _overlapping(_labels_and_marks(figure)) == []
