"""The history as an HTML page: the summary, then one figure per changed or split series (each
run's time in run order, the segments' medians, each change marked and its first run's commit
named), PNGs embedded so the page is one file."""

from __future__ import annotations

import base64
import io
from html import escape
from itertools import pairwise

from linbench.history.render import VERDICT, lines, point_name
from linbench.history.verdict import History, SeriesFinding

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
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    observations = finding.series.observations
    fig, ax = plt.subplots(figsize=(10, 3.6))
    start = 0
    for part in finding.segments:
        segment = part.segment
        xs = list(range(start, start + len(segment.observations)))
        ax.plot(xs, segment.values, "o-", ms=3, lw=1, color="tab:blue")
        if segment.split_reason:
            ax.axvline(start - 0.5, color="grey", ls=":", lw=1)
            ax.annotate("split: " + segment.split_reason, (start - 0.4, 0.98), xycoords=("data", "axes fraction"),
                        fontsize=7, va="top", color="grey")  # fmt: skip
        bounds = [0, *(c.index for c in part.changes), len(segment.observations)]
        for lo, hi in pairwise(bounds):
            level = sorted(segment.values[lo:hi])[(hi - lo) // 2]
            ax.hlines(level, start + lo - 0.4, start + hi - 0.6, color="tab:orange", lw=2)
        for change in part.changes:
            x = start + change.index
            colour = "tab:red" if change.regression else "tab:green"
            ax.axvline(x - 0.5, color=colour, lw=1.5)
            ax.annotate(f"{change.ratio:.2f}× at {segment.observations[change.index].commit[:8]}",
                        (x - 0.4, 0.05), xycoords=("data", "axes fraction"), fontsize=8, color=colour)  # fmt: skip
        start += len(segment.observations)
    ticks = list(range(len(observations)))
    step = max(1, len(ticks) // 25)
    ax.set_xticks(ticks[::step], [o.commit[:7] or o.run[:8] for o in observations][::step], rotation=60, fontsize=7)
    ax.set_xlabel("run (commit), oldest first")
    ax.set_ylabel(f"time, ms ({finding.segments[-1].segment.statistic})")
    ax.set_title(point_name(finding.series.key), fontsize=9)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    name = escape(point_name(finding.series.key))
    return f'<figure><img alt="{name}" src="data:image/png;base64,{data}"><figcaption>{name}</figcaption></figure>'
