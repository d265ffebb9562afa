"""The speedup figure: at each length, the time of the fastest softmax impl there over each
other impl's time, against the length, on log axes, with a line at 1×.

Above the line an impl is faster than every softmax impl of the run at that length. The fastest
softmax impl can change with the length (a naive form wins at short lengths, SDPA later); a
footnote under the axes names which one each length was measured against, and the lengths where
no softmax impl ran ok, which have no speedup. Softmax impls within noise of the fastest (their
p20–p80 spread, or their processes' range, reaches the fastest's) are named together, ``sdpa ≈
sdpa-flash``: on CPU these two are the same kernel, and which of them is faster flips with the
noise from length to length. Each impl's legend entry gives its speedup at the longest length it
and a softmax impl both reached, as ``linbench report`` does, and a star marks where it starts to
stay faster (its crossover).
"""

from __future__ import annotations

import math
import textwrap

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

from linbench.report.analysis import Analysis, fastest_baseline
from linbench.report.plot_parts import (
    AXIS_LABEL,
    MARGIN,
    TITLE_PAD,
    draw_failures,
    legend_extras,
    set_length_limits,
)
from linbench.report.series import Scenario, impl_name, impl_series, ok_points
from linbench.report.styles import SeriesStyle, series_styles
from linbench.report.ticks import ReadableLogLocator
from linbench.units import format_size

PARITY_COLOUR = "#555555"
# The footnote under the axes: its font size, its distance below the axes' bottom edge (under
# the tick labels and the axis label), and its width in characters (about the axes' width).
NOTE_SIZE = 8.0
NOTE_BELOW = 42.0
NOTE_CHARACTERS = 125


def speedup_curves(rows: pd.DataFrame, baselines: set[str]) -> dict[tuple[str, str], list[tuple[int, float]]]:
    """(length, speedup) of every impl that is not a baseline, at the lengths where it and a
    baseline both ran ok: the fastest baseline's time there over the impl's."""
    best = fastest_baseline(rows, baselines)
    curves: dict[tuple[str, str], list[tuple[int, float]]] = {}
    for variant, impl, series in impl_series(rows):
        if impl_name(variant, impl) in baselines:
            continue
        times = {int(seq): ms for seq, ms in ok_points(series, "seq", "time")}
        points = [(seq, best[seq][0] / times[seq]) for seq in sorted(times) if seq in best and times[seq] > 0]
        if points:
            curves[(variant, impl)] = points
    return curves


def draw_speedup(
    rows: pd.DataFrame,
    scenario: Scenario,
    analysis: Analysis,
    baselines: set[str],
    styles: dict[tuple[str, str], SeriesStyle] | None = None,
    busy: str | None = None,
) -> Figure | None:
    """The speedup figure of ``scenario`` (along the length), or None when there is nothing to
    compare: no softmax baseline ran ok, or no other impl shares a length with one. Each impl's
    look comes from ``styles`` (the run's; by default those of ``rows``); ``busy`` (from
    ``busy_line``) ends the title."""
    curves = speedup_curves(rows, baselines)
    if not curves:
        return None
    best = fastest_baseline(rows, baselines)
    styles = styles or series_styles(rows)
    crossings = {(c.variant, c.impl): c for c in analysis.crossovers if c.scenario == scenario}
    figure = Figure(figsize=(9.5, 6.0))
    ax = figure.add_subplot()
    ax.axhline(1.0, color=PARITY_COLOUR, linewidth=1.2, zorder=1, label="1×: as fast as the fastest softmax impl")
    for (variant, impl), points in curves.items():
        style = styles[(variant, impl)]
        label = f"{variant}:{impl}"
        crossing = crossings.get((variant, impl))
        if crossing is not None:
            label += f"  {crossing.speedup:.3g}× at {format_size(crossing.speedup_seq)}"
        xs, ys = zip(*points, strict=True)
        ax.plot(xs, ys, linestyle=style.linestyle, marker=style.marker, color=style.colour, label=label,
                linewidth=1.6, markersize=5, zorder=3)  # fmt: skip
        at = dict(points)
        if crossing is not None and crossing.seq in at:
            ax.plot([crossing.seq], [at[crossing.seq]], marker="*", markersize=15, color=style.colour,
                    markeredgecolor="black", linestyle="none", zorder=5)  # fmt: skip
    drawn = rows[_of(rows, curves)]
    strip = draw_failures(ax, drawn, "seq", styles)
    _format_axes(ax, rows, [y for points in curves.values() for _, y in points])
    device = scenario.get("device_name") or scenario.get("device")
    ax.set_title(
        f"Speedup over the fastest softmax impl against {AXIS_LABEL['seq'].split(' (')[0]}\n"
        f"{device} · {scenario.label()}" + (f"\n{busy}" if busy else ""),
        fontsize=11,
        loc="left",
        pad=TITLE_PAD + strip,
    )
    handles, labels = ax.get_legend_handles_labels()
    extra = legend_extras(drawn, [c for c in crossings.values() if (c.variant, c.impl) in curves], styles)
    handles, labels = [*handles, *(h for h, _ in extra)], [*labels, *(text for _, text in extra)]
    ax.legend(handles, labels, fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    _footnote(ax, " ".join(_baseline_notes(rows, best, baselines, curves)))
    return figure


def _footnote(ax: Axes, text: str) -> None:
    """``text`` under the axes, wrapped to their width: long notes grow the figure downwards,
    never sideways."""
    ax.annotate(
        textwrap.fill(text, NOTE_CHARACTERS),
        (0.0, 0.0),
        xycoords="axes fraction",
        xytext=(0.0, -NOTE_BELOW),
        textcoords="offset points",
        ha="left",
        va="top",
        fontsize=NOTE_SIZE,
        color="#444444",
        gid="baseline note",
        annotation_clip=False,
    )


def _format_axes(ax, rows: pd.DataFrame, values: list[float]) -> None:
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.xaxis.set_major_locator(FixedLocator(sorted(set(rows["seq"].astype(int)))))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: format_size(round(v))))
    ax.yaxis.set_major_locator(ReadableLogLocator())
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.3g}×"))
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
    lo, hi = math.log(min([*values, 1.0])), math.log(max([*values, 1.0]))
    span = (hi - lo) or math.log(2.0)
    ax.set_ylim(math.exp(lo - MARGIN * span), math.exp(hi + MARGIN * span))
    set_length_limits(ax, rows, "seq")
    ax.set_xlabel(AXIS_LABEL["seq"])
    ax.set_ylabel("speedup (the fastest softmax impl's time / the impl's)")
    ax.grid(True, which="major", alpha=0.3)
    ax.grid(True, which="minor", axis="y", alpha=0.1)


def _baseline_notes(
    rows: pd.DataFrame,
    best: dict[int, tuple[float, str]],
    baselines: set[str],
    curves: dict[tuple[str, str], list[tuple[int, float]]],
) -> list[str]:
    """Which softmax impl each length was measured against (``Fastest softmax impl: softmax:naive
    at 1k; softmax:sdpa ≈ sdpa-flash at 2k–64k.``), and the lengths where an impl ran ok but no
    softmax impl did."""
    groups = tied_baselines(rows, baselines, best)
    runs: list[tuple[str, int, int]] = []
    for seq in sorted(groups):
        name = _tie_text(groups[seq])
        if runs and runs[-1][0] == name:
            runs[-1] = (name, runs[-1][1], seq)
        else:
            runs.append((name, seq, seq))
    spans = "; ".join(f"{name} at {_span(a, b)}" for name, a, b in runs)
    if len(runs) == 1:
        spans = f"{runs[0][0]} at every length"
    notes = [f"Fastest softmax impl: {spans}."]
    if any(len(group) > 1 for group in groups.values()):
        notes.append("≈: within noise of each other (their p20–p80 spreads overlap); the speedup is over the faster.")
    ok = rows[(rows["status"] == "ok") & _of(rows, curves)]
    missing = sorted(set(ok["seq"].astype(int)) - set(best))
    if missing:
        notes.append(f"No softmax impl ok at {', '.join(format_size(seq) for seq in missing)}: no speedup there.")
    return notes


def tied_baselines(rows: pd.DataFrame, baselines: set[str], best: dict[int, tuple[float, str]]) -> dict[int, list[str]]:
    """At each length, the fastest baseline and every baseline within noise of it (its
    p20–p80 spread, widened to its processes' range where several processes measured it,
    reaches the fastest's), in the order the run wrote them, so that the same tie reads the
    same at every length whichever of them was faster there."""
    ok = rows[(rows["status"] == "ok") & rows["time_ms"].notna()]
    ok = ok.assign(name=[impl_name(v, i) for v, i in zip(ok["variant"], ok["impl"], strict=True)])
    ok = ok[ok["name"].isin(baselines)]
    groups: dict[int, list[str]] = {}
    for seq, (_, fastest) in best.items():
        here = ok[ok["seq"] == seq]
        top = _high(here[here["name"] == fastest].iloc[0])
        groups[seq] = [str(row["name"]) for _, row in here.iterrows() if row["name"] == fastest or _low(row) <= top]
    return groups


def _low(row: pd.Series) -> float:
    return min(_times(row, ("time_ms_p20", "time_ms_proc_lo")))


def _high(row: pd.Series) -> float:
    return max(_times(row, ("time_ms_p80", "time_ms_proc_hi")))


def _times(row: pd.Series, columns: tuple[str, ...]) -> list[float]:
    """The median and whichever of ``columns`` the row has (older runs lack the process range)."""
    values = [row.get(column) for column in columns]
    return [float(row["time_ms"]), *(float(v) for v in values if v is not None and not pd.isna(v))]


def _tie_text(names: list[str]) -> str:
    """``softmax:sdpa ≈ sdpa-flash``: the variant said once when the tied impls share it."""
    variants = {name.split(":", 1)[0] for name in names}
    if len(variants) == 1 and len(names) > 1:
        return " ≈ ".join([names[0], *(name.split(":", 1)[1] for name in names[1:])])
    return " ≈ ".join(names)


def _of(rows: pd.DataFrame, curves: dict[tuple[str, str], list[tuple[int, float]]]) -> pd.Series:
    """True for the rows of the impls that have a speedup curve."""
    return pd.Series([(v, i) in curves for v, i in zip(rows["variant"], rows["impl"], strict=True)], index=rows.index)


def _span(a: int, b: int) -> str:
    return format_size(a) if a == b else f"{format_size(a)}–{format_size(b)}"
