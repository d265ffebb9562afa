"""The pieces every figure is drawn from: metrics, colours and styles per impl, series with
their spread, reference slopes, crossovers, failures along the top edge, and log axes.

Colour is the variant (softmax always dark grey), line style and marker the impl; the same
impl looks the same in every figure of a run.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullLocator

from linbench.report.analysis import Crossover, FitResult
from linbench.report.fit import FLAT, NONE, TWO_POINTS
from linbench.units import format_bytes, format_ms, format_size

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#bcbd22")
BASELINE_COLOUR = "#333333"
LINE_STYLES = ("-", "--", "-.", ":", (0, (5, 1, 1, 1, 1, 1)))
MARKERS = ("o", "s", "^", "D", "v", "P")
AXIS_LABEL = {"seq": "sequence length s (tokens)", "dim": "head dimension d"}
AXIS_SYMBOL = {"seq": "s", "dim": "d"}


@dataclass(frozen=True)
class Metric:
    name: str
    column: str
    label: str
    title: str
    formatter: Callable[[float], str]


def metrics(device_type: str) -> dict[str, Metric]:
    gpu = device_type != "cpu"
    rate_unit, rate_scale = ("TFLOP/s", 1.0) if gpu else ("GFLOP/s", 1000.0)
    return {
        "time": Metric("time", "time_ms", "time per call (median; bars p20–p80)", "Time", format_ms),
        "memory": Metric("memory", "peak_bytes", "peak memory above the inputs", "Peak memory", tick_bytes),
        "throughput": Metric(
            "throughput",
            "tflops",
            f"achieved {rate_unit} (the variant's FLOP formula)",
            "Throughput",
            lambda v, s=rate_scale: f"{v * s:.3g}",
        ),
    }


def decode_metrics() -> dict[str, Metric]:
    """The three panels of a decode figure, left to right."""
    return {
        "state": Metric("state", "state_bytes", "bytes the decoder's state holds", "State held", tick_bytes),
        "memory": Metric(
            "memory", "peak_bytes", "peak memory of one step above the state", "Peak of one step", tick_bytes
        ),
        "time": Metric(
            "time", "time_ms", "time per generated token (median; bars p20–p80)", "Time per token", format_ms
        ),
    }


def fit_label(fit: FitResult, symbol: str) -> str:
    """What a legend entry says of an impl's fit: `` ∝ s^1.02`` (`` from 16k`` when the shorter
    points were left out as overhead-bound), ``flat``, ``2 points`` or ``no power law found``;
    a flat fit reads 0.00, never -0.00."""
    exponent = None if fit.exponent is None else f"{round(fit.exponent, 2) + 0.0:.2f}"
    if fit.law == FLAT:
        return rf"  flat ($\propto {symbol}^{{{exponent}}}$)"
    if fit.law == TWO_POINTS:
        return rf"  $\propto {symbol}^{{{exponent}}}$ (2 points)"
    if fit.law == NONE or exponent is None:
        return "  no power law found"
    start = f" from {format_size(fit.x_min) if fit.axis == 'seq' else fit.x_min}" if fit.left_out else ""
    return rf"  $\propto {symbol}^{{{exponent}}}${start}"


def tick_bytes(value: float) -> str:
    return format_bytes(value).replace(".0 ", " ")  # 4 GiB, not 4.0 GiB


def variant_colours(rows: pd.DataFrame) -> dict[str, str]:
    colours: dict[str, str] = {}
    for variant in dict.fromkeys(rows["variant"]):
        colours[variant] = BASELINE_COLOUR if variant == "softmax" else PALETTE[len(colours) % len(PALETTE)]
    return colours


def impl_styles(rows: pd.DataFrame) -> dict[tuple[str, str], tuple[object, str]]:
    styles: dict[tuple[str, str], tuple[object, str]] = {}
    for variant, group in rows.groupby("variant", sort=False):
        for n, impl in enumerate(dict.fromkeys(group["impl"])):
            styles[(variant, impl)] = (LINE_STYLES[n % len(LINE_STYLES)], MARKERS[n % len(MARKERS)])
    return styles


def _values(series: pd.DataFrame, x: str, metric: Metric) -> pd.DataFrame:
    ok = series[(series["status"] == "ok") & series[metric.column].notna() & (series[metric.column] > 0)]
    return ok.sort_values(x)


def draw_series(ax: Axes, series: pd.DataFrame, x: str, metric: Metric, label: str, colour: str, style: tuple) -> None:
    ok = _values(series, x, metric)
    if ok.empty:
        return
    linestyle, marker = style
    ax.plot(
        ok[x],
        ok[metric.column],
        linestyle=linestyle,
        marker=marker,
        color=colour,
        label=label,
        linewidth=1.6,
        markersize=5,
    )
    if metric.name == "time" and ok["time_ms_p20"].notna().all():
        below = (ok["time_ms"] - ok["time_ms_p20"]).clip(lower=0)
        above = (ok["time_ms_p80"] - ok["time_ms"]).clip(lower=0)
        ax.errorbar(ok[x], ok["time_ms"], yerr=[below, above], fmt="none", ecolor=colour, elinewidth=1, capsize=2)


SLOPE_TEXT = {0: "O(1)", 1: "O({})", 2: "O({}²)"}


def draw_reference_slopes(
    ax: Axes, rows: pd.DataFrame, x: str, metric: Metric, symbol: str, powers: tuple[int, ...] = (1, 2)
) -> None:
    """O(x^p) for each power (O(x) and O(x²) by default) through the geometric mean of the
    impls' values at the smallest size."""
    ok = rows[(rows["status"] == "ok") & rows[metric.column].notna() & (rows[metric.column] > 0)]
    if ok[x].nunique() < 2:
        return
    x0, x1 = float(ok[x].min()), float(ok[x].max())
    at_start = ok[ok[x] == x0][metric.column].astype(float)
    y0 = math.exp(sum(math.log(v) for v in at_start) / len(at_start))
    for power in powers:
        text = SLOPE_TEXT[power].format(symbol)
        y1 = y0 * (x1 / x0) ** power
        ax.plot([x0, x1], [y0, y1], linestyle=(0, (4, 4)), color="#999999", linewidth=1, zorder=0)
        ax.annotate(
            text,
            (x1, y1),
            xytext=(-4, 6),
            textcoords="offset points",
            color="#777777",
            fontsize=9,
            ha="right",
            va="bottom",
        )


def draw_crossovers(ax: Axes, rows: pd.DataFrame, crossings: list[Crossover], colours: dict[str, str]) -> None:
    for n, crossing in enumerate(c for c in crossings if c.seq is not None):
        point = rows[
            (rows["variant"] == crossing.variant)
            & (rows["impl"] == crossing.impl)
            & (rows["seq"] == crossing.seq)
            & (rows["status"] == "ok")
        ]
        if point.empty:
            continue
        y = float(point["time_ms"].iloc[0])
        ax.plot(
            [crossing.seq],
            [y],
            marker="*",
            markersize=15,
            color=colours[crossing.variant],
            markeredgecolor="black",
            linestyle="none",
            zorder=5,
        )
        where = ("≤ " if crossing.at_shortest else "") + format_size(crossing.seq)
        # Stars of several impls often share a length; their captions are stacked in the
        # lower right corner, where the fast impls' lines rarely are, so they never overlap.
        ax.annotate(
            f"{crossing.variant}:{crossing.impl} beats {crossing.baseline} from {where}",
            (crossing.seq, y),
            xytext=(0.99, 0.03 + 0.045 * n),
            textcoords="axes fraction",
            fontsize=8,
            ha="right",
            color=colours[crossing.variant],
        )


def draw_failures(
    ax: Axes, rows: pd.DataFrame, x: str, colours: dict[str, str], styles: dict[tuple[str, str], tuple[object, str]]
) -> None:
    """Points that were not ok: the impl's own marker, hollow, at their length along the top
    edge (one lane per impl), with the status written beside the first of a run of equal ones
    (a row of "skipped skipped ..." at every length would overprint itself)."""
    failed = rows[rows["status"] != "ok"].sort_values(x)
    transform = ax.get_xaxis_transform()  # x in data, y in axes fraction
    lanes = {impl: n for n, impl in enumerate(dict.fromkeys(zip(failed["variant"], failed["impl"], strict=True)))}
    labelled: dict[tuple[str, str], str] = {}
    for row in failed.itertuples(index=False):
        lane = (row.variant, row.impl)
        y = 0.96 - 0.045 * lanes[lane]
        colour = colours[row.variant]
        marker = styles[(row.variant, row.impl)][1]
        ax.plot(
            [getattr(row, x)],
            [y],
            transform=transform,
            linestyle="none",
            marker=marker,
            markersize=8,
            fillstyle="none",
            markeredgewidth=1.6,
            color=colour,
            clip_on=False,
        )
        if labelled.get(lane) == row.status:
            continue
        labelled[lane] = row.status
        ax.annotate(
            row.status,
            (getattr(row, x), y),
            xycoords=transform,
            xytext=(-7, 0),
            textcoords="offset points",
            ha="right",
            va="center",
            fontsize=7,
            color=colour,
        )


def format_axes(ax: Axes, rows: pd.DataFrame, x: str, metric: Metric, axis: str) -> None:
    ax.set_xscale("log", base=2)
    if metric.column in ("peak_bytes", "state_bytes"):
        # Byte counts read best at powers of two: 1 MiB, 4 MiB, 16 MiB...
        ax.set_yscale("log", base=2)
        ax.yaxis.set_major_locator(LogLocator(base=4))
    else:
        ax.set_yscale("log")
    ticks = sorted(set(rows[x].astype(int)))
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: format_size(round(v)) if axis == "seq" else str(round(v))))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: metric.formatter(v)))
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
    ax.set_xlabel(AXIS_LABEL[axis])
    ax.set_ylabel(metric.label)
    ax.grid(True, which="major", alpha=0.3)
    ax.grid(True, which="minor", axis="y", alpha=0.1)


def legend_extras(rows: pd.DataFrame, crossings: list[Crossover], with_slopes: bool) -> list[tuple[Line2D, str]]:
    """Legend entries for what is drawn but is not an impl: slopes, crossovers, failures."""
    extras = []
    if with_slopes:
        extras.append((Line2D([], [], linestyle=(0, (4, 4)), color="#999999"), "reference slopes"))
    if any(c.seq is not None for c in crossings):
        star = Line2D([], [], marker="*", markersize=12, color="#bbbbbb", markeredgecolor="black", linestyle="none")
        extras.append((star, "faster than the fastest softmax from here on"))
    if (rows["status"] != "ok").any():
        hollow = Line2D([], [], marker="o", fillstyle="none", color="#555555", linestyle="none")
        extras.append((hollow, "not ok: " + ", ".join(_failed_statuses(rows)) + " (top edge)"))
    return extras


def _failed_statuses(rows: pd.DataFrame) -> list[str]:
    return sorted(set(rows["status"]) - {"ok"})
