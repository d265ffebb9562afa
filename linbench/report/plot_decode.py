"""The decode figure (Cottention's Figure 2, measured): against the context length, the
memory a decoder's state holds, the peak memory of one step above it, and the time per
generated token, side by side on log axes.

A recurrent state is a flat line in the first panel and a KV cache a slope of one; the
naive recompute's S×S scores show as a slope of two in the second. Reference slopes are
O(1) and O(s): constant against linear is the claim the figure tests.
"""

from __future__ import annotations

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from linbench.report.analysis import Analysis
from linbench.report.plot_parts import (
    decode_metrics,
    draw_crossovers,
    draw_failures,
    draw_reference_slopes,
    draw_series,
    fit_label,
    format_axes,
    legend_extras,
)
from linbench.report.series import Scenario, impl_series
from linbench.report.styles import SeriesStyle, series_styles

CONTEXT_LABEL = "context length s (tokens prefilled)"


def draw_decode(
    rows: pd.DataFrame,
    scenario: Scenario,
    analysis: Analysis,
    styles: dict[tuple[str, str], SeriesStyle] | None = None,
) -> Figure:
    """The three panels of ``scenario`` (a decode scenario along the length); each decoder's
    look from ``styles`` (the run's; by default those of ``rows``)."""
    figure = Figure(figsize=(17.0, 5.6), layout="constrained")
    axes = figure.subplots(1, 3)
    styles = styles or series_styles(rows)
    crossings = [c for c in analysis.crossovers if c.scenario == scenario]
    for ax, metric in zip(axes, decode_metrics().values(), strict=True):
        fitted = {(f.variant, f.impl): f for f in analysis.fits
                  if f.scenario == scenario and f.metric == metric.name}  # fmt: skip
        for variant, impl, series in impl_series(rows):
            label = f"{variant}:{impl}"
            if (variant, impl) in fitted:
                label += fit_label(fitted[(variant, impl)], "s")
            draw_series(ax, series, "seq", metric, label, styles[(variant, impl)])
        slopes = draw_reference_slopes(ax, rows, "seq", metric, "s", powers=(0, 1))
        timed = metric.name == "time"
        draw_crossovers(ax, rows, crossings if timed else [], styles)
        strip = draw_failures(ax, rows, "seq", styles)
        format_axes(ax, rows, "seq", metric, "seq")
        ax.set_xlabel(CONTEXT_LABEL)
        ax.set_title(metric.title, fontsize=11, loc="left", pad=6.0 + strip)
        _legend_below(ax, rows, crossings if timed else [], styles, slopes)
    device = scenario.get("device_name") or scenario.get("device")
    figure.suptitle(
        f"Decoding: memory and time per generated token against context\n{device} · {scenario.label()}",
        fontsize=12,
        x=0.01,
        horizontalalignment="left",
    )
    return figure


def _legend_below(
    ax: Axes,
    rows: pd.DataFrame,
    crossings: list,
    styles: dict[tuple[str, str], SeriesStyle],
    slopes: list[tuple[str, object]],
) -> None:
    handles, labels = ax.get_legend_handles_labels()
    extra = legend_extras(rows, crossings, styles, slopes)
    handles, labels = [*handles, *(h for h, _ in extra)], [*labels, *(text for _, text in extra)]
    ax.legend(handles, labels, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), frameon=False)
