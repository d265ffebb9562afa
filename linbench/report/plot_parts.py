"""The pieces every figure is drawn from: metrics, series with their spread, crossovers,
failures in a strip above the plot, and log axes (the reference slopes: plot_slopes.py).

Each series' colour, line style and marker come from styles.py (a hue and a marker per impl,
a line style per variant); the same impl looks the same in every figure of a run.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator
from matplotlib.transforms import ScaledTranslation, blended_transform_factory

from linbench.report.analysis import Crossover, FitResult
from linbench.report.fit import FLAT, NONE, quality_text
from linbench.report.series import ALLOC_COLUMN
from linbench.report.styles import SeriesStyle
from linbench.report.ticks import ReadableLogLocator
from linbench.units import format_bytes, format_ms, format_size

AXIS_LABEL = {
    "seq": "sequence length s (tokens)",
    "dim": "head dimension d",
    "batch": "batch size B",
    "heads": "heads H",
    "chunk": "chunk size C (tokens)",
}
AXIS_SYMBOL = {"seq": "s", "dim": "d", "batch": "B", "heads": "H", "chunk": "C"}
# The reference slopes of each axis: O(x) and O(x²) in length and head dim; in batch and heads,
# which any attention is linear in, O(B) and O(1), the line a launch-bound kernel stays on
# (the chunk axis draws none: plot.py).
SLOPE_POWERS = {"seq": (1, 2), "dim": (1, 2), "batch": (0, 1), "heads": (0, 1), "chunk": (0, 1)}


@dataclass(frozen=True)
class Metric:
    name: str
    column: str
    label: str
    title: str
    formatter: Callable[[float], str]


def metrics(device_type: str, memory_column: str = "peak_bytes") -> dict[str, Metric]:
    """The panels of a run figure; ``memory_column``: the rows' memory figure (series.memory_column)."""
    gpu = device_type != "cpu"
    allocated = memory_column == ALLOC_COLUMN
    memory_label = "peak of torch's live allocations above the inputs" if allocated else "peak memory above the inputs"
    rate_unit, rate_scale = ("TFLOP/s", 1.0) if gpu else ("GFLOP/s", 1000.0)
    return {
        "time": Metric("time", "time_ms", "time per call (median; bars p20–p80)", "Time", format_ms),
        "memory": Metric("memory", memory_column, memory_label, "Peak memory", tick_bytes),
        "throughput": Metric(
            "throughput",
            "tflops",
            f"achieved {rate_unit} (the variant's FLOP formula)",
            "Throughput",
            lambda v: f"{v * rate_scale:.3g}",
        ),
    }


def decode_metrics(device_type: str = "cuda") -> dict[str, Metric]:
    """The three panels of a decode figure, left to right. On CPU a step's peak is peak RSS,
    counted in whole pages: the panel says so."""
    cpu = device_type == "cpu"
    peak = (
        "peak RSS of one step above the state (whole 4 KiB pages)" if cpu else "peak memory of one step above the state"
    )
    return {
        "state": Metric("state", "state_bytes", "bytes the decoder's state holds", "State held", tick_bytes),
        "memory": Metric(
            "memory", "peak_bytes", peak, "Peak RSS of one step" if cpu else "Peak of one step", tick_bytes
        ),
        "time": Metric(
            "time", "time_ms", "time per generated token (median; bars p20–p80)", "Time per token", format_ms
        ),
    }


def fit_label(fit: FitResult, symbol: str, busy: bool = False) -> str:
    """What a legend entry says of an impl's fit, with what backs it: `` ∝ s^1.02 (R² 0.999, 5
    points)`` (`` from 16k`` when the shorter points were left out as overhead-bound), ``flat (∝
    s^0.00, 11 points)``, `` ∝ s^2.16 (2 points only)`` or ``no power law found (7 points)``; a
    flat fit reads 0.00, never -0.00. A law on too few points, or on times from a busy machine
    (``busy``), says so (linbench/report/fit.py quality_text)."""
    exponent = None if fit.exponent is None else f"{round(fit.exponent, 2) + 0.0:.2f}"
    quality = quality_text(fit.law, fit.r2, fit.points, busy)
    if fit.law == NONE or exponent is None:
        return f"  no power law found ({quality})"
    power = rf"$\propto {symbol}^{{{exponent}}}$"
    if fit.law == FLAT:
        return f"  flat ({power}, {quality})"
    start = f" from {format_size(fit.x_min) if fit.axis == 'seq' else fit.x_min}" if fit.left_out else ""
    return f"  {power}{start} ({quality})"


def tick_bytes(value: float) -> str:
    """4 GiB, 96 MiB, 1.25 MiB: three significant digits at most, no trailing zeros."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{value:.3g} {unit}"
        value /= 1024
    return format_bytes(value)  # unreachable: GiB ends the loop


def _values(series: pd.DataFrame, x: str, metric: Metric) -> pd.DataFrame:
    ok = series[(series["status"] == "ok") & series[metric.column].notna() & (series[metric.column] > 0)]
    return ok.sort_values(x)


def draw_series(ax: Axes, series: pd.DataFrame, x: str, metric: Metric, label: str, style: SeriesStyle) -> None:
    ok = _values(series, x, metric)
    if ok.empty:
        return
    colour = style.colour
    ax.plot(
        ok[x],
        ok[metric.column],
        linestyle=style.linestyle,
        marker=style.marker,
        color=colour,
        label=label,
        linewidth=1.6,
        markersize=5,
    )
    if metric.name == "time" and ok["time_ms_p20"].notna().all():
        below = (ok["time_ms"] - ok["time_ms_p20"]).clip(lower=0)
        above = (ok["time_ms_p80"] - ok["time_ms"]).clip(lower=0)
        ax.errorbar(ok[x], ok["time_ms"], yerr=[below, above], fmt="none", ecolor=colour, elinewidth=1, capsize=2)


SLOPE_COLOUR = "#999999"  # the reference slopes (plot_slopes.py), here for the legend
# A line's dashes as matplotlib takes them: (offset, (on, off, on, off, ...)) in points.
Dashes = tuple[float, tuple[float, ...]]
# The log axes' margins, as shares of the data's range: below and above it.
MARGIN = 0.05


def set_length_limits(ax: Axes, rows: pd.DataFrame, x: str) -> None:
    """Every length of the run, ok or not, with the log margin either side."""
    lo, hi = math.log(float(rows[x].min())), math.log(float(rows[x].max()))
    pad = MARGIN * ((hi - lo) or 1.0)
    ax.set_xlim(math.exp(lo - pad), math.exp(hi + pad))


def draw_crossovers(
    ax: Axes, rows: pd.DataFrame, crossings: list[Crossover], styles: dict[tuple[str, str], SeriesStyle]
) -> None:
    """A star where each impl starts to stay faster than the fastest softmax impl; what it
    means is said in the legend (``legend_extras``), where no caption can cover a line."""
    for crossing in crossings:
        if crossing.seq is None:
            continue
        point = rows[
            (rows["variant"] == crossing.variant)
            & (rows["impl"] == crossing.impl)
            & (rows["seq"] == crossing.seq)
            & (rows["status"] == "ok")
        ]
        if point.empty:
            continue
        ax.plot(
            [crossing.seq],
            [float(point["time_ms"].iloc[0])],
            marker="*",
            markersize=15,
            color=styles[(crossing.variant, crossing.impl)].colour,
            markeredgecolor="black",
            linestyle="none",
            zorder=5,
        )


# The strip of points that were not ok, above the plot, in points: the gap above the axes, and
# one lane per impl: a row of markers with the statuses written above them.
FAILURE_GAP = 5.0
FAILURE_MARKER = 7.0
FAILURE_LANE = 21.0
TITLE_PAD = 6.0  # points between a title and what is under it (the strip of failures, or the plot)


def draw_failures(ax: Axes, rows: pd.DataFrame, x: str, styles: dict[tuple[str, str], SeriesStyle]) -> float:
    """Points that were not ok, in a strip above the plot: one lane per impl, with the impl's own
    marker, hollow, at each length it failed at, and over the markers what happened, in order of
    length (``oom 32k · skipped 64k–1m``). Returns the strip's height in points, which the title
    must clear.

    Above the axes, nothing here can cover a measured point, a reference slope or its label; the
    lanes are stacked, and each lane's text sits over its own markers, kept within the plot's width
    (from the first marker rightwards when the lane starts in the left half, else ending at the
    last marker), so no two texts share a place."""
    failed = rows[rows["status"] != "ok"].sort_values(x)
    if failed.empty:
        return 0.0
    lanes = list(dict.fromkeys(zip(failed["variant"], failed["impl"], strict=True)))
    lengths = rows[x].astype(float)
    lo, hi = math.log(lengths.min()), math.log(lengths.max())
    base = blended_transform_factory(ax.transData, ax.transAxes)  # x in data, y in axes fraction
    for n, lane in enumerate(lanes):
        series = failed[(failed["variant"] == lane[0]) & (failed["impl"] == lane[1])]
        xs = [float(v) for v in series[x]]
        # The lane's height above the axes, in points (1/72 inch): offset_copy's own sum, which
        # takes a figure or a subfigure alike.
        rise = (FAILURE_GAP + n * FAILURE_LANE + FAILURE_MARKER / 2) / 72
        row = base + ScaledTranslation(0, rise, ax.figure.dpi_scale_trans)
        colour = styles[lane].colour
        ax.plot(
            xs,
            [1.0] * len(xs),
            transform=row,
            linestyle="none",
            marker=styles[lane].marker,
            markersize=FAILURE_MARKER,
            fillstyle="none",
            markeredgewidth=1.5,
            color=colour,
            clip_on=False,
            gid=f"not ok: {lane[0]}:{lane[1]}",
        )
        starts_left = math.log(xs[0]) - lo <= (hi - lo) / 2
        ax.annotate(
            _status_runs(series, x),
            (xs[0] if starts_left else xs[-1], 1.0),
            xycoords=row,
            xytext=(-FAILURE_MARKER / 2 if starts_left else FAILURE_MARKER / 2, FAILURE_MARKER / 2 + 1),
            textcoords="offset points",
            ha="left" if starts_left else "right",
            va="bottom",
            fontsize=7,
            color=colour,
            annotation_clip=False,
        )
    return FAILURE_GAP + len(lanes) * FAILURE_LANE


def _status_runs(series: pd.DataFrame, x: str) -> str:
    """``oom 32k · skipped 64k–1m``: each run of equal statuses with the lengths it covers."""
    size = (lambda v: format_size(round(v))) if x == "seq" else (lambda v: str(round(v)))
    runs: list[tuple[str, float, float]] = []
    for status, length in zip(series["status"], series[x].astype(float), strict=True):
        if runs and runs[-1][0] == status:
            runs[-1] = (status, runs[-1][1], length)
        else:
            runs.append((status, length, length))
    return " · ".join(f"{status} {size(a)}" + (f"–{size(b)}" if b != a else "") for status, a, b in runs)


def format_axes(ax: Axes, rows: pd.DataFrame, x: str, metric: Metric, axis: str) -> None:
    ax.set_xscale("log", base=2)
    binary = metric.column in (
        "peak_bytes",
        ALLOC_COLUMN,
        "state_bytes",
    )  # bytes read best at powers of two: 1, 4, 16 MiB
    ax.set_yscale("log", base=2 if binary else 10)
    ax.yaxis.set_major_locator(ReadableLogLocator(binary=binary))  # labelled however short the span
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
    set_length_limits(ax, rows, x)


def legend_extras(
    rows: pd.DataFrame,
    crossings: list[Crossover],
    styles: dict[tuple[str, str], SeriesStyle],
    slopes: Sequence[tuple[str, Dashes]] = (),
) -> list[tuple[Line2D, str]]:
    """Legend entries for what is drawn but is not an impl: each reference slope by its dashes
    and the point it starts from (``slopes``, from ``draw_reference_slopes``), crossovers (one
    per star, in the impl's colour from ``styles``), failures."""
    extras = [(Line2D([], [], linestyle=dashes, color=SLOPE_COLOUR), text) for text, dashes in slopes]
    for crossing in crossings:
        if crossing.seq is None:
            continue
        style = styles.get((crossing.variant, crossing.impl))
        star = Line2D([], [], marker="*", markersize=12, color=style.colour if style else "#bbbbbb",
                      markeredgecolor="black", linestyle="none")  # fmt: skip
        where = ("≤ " if crossing.at_shortest else "") + format_size(crossing.seq)
        text = f"{crossing.variant}:{crossing.impl} beats {crossing.baseline} from {where}"
        extras.append((star, text + " on"))
    if (rows["status"] != "ok").any():
        hollow = Line2D([], [], marker="o", fillstyle="none", color="#555555", linestyle="none")
        extras.append((hollow, "not ok: " + ", ".join(_failed_statuses(rows)) + " (above the plot)"))
    return extras


def _failed_statuses(rows: pd.DataFrame) -> list[str]:
    return sorted(set(rows["status"]) - {"ok"})
