"""The decode figure (Cottention's Figure 2, measured): against the context length, the
memory a decoder's state holds, the peak memory of one step above it, and the time per
generated token, side by side on log axes.

A recurrent state is a flat line in the first panel and a KV cache a slope of one; the
naive recompute's S×S scores show as a slope of two in the second. Reference slopes are
O(1) and O(s): constant against linear is the claim the figure tests.

On CPU a step's peak is peak RSS (linbench/measure/memory.py), which moves in whole 4 KiB
pages and picks up a page or two of the interpreter's own: a step that allocates next to
nothing (a KV cache step writes into its preallocated cache) reads 4 or 8 KiB, indistinguishable
from a step that allocates a few KiB. The middle panel says it shows RSS, shades the band up to
``RSS_RESOLUTION`` and draws the points inside it hollow: they are not told apart from zero or
from each other. What such a decoder holds is the first panel's state (``state_bytes``).

A log axis has no place for 0 B (a GPU KV-cache step that allocates nothing): a decoder whose ok
points read 0 B in a panel gets a legend entry there, its marker hollow, saying so, instead of
vanishing from the panel unremarked.
"""

from __future__ import annotations

import pandas as pd
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from linbench.report.analysis import Analysis
from linbench.report.plot_parts import (
    Dashes,
    Metric,
    decode_metrics,
    draw_crossovers,
    draw_failures,
    draw_series,
    fit_label,
    format_axes,
    legend_extras,
)
from linbench.report.plot_slopes import draw_reference_slopes
from linbench.report.series import Scenario, impl_series
from linbench.report.styles import SeriesStyle, series_styles
from linbench.units import format_size

CONTEXT_LABEL = "context length s (tokens prefilled)"
PAGE_BYTES = 4096
# Peak RSS at or below this many pages does not tell a step's own allocations from the
# interpreter's stray page or two.
RESOLUTION_PAGES = 4
RSS_RESOLUTION = RESOLUTION_PAGES * PAGE_BYTES
BAND_COLOUR = "#e8e8e8"


def draw_decode(
    rows: pd.DataFrame,
    scenario: Scenario,
    analysis: Analysis,
    styles: dict[tuple[str, str], SeriesStyle] | None = None,
    busy: str | None = None,
) -> Figure:
    """The three panels of ``scenario`` (a decode scenario along the length); each decoder's
    look from ``styles`` (the run's; by default those of ``rows``); ``busy`` (from ``busy_line``)
    ends the title."""
    figure = Figure(figsize=(17.0, 5.6), layout="constrained")
    axes = figure.subplots(1, 3)
    styles = styles or series_styles(rows)
    crossings = [c for c in analysis.crossovers if c.scenario == scenario]
    cpu = str(scenario.get("device")).split(":")[0] == "cpu"
    for ax, metric in zip(axes, decode_metrics("cpu" if cpu else "cuda").values(), strict=True):
        fitted = {(f.variant, f.impl): f for f in analysis.fits
                  if f.scenario == scenario and f.metric == metric.name}  # fmt: skip
        for variant, impl, series in impl_series(rows):
            label = f"{variant}:{impl}"
            if (variant, impl) in fitted:
                label += fit_label(fitted[(variant, impl)], "s", busy is not None and metric.name == "time")
            draw_series(ax, series, "seq", metric, label, styles[(variant, impl)])
        pages = cpu and metric.name == "memory"  # peak RSS: resolved to a few pages only
        slopes = draw_reference_slopes(ax, rows, "seq", metric, "s", (0, 1), RSS_RESOLUTION if pages else 0.0)
        unresolved = _mark_unresolved(ax, rows, styles) if pages else []
        unresolved += _zero_entries(rows, metric, styles)
        timed = metric.name == "time"
        draw_crossovers(ax, rows, crossings if timed else [], styles)
        strip = draw_failures(ax, rows, "seq", styles)
        format_axes(ax, rows, "seq", metric, "seq")
        ax.set_xlabel(CONTEXT_LABEL)
        ax.set_title(metric.title, fontsize=11, loc="left", pad=6.0 + strip)
        _legend_below(ax, rows, crossings if timed else [], styles, slopes, unresolved)
    device = scenario.get("device_name") or scenario.get("device")
    figure.suptitle(
        f"Decoding: memory and time per generated token against context\n{device} · {scenario.label()}"
        + (f"\n{busy}" if busy else ""),
        fontsize=12,
        x=0.01,
        horizontalalignment="left",
    )
    return figure


def _mark_unresolved(
    ax: Axes, rows: pd.DataFrame, styles: dict[tuple[str, str], SeriesStyle]
) -> list[tuple[Artist, str]]:
    """On CPU's peak-RSS panel: shade the band at or below ``RSS_RESOLUTION`` and draw the
    points inside it hollow. Returns the band's legend entry (none when no point is inside)."""
    ok = rows[(rows["status"] == "ok") & (rows["peak_bytes"] > 0)]
    low = ok[ok["peak_bytes"] <= RSS_RESOLUTION]
    if low.empty:
        return []
    bottom = ax.get_ylim()[0]  # fixed by the reference slopes: the band does not move it
    band = ax.axhspan(bottom, RSS_RESOLUTION, color=BAND_COLOUR, zorder=0, linewidth=0, gid="below RSS resolution")
    for variant, impl, series in impl_series(low):
        series = series.sort_values("seq")
        style = styles[(variant, impl)]
        ax.plot(series["seq"], series["peak_bytes"], linestyle="none", marker=style.marker, markersize=5,
                markerfacecolor="white", markeredgecolor=style.colour, zorder=4,
                gid=f"under resolution: {variant}:{impl}")  # fmt: skip
    text = f"≤ {RSS_RESOLUTION // 1024} KiB ({RESOLUTION_PAGES} pages): below what peak RSS resolves (hollow)"
    return [(band, text)]


def _zero_entries(
    rows: pd.DataFrame, metric: Metric, styles: dict[tuple[str, str], SeriesStyle]
) -> list[tuple[Artist, str]]:
    """A legend entry for each decoder with ok points at 0 in ``metric``, which the log axis
    cannot show: ``softmax:kvcache: 0 B at every context (no place on a log axis)``."""
    ok = rows[(rows["status"] == "ok") & rows[metric.column].notna()]
    entries: list[tuple[Artist, str]] = []
    for variant, impl, series in impl_series(ok):
        zero = series[series[metric.column] <= 0].sort_values("seq")
        if zero.empty:
            continue
        style = styles[(variant, impl)]
        handle = Line2D([], [], linestyle="none", marker=style.marker, markersize=5,
                        markerfacecolor="white", markeredgecolor=style.colour)  # fmt: skip
        where = "every context" if len(zero) == len(series) else ", ".join(format_size(s) for s in zero["seq"])
        entries.append((handle, f"{variant}:{impl}: {metric.formatter(0)} at {where} (no place on a log axis)"))
    return entries


def _legend_below(
    ax: Axes,
    rows: pd.DataFrame,
    crossings: list,
    styles: dict[tuple[str, str], SeriesStyle],
    slopes: list[tuple[str, Dashes]],
    unresolved: list[tuple[Artist, str]],
) -> None:
    handles, labels = ax.get_legend_handles_labels()
    extra = [*legend_extras(rows, crossings, styles, slopes), *unresolved]
    handles, labels = [*handles, *(h for h, _ in extra)], [*labels, *(text for _, text in extra)]
    ax.legend(handles, labels, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), frameon=False)
