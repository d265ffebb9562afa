"""In every kind of figure (time, memory, throughput, speedup against length; time and memory
against head dim, batch and heads; decode), points that were not ok sit in the strip above the
plot, never on it, and no reference slope's label covers a measured point, a line of the data or
a slope (its own included)."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from synthetic_runs import decode_series, failed, series, write_run

from linbench.report.load import read_run
from linbench.report.plot import figures

SEQS = tuple(1024 * 2**n for n in range(5))  # 1k .. 16k
SLOPE_GREY = "#999999"


# The forward of a CI sweep on an H100 (bf16, B4 H16 D64), ms and MiB at 1k .. 16k: eight linear
# impls bundled around the O(s) slope, whose label found no free place on or beside its line.
CI_GPU = {
    "cosine:chunked": ((2.02, 3.395, 6.145, 14.324, 30.268), (96, 192, 384, 768, 1536)),
    "linear:chunked": ((2.941, 5.364, 8.683, 21.312, 44.042), (96, 192, 384, 768, 1536)),
    "cosformer:chunked": ((3.728, 5.384, 10.855, 21.991, 40.627), (176, 352, 704, 1408, 2816)),
    "heinsen:chunked": ((20.965, 30.601, 42.042, 130.561, 269.839), (80, 144, 272, 528, 1040)),
    "cosine:kernel": ((0.685, 0.805, 1.245, 2.252, 4.152), (81, 162, 323, 646, 1292)),
    "linear:kernel": ((0.289, 0.585, 1.151, 2.272, 4.53), (56, 112, 224, 448, 896)),
    "cosformer:kernel": ((0.535, 1.011, 1.947, 3.872, 7.642), (176, 352, 704, 1408, 2816)),
    "heinsen:kernel": ((0.881, 1.76, 3.454, 6.847, 13.704), (178, 357, 719, 1426, 2852)),
    "softmax:sdpa": ((0.092, 0.101, 0.344, 1.296, 4.849), (8, 16, 32, 64, 128)),
}


def _crowded_rows() -> list[dict]:
    rows = []
    for name, (times, mibs) in CI_GPU.items():
        variant, impl = name.split(":")
        ms, peak = dict(zip(SEQS, times, strict=True)), dict(zip(SEQS, mibs, strict=True))
        rows += series(variant, impl, ms.__getitem__, peak_bytes=lambda s, p=peak: p[s] * 2.0**20, seqs=SEQS)
    return rows


def _failing_rows() -> list[dict]:
    """A quadratic form out of memory at 8k and skipped at 16k, SDPA skipped at 16k."""
    rows = series("cosine", "chunked", lambda s: 0.01 * s, seqs=SEQS)
    rows += series("cosine", "quadratic", lambda s: 0.5 * (s / 1024) ** 2, seqs=SEQS[:3])
    rows += series("softmax", "sdpa", lambda s: 0.1 * (s / 1024) ** 2, seqs=SEQS[:4])
    rows += [failed("cosine", "quadratic", 8192, "oom"), failed("cosine", "quadratic", 16384, "skipped")]
    return [*rows, failed("softmax", "sdpa", 16384, "skipped")]


def _swept_rows() -> list[dict]:
    """Head dims, batch sizes and heads swept at 4k, with a failure at the end of each sweep."""
    rows = []
    for dim in (32, 64, 128):
        for impl, power in (("chunked", 2), ("quadratic", 1)):
            rows += series("cosine", impl, lambda s, d=dim, p=power: 1e-3 * (d / 32) ** p, seqs=(4096,), dim_k=dim,
                           dim_v=dim)  # fmt: skip
    rows += [{**failed("cosine", "quadratic", 4096, "oom"), "dim_k": 256, "dim_v": 256}]
    for batch in (2, 4, 8):
        rows += series("cosine", "chunked", lambda s, b=batch: 1e-3 * b, seqs=(4096,), dim_k=32, dim_v=32, batch=batch)
    rows += [{**failed("cosine", "chunked", 4096, "timeout"), "dim_k": 32, "dim_v": 32, "batch": 16}]
    for heads in (2, 4, 16):
        rows += series("cosine", "chunked", lambda s, h=heads: 1e-4 * h, seqs=(4096,), dim_k=32, dim_v=32, heads=heads)
    return rows


def _decode_rows() -> list[dict]:
    contexts = tuple(1024 * 4**n for n in range(6))
    rows = decode_series("cosine", "recurrent", lambda c: 0.05, lambda c: 131072.0, contexts=contexts)
    rows += decode_series("softmax", "kvcache", lambda c: 1e-4 * c, lambda c: 4096.0 * c, contexts=contexts)
    rows += decode_series("softmax", "recompute", lambda c: 1e-6 * c * c, lambda c: 6144.0 * c, contexts=contexts[:2])
    return rows + [{**failed("softmax", "recompute", c, "skipped"), "mode": "decode"} for c in contexts[2:]]


def _line_spots(ax, slopes: bool) -> list[tuple[float, float]]:
    """Every measured point and a spot every 2 px along every line of the data (``slopes``: of
    the reference slopes instead), on the canvas."""
    spots = []
    for line in ax.lines:
        if (line.get_gid() or "").startswith("not ok") or (line.get_color() == SLOPE_GREY) != slopes:
            continue
        points = line.get_transform().transform(line.get_xydata())
        spots += [tuple(p) for p in points]
        if line.get_linestyle() == "None":  # markers alone (the caps of the p20–p80 bars)
            continue
        for (x0, y0), (x1, y1) in itertools.pairwise(points):
            steps = max(1, int(math.hypot(x1 - x0, y1 - y0) / 2))
            spots += [(x0 + (x1 - x0) * k / steps, y0 + (y1 - y0) * k / steps) for k in range(steps)]
    return spots


def _problems(figure) -> list[str]:
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    found = []
    for ax in figure.axes:
        plot = ax.get_window_extent(renderer)
        data, slopes = _line_spots(ax, slopes=False), _line_spots(ax, slopes=True)
        for text in ax.texts:
            if text.get_text().startswith("O("):
                box = text.get_window_extent(renderer)
                if any(box.x0 <= x <= box.x1 and box.y0 <= y <= box.y1 for x, y in data):
                    found.append(f"{ax.get_title(loc='left')!r}: {text.get_text()} covers the data")
                if any(box.x0 <= x <= box.x1 and box.y0 <= y <= box.y1 for x, y in slopes):
                    found.append(f"{ax.get_title(loc='left')!r}: {text.get_text()} lies on a slope")
        for line in ax.lines:
            if (line.get_gid() or "").startswith("not ok"):
                ys = line.get_transform().transform(line.get_xydata())[:, 1]
                if any(y < plot.y1 for y in ys):
                    found.append(f"{ax.get_title(loc='left')!r}: {line.get_gid()} on the plot")
    return found


def _all_figures(tmp_path: Path, rows: list[dict], baselines: list[str]) -> dict[str, object]:
    return {
        f"{tmp_path.name}/{name}": figure for name, figure in figures(read_run(write_run(tmp_path, rows, baselines)))
    }


def test_every_figure_kind_keeps_statuses_off_the_plot_and_slope_labels_off_the_data(tmp_path: Path) -> None:
    drawn = _all_figures(tmp_path / "crowded", _crowded_rows(), ["softmax:sdpa"])
    drawn |= _all_figures(tmp_path / "failing", _failing_rows(), ["softmax:sdpa"])
    drawn |= _all_figures(tmp_path / "swept", _swept_rows(), ["softmax:sdpa"])
    drawn |= _all_figures(tmp_path / "decode", _decode_rows(), ["softmax:kvcache", "softmax:recompute"])
    kinds = {name.split("/")[1].split("_")[0] for name in drawn}
    assert kinds == {
        "time-vs-seq", "memory-vs-seq", "throughput-vs-seq", "speedup-vs-seq", "time-vs-dim", "memory-vs-dim",
        "time-vs-batch", "memory-vs-batch", "time-vs-heads", "memory-vs-heads", "decode-vs-context",
    }  # fmt: skip
    problems = [f"{name}: {problem}" for name, figure in sorted(drawn.items()) for problem in _problems(figure)]
    assert problems == []
