"""The history as an HTML page: the summary, then one figure per changed or split series (each
run's time in run order, the segments' medians, each change marked and its first run's commit
named), PNGs embedded so the page is one file."""

from __future__ import annotations

import base64
import io
from html import escape
from itertools import pairwise
from typing import Any

from linbench.history.detect import Change
from linbench.history.render import VERDICT, lines, point_name
from linbench.history.verdict import History, SegmentFinding, SeriesFinding

DPI = 110


def html(history: History) -> str:
    shown = [f for f in history.findings if f.changed or f.splits]
    figures = "\n".join(_figure(f) for f in shown) or '<p class="note">no series changed or split</p>'
    summary = "\n".join(escape(line) for line in lines(history))
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>linbench history</title>"
        "<style>body{font-family:sans-serif;max-width:1100px;margin:auto}pre{background:#f6f6f6;padding:8px;"
        "white-space:pre-wrap}figure{margin:16px 0}img{max-width:100%}</style></head><body>"
        f"<h1>linbench history: {VERDICT[history.status]}</h1><pre>{summary}</pre>{figures}</body></html>\n"
    )


def _figure(finding: SeriesFinding) -> str:
    import matplotlib.pyplot as plt

    fig = plot(finding)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    name = escape(point_name(finding.series.key))
    return f'<figure><img alt="{name}" src="data:image/png;base64,{data}"><figcaption>{name}</figcaption></figure>'


def plot(finding: SeriesFinding) -> Any:
    """The series' figure (a matplotlib Figure; the caller closes it)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    observations = finding.series.observations
    fig, ax = plt.subplots(figsize=(10, 3.6))
    ax.set_xlim(-1, len(observations))
    labels: list[tuple[float, str, str]] = []  # x, text, colour of each change
    start = 0
    for part in finding.segments:
        segment = part.segment
        xs = list(range(start, start + len(segment.observations)))
        ax.plot(xs, segment.values, "o-", ms=3, lw=1, color="tab:blue")
        if segment.split_reason:
            ax.axvline(start - 0.5, color="grey", ls=":", lw=1)
            ax.annotate("split: " + segment.split_reason, (start - 0.4, 0.98), xycoords=("data", "axes fraction"),
                        fontsize=7, va="top", color="grey")  # fmt: skip
        changes = _shown(finding, part)
        bounds = [0, *(c.index for c in changes), len(segment.observations)]
        for lo, hi in pairwise(bounds):
            level = sorted(segment.values[lo:hi])[(hi - lo) // 2]
            ax.hlines(level, start + lo - 0.4, start + hi - 0.6, color="tab:orange", lw=2)
        for change in changes:
            x = start + change.index
            colour = "tab:red" if change.regression else "tab:green"
            ax.axvline(x - 0.5, color=colour, lw=1.5)
            labels.append((x - 0.4, f"{change.ratio:.2f}× at {segment.observations[change.index].commit[:8]}", colour))
        start += len(segment.observations)
    _place_labels(fig, ax, labels)
    ticks = list(range(len(observations)))
    step = max(1, len(ticks) // 25)
    ax.set_xticks(ticks[::step], [o.commit[:7] or o.run[:8] for o in observations][::step], rotation=60, fontsize=7)
    ax.set_xlabel("run (commit), oldest first")
    ax.set_ylabel(f"time, ms ({finding.segments[-1].segment.statistic})")
    ax.set_title(point_name(finding.series.key), fontsize=9)
    return fig


FONT = 8  # the change labels' font size, points
ROW = 0.09  # the rise of each row of labels, in axes fraction


def _shown(finding: SeriesFinding, part: SegmentFinding) -> list[Change]:
    """A segment's standing changes, and the series' recent regression where it is this
    segment's and not one of them (a step the newest runs alone showed)."""
    changes = list(part.changes)
    recent = finding.recent_regression
    if recent is not None and part is finding.segments[-1] and all(c is not recent for c in changes):
        changes.append(recent)
    return sorted(changes, key=lambda c: c.index)


def label_rows(spans: list[tuple[float, float]]) -> list[int]:
    """The row of each label, given each one's (start, end) along the axis in order of start:
    the lowest row whose last label ends before it starts, so no two labels overlap."""
    ends: list[float] = []
    rows = []
    for begin, end in spans:
        row = next((i for i, last in enumerate(ends) if last < begin), len(ends))
        if row == len(ends):
            ends.append(end)
        else:
            ends[row] = end
        rows.append(row)
    return rows


def _place_labels(fig: object, ax: object, labels: list[tuple[float, str, str]]) -> None:
    """Each change's label at its line, raised a row where it would overlap the label before
    (its width measured as drawn, in data units)."""
    labels = sorted(labels)
    texts = [ax.annotate(text, (x, 0.05), xycoords=("data", "axes fraction"), fontsize=FONT, color=colour)  # type: ignore[attr-defined]
             for x, text, colour in labels]  # fmt: skip
    if not texts:
        return
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    to_data = ax.transData.inverted()  # type: ignore[attr-defined]
    right_end = ax.get_xlim()[1]  # type: ignore[attr-defined]
    spans = []
    for (x, _, _), text in zip(labels, texts, strict=True):
        box = text.get_window_extent(renderer=renderer)
        left, right = to_data.transform([(box.x0, 0), (box.x1, 0)])[:, 0]
        width = right - left
        if x + width > right_end:  # past the axes: to the left of its line instead
            text.set_horizontalalignment("right")
            text.set_x(x - 0.2)
            spans.append((x - 0.2 - width, x))
        else:
            spans.append((x, x + width + 0.2))
    order = sorted(range(len(spans)), key=lambda i: spans[i])
    for index, row in zip(order, label_rows([spans[i] for i in order]), strict=True):
        texts[index].set_y(0.05 + ROW * row)
