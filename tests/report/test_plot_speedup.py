"""The speedup figure names the fastest softmax impl at each length under the axes, ties within
noise as ``sdpa ≈ sdpa-flash``, and stays about as wide as drawn however many baselines a run
has (CPU)."""

from __future__ import annotations

import io
import struct
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from synthetic_runs import series, write_run

from linbench.report.analysis import analyse
from linbench.report.load import read_run
from linbench.report.plot_speedup import draw_speedup
from linbench.report.series import baseline_names, scenarios

SEQS = (1024, 2048, 4096, 8192, 16384)
SAVE_DPI = 130  # what linbench plot saves at
# How much wider than the figure's nominal width the saved PNG may grow (the legend on the right).
MAX_WIDENING = 1.3
COSINE_IMPLS = ("quadratic", "naive", "chunked", "recurrent", "kernel")


def _sdpa(seq: int) -> float:
    return 2e-6 * seq * seq


def _many_baselines_run(tmp_path: Path):
    """Six softmax impls, of which sdpa and sdpa-flash (one kernel on CPU) take turns at being the
    faster by 0.5%, well inside their 2% p20–p80 spread."""
    rows = []
    for n, impl in enumerate(COSINE_IMPLS):
        rows += series("cosine", impl, lambda s, n=n: (n + 1) * 2e-3 * s, seqs=SEQS)
    flip = {seq: (1.005 if k % 2 else 0.995) for k, seq in enumerate(SEQS)}
    rows += series("softmax", "naive", lambda s: 8e-6 * s * s, seqs=SEQS)
    rows += series("softmax", "sdpa", _sdpa, seqs=SEQS, spread=0.02)
    rows += series("softmax", "sdpa-flash", lambda s: _sdpa(s) * flip[s], seqs=SEQS, spread=0.02)
    rows += series("softmax", "sdpa-math", lambda s: 3 * _sdpa(s), seqs=SEQS)
    rows += series("softmax", "sdpa-efficient", lambda s: 1.5 * _sdpa(s), seqs=SEQS)
    rows += series("softmax", "sdpa-cudnn", lambda s: 2 * _sdpa(s), seqs=SEQS)
    baselines = [
        f"softmax:{impl}" for impl in ("naive", "sdpa", "sdpa-flash", "sdpa-math", "sdpa-efficient", "sdpa-cudnn")
    ]
    return read_run(write_run(tmp_path, rows, baselines=baselines))


def _speedup_figure(run):
    ((scenario, rows),) = scenarios(run.results, "seq")
    figure = draw_speedup(rows, scenario, analyse(run), baseline_names(run.results, run.meta))
    assert figure is not None
    return figure


def _png_width(figure) -> int:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=SAVE_DPI, bbox_inches="tight")
    return struct.unpack(">I", buffer.getvalue()[16:20])[0]


def test_many_baselines_keep_the_figure_about_as_wide_as_drawn(tmp_path: Path) -> None:
    figure = _speedup_figure(_many_baselines_run(tmp_path))
    assert _png_width(figure) <= MAX_WIDENING * figure.get_figwidth() * SAVE_DPI
    legend = [t.get_text() for t in figure.axes[0].get_legend().get_texts()]
    assert not any("fastest softmax:" in text or "sdpa-flash at" in text for text in legend)


def test_baselines_within_noise_are_named_together_not_flipping(tmp_path: Path) -> None:
    figure = _speedup_figure(_many_baselines_run(tmp_path))
    (ax,) = figure.axes
    (note,) = [text for text in ax.texts if text.get_gid() == "baseline note"]
    said = " ".join(note.get_text().split())
    assert "Fastest softmax impl: softmax:sdpa ≈ sdpa-flash at every length." in said
    assert "≈: within noise of each other" in said
    renderer = FigureCanvasAgg(figure).get_renderer()
    under = ax.xaxis.get_tightbbox(renderer)  # the x axis: its tick labels and its label
    assert note.get_window_extent(renderer).y1 < under.y0  # under the axes, not on the plot
