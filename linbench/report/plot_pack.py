"""The figure of a ``linbench run --pack`` run: each impl's throughput packed against padded.

A pack run measures one pack of variable-length sequences, so it has no length axis to draw
along; what it compares is the two ways of running it. One figure per pack and setting
(device, dtype, mode, masking, heads, head dims): a horizontal pair of bars per impl, the
pack's real tokens per second run packed and run padded (``tokens_per_s``, the same tokens
either way), with p20–p80 bars from the time's spread; beside a padded bar, the share of the
tokens it computed that was padding. A point measured oversubscribed (other processes took its
cores) is drawn hatched and the legend says so; a point that did not end ok has no bar and
its status is written where the bar would be.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from linbench.report.series import oversubscribed

# What a pack figure holds fixed, beside the pack itself.
SETTING_COLUMNS = ("device", "dtype", "mode", "causal", "heads", "dim_k", "dim_v")
PACKINGS = ("packed", "padded")
COLOURS = {"packed": "#1f4e99", "padded": "#d9822b"}
BAR_HEIGHT = 0.38


def is_pack_run(results: pd.DataFrame) -> bool:
    """Whether ``results`` holds rows of a pack run (a ``packing`` column that says how)."""
    return "packing" in results.columns and bool(results["packing"].isin(PACKINGS).any())


def pack_figures(results: pd.DataFrame, busy: str | None = None) -> Iterator[tuple[str, Figure]]:
    """A figure per pack and setting, with the file name it is saved under (no suffix)."""
    rows = results[results["packing"].isin(PACKINGS)]
    keys = ["pack", *SETTING_COLUMNS]
    for _, group in rows.groupby(keys, sort=False, dropna=False):
        yield _slug(group.iloc[0]), draw_pack(group, busy)


def _slug(row: pd.Series) -> str:
    masking = "causal" if bool(row["causal"]) else "bidir"
    dims = f"D{int(row['dim_k'])}" + (f"-Dv{int(row['dim_v'])}" if row["dim_v"] != row["dim_k"] else "")
    tokens = str(row["pack"]).rsplit("@", 1)[-1]
    return f"pack-throughput_{row['dtype']}_{row['mode']}_{masking}_H{int(row['heads'])}_{dims}_T{tokens}"


def draw_pack(rows: pd.DataFrame, busy: str | None = None) -> Figure:
    """One pack's figure (module doc): ``rows`` share the pack and the setting."""
    impls = list(dict.fromkeys(f"{v}:{i}" for v, i in zip(rows["variant"], rows["impl"], strict=True)))
    figure = Figure(figsize=(9.5, 1.6 + 0.62 * len(impls)))
    ax = figure.add_subplot()
    crowded, right = False, 0.0
    for position, name in enumerate(impls):
        variant, impl = name.split(":", 1)
        mine = rows[(rows["variant"] == variant) & (rows["impl"] == impl)]
        for offset, packing in zip((-BAR_HEIGHT / 2, BAR_HEIGHT / 2), PACKINGS, strict=True):
            row = mine[mine["packing"] == packing]
            if not row.empty:
                end, was_crowded = _draw_bar(ax, row.iloc[-1], position + offset, packing)
                crowded, right = crowded or was_crowded, max(right, end)
    ax.set_yticks(range(len(impls)), impls)
    ax.invert_yaxis()  # the run's first impl on top
    # A linear axis from 0, so that a bar's length is its rate; room on the right for the labels.
    ax.set_xlim(0, (right or 1.0) * 1.5)
    ax.set_xlabel("real tokens per second (the pack's tokens over the call's time; higher is better)")
    ax.grid(axis="x", alpha=0.3)
    handles = [Patch(color=COLOURS[p], label=p) for p in PACKINGS]
    if crowded:
        handles.append(Patch(facecolor="white", edgecolor="grey", hatch="//", label="measured oversubscribed"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    ax.set_title(_title(rows, busy), fontsize=9, loc="left")
    return figure


def _draw_bar(ax: Axes, row: pd.Series, y: float, packing: str) -> tuple[float, bool]:
    """One bar and its label: (where the bar and its spread end, whether the point was measured
    oversubscribed)."""
    if row["status"] != "ok" or not np.isfinite(row["tokens_per_s"]):
        ax.text(0, y, f" {packing}: {row['status']}", va="center", fontsize=8)
        return 0.0, False
    rate = float(row["tokens_per_s"])
    crowded = bool(oversubscribed(row.to_frame().T).iloc[0])
    spread = _spread(row, rate)
    ax.barh(
        y,
        rate,
        height=BAR_HEIGHT,
        color=COLOURS[packing],
        hatch="//" if crowded else None,
        edgecolor="white",
        xerr=spread,
        ecolor="black",
        capsize=2,
    )
    waste = float(row["padding_waste"]) if packing == "padded" else 0.0
    note = f" {_rate(rate)} tokens/s" + (f", {waste:.0%} padding" if waste > 0 else "")
    end = rate + (spread[1][0] if spread else 0.0)
    ax.text(end, y, note, va="center", fontsize=7)
    return end, crowded


def _rate(rate: float) -> str:
    """``5.27k``, ``1.2M``: three significant digits."""
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if rate >= scale:
            return f"{rate / scale:.3g}{suffix}"
    return f"{rate:.3g}"


def _spread(row: pd.Series, rate: float) -> list[list[float]] | None:
    """The p20–p80 range of the rate, from the time's (a faster time is a higher rate)."""
    low, high, time = (float(row.get(c, np.nan)) for c in ("time_ms_p80", "time_ms_p20", "time_ms"))
    if not all(np.isfinite(v) and v > 0 for v in (low, high, time)):
        return None
    return [[max(rate - rate * time / low, 0.0)], [max(rate * time / high - rate, 0.0)]]


def _title(rows: pd.DataFrame, busy: str | None) -> str:
    first = rows.iloc[0]
    masking = "causal" if bool(first["causal"]) else "bidirectional"
    padded = rows[rows["packing"] == "padded"]
    waste = f", {float(padded['padding_waste'].iloc[0]):.0%} of a padded batch is padding" if len(padded) else ""
    lines = [
        f"Pack {first['pack']}: {int(first['sequences'])} sequences{waste}",
        f"{first['dtype']} {first['mode']} {masking} · H={int(first['heads'])} "
        f"Dk={int(first['dim_k'])} Dv={int(first['dim_v'])} · {first['device']}: packed against padded",
    ]
    return "\n".join([*lines, *([busy] if busy else [])])
