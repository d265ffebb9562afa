"""Reference slopes: O(x^p) lines from a measured point, each labelled beside its line where
the label covers no measured point, no line and no other label."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from linbench.report.plot_parts import MARGIN, SLOPE_COLOUR, Dashes, Metric, set_length_limits
from linbench.units import format_size

SLOPE_TEXT = {0: "O(1)", 1: "O({})", 2: "O({}²)"}
# Each slope's dashes, its own so that the legend tells the slopes apart where a label found no
# free place beside its line.
SLOPE_DASHES: dict[int, Dashes] = {0: (0, (1, 2)), 1: (0, (4, 3)), 2: (0, (7, 2, 1, 2))}  # dotted, dashed, dash-dot
# The headroom added above the data for the slope labels, as a share of the data's range: they
# must stay inside the plot, under the strip of failures.
HEADROOM = 0.08
# A slope label's box in points: its text (9 pt, ~0.62 em a character), and its gaps to the line
# (the nearest tried first).
LABEL_EM = 0.62 * 9
LABEL_HEIGHT = 12.0
LABEL_GAPS = (4.0, 10.0)
MARKER_RADIUS = 3.0
# Where along its line a label is tried, as shares of the way from its start: the end first.
LABEL_SHARES = tuple(1.0 - 0.05 * n for n in range(20))


def draw_reference_slopes(
    ax: Axes,
    rows: pd.DataFrame,
    x: str,
    metric: Metric,
    symbol: str,
    powers: tuple[int, ...] = (1, 2),
    floor: float = 0.0,
) -> list[tuple[str, Dashes]]:
    """O(x^p) for each power (O(x) and O(x²) by default) from a measured point: the lowest
    value at the smallest size (the fastest impl there, or the one holding least memory), so
    that each slope reads against that impl and its neighbours rather than floating between
    them; values at or below ``floor`` (below what the measurement resolves) start no slope
    while another value there is above it. Each is drawn in dashes of its own and labelled
    beside its line where the label covers no measured point, no line and no other label (see
    ``_place_labels``). Returns each slope's legend text (``O(s) reference from cosine:kernel at
    1k``) and dashes, for the legend (``legend_extras``), which names them all, so that a slope
    whose label found no free place is still told apart.

    Call it after the series are drawn: it fixes the y range (the data and slopes, with room
    above for the labels), which the labels' places depend on."""
    ok = rows[(rows["status"] == "ok") & rows[metric.column].notna() & (rows[metric.column] > 0)]
    if ok[x].nunique() < 2:
        return []
    x0, x1 = float(ok[x].min()), float(ok[x].max())
    at_start = ok[ok[x] == x0]
    if (at_start[metric.column] > floor).any():
        at_start = at_start[at_start[metric.column] > floor]
    anchor = at_start.iloc[int(np.argmin(at_start[metric.column].astype(float).to_numpy()))]
    y0 = float(anchor[metric.column])
    where = format_size(round(x0)) if x == "seq" else str(round(x0))
    source = f"from {anchor['variant']}:{anchor['impl']} at {where}"
    slopes = []
    for power in powers:
        y1 = y0 * (x1 / x0) ** power
        ax.plot([x0, x1], [y0, y1], linestyle=SLOPE_DASHES[power], color=SLOPE_COLOUR, linewidth=1, zorder=0)
        slopes.append((SLOPE_TEXT[power].format(symbol), [(x0, y0), (x1, y1)]))
    traces = _traces(ok, x, metric)
    values = [y for trace in traces for _, y in trace] + [y for _, line in slopes for _, y in line]
    lo, hi = math.log(min(values)), math.log(max(values))
    span = (hi - lo) or 1.0
    ax.set_ylim(math.exp(lo - MARGIN * span), math.exp(hi + (MARGIN + HEADROOM) * span))
    set_length_limits(ax, rows, x)
    _place_labels(ax, slopes, traces)
    return [
        (f"{text} reference {source}", SLOPE_DASHES[power]) for (text, _), power in zip(slopes, powers, strict=True)
    ]


def _traces(ok: pd.DataFrame, x: str, metric: Metric) -> list[list[tuple[float, float]]]:
    """What the figure draws of each impl, as (x, y) points: its line, and its p20–p80 bars."""
    traces = []
    for _, series in ok.groupby(["variant", "impl"], sort=False):
        series = series.sort_values(x)
        traces.append(list(zip(series[x].astype(float), series[metric.column].astype(float), strict=True)))
        if metric.name == "time" and series["time_ms_p20"].notna().all():
            for column in ("time_ms_p20", "time_ms_p80"):
                bars = zip(series[x].astype(float), series[column].astype(float), strict=True)
                traces += [[(bx, by)] for bx, by in bars if by > 0]
    return traces


def _place_labels(ax: Axes, slopes: list[tuple[str, list[tuple[float, float]]]], traces: list) -> None:
    """Each slope's label beside its line, at the first free place: from the line's end down to
    its start, above and left of a point on it, below and right (the sides a rising line leaves
    free), then above and right, below and left, nearest the line first. A place is free when
    its box, inside the plot, holds no point or line of the data or of any slope (its own too) and
    meets no label placed before. A slope with no free place gets no label on the plot (the legend names
    it by its dashes). Boxes are reckoned in points from the axes' size and limits (the data's
    places do not move after this)."""
    figure = ax.figure  # a figure or a subfigure: its size in points from its pixels and dpi
    box, points = ax.get_position(), 72 / figure.dpi
    width, height = box.width * figure.bbox.width * points, box.height * figure.bbox.height * points
    (x_lo, x_hi), (y_lo, y_hi) = (tuple(map(math.log, ax.get_xlim())), tuple(map(math.log, ax.get_ylim())))

    def at(px: float, py: float) -> tuple[float, float]:
        return (math.log(px) - x_lo) / (x_hi - x_lo) * width, (math.log(py) - y_lo) / (y_hi - y_lo) * height

    def sampled(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
        spots = [at(*points[0])]
        for a, b in itertools.pairwise(points):
            (sx, sy), (ex, ey) = at(*a), at(*b)
            steps = max(1, int(math.hypot(ex - sx, ey - sy) / 3))  # a spot every 3 points of line
            spots += [(sx + (ex - sx) * k / steps, sy + (ey - sy) * k / steps) for k in range(1, steps + 1)]
        return spots

    data = [spot for trace in traces for spot in sampled(trace)]
    lines = {text: sampled(line) for text, line in slopes}
    taken: list[tuple[float, float, float, float]] = []
    for text, line in slopes:
        (sx, sy), (ex, ey) = at(*line[0]), at(*line[1])
        w = LABEL_EM * len(text)
        others = np.array(data + [spot for spots in lines.values() for spot in spots])  # its own line too
        for gap, share in itertools.product(LABEL_GAPS, LABEL_SHARES):
            px, py = sx + (ex - sx) * share, sy + (ey - sy) * share
            sides = (
                ((px - gap - w, py + gap, px - gap, py + gap + LABEL_HEIGHT), "right", "bottom"),  # above, left
                ((px + gap, py - gap - LABEL_HEIGHT, px + gap + w, py - gap), "left", "top"),  # below, right
                ((px + gap, py + gap, px + gap + w, py + gap + LABEL_HEIGHT), "left", "bottom"),  # above, right
                ((px - gap - w, py - gap - LABEL_HEIGHT, px - gap, py - gap), "right", "top"),  # below, left
            )
            chosen = next(((b, ha, va) for b, ha, va in sides if _free(b, others, taken, width, height)), None)
            if chosen is not None:
                (left, bottom, right, top), ha, va = chosen
                taken.append(chosen[0])
                tx, ty = (right if ha == "right" else left), (bottom if va == "bottom" else top)
                ax.text(tx / width, ty / height, text, transform=ax.transAxes, color="#777777", fontsize=9,
                        ha=ha, va=va)  # fmt: skip
                break


def _free(box: tuple[float, float, float, float], spots: np.ndarray, taken: list, width: float, height: float) -> bool:
    left, bottom, right, top = box
    if left < 0 or bottom < 0 or right > width or top > height:
        return False
    near = MARKER_RADIUS  # a spot is a line's or a marker's centre: keep clear of the marker too
    if len(spots):
        xs, ys = spots[:, 0], spots[:, 1]
        if ((xs >= left - near) & (xs <= right + near) & (ys >= bottom - near) & (ys <= top + near)).any():
            return False
    return not any(left < r and l < right and bottom < t and b < top for l, b, r, t in taken)  # noqa: E741
