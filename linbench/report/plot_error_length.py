"""The error-against-length figure: each impl's output error against the fp64 answer, on log
axes against the sequence length, a panel per variant; colour says the impl, the line's
dash the dtype (``linbench check --seq``, linbench/check/accuracy.py).

A dtype's floor is its unit roundoff (fp32 2^-24, bf16 2^-8, fp16 2^-11), drawn as a grey
line: an impl near it rounds as well as the dtype allows, and one whose error climbs with the
length accumulates it (a long sum kept in the dtype, a state that grows).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from matplotlib.figure import Figure

UNIT_ROUNDOFF = {"fp32": 2.0**-24, "bf16": 2.0**-8, "fp16": 2.0**-11}
DASHES = {"fp32": "-", "bf16": "--", "fp16": ":"}
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")
METRICS = {"rel_err": "max |a − e| / RMS(e)", "normwise_err": "‖a − e‖ / ‖e‖"}


def draw_error_length(rows: Iterable[Mapping[str, Any]], metric: str = "rel_err") -> Figure:
    """One panel per variant: ``metric`` (rel_err or normwise_err) against seq, a line per
    impl and dtype; rows without a number (an impl that could not run) are left out."""
    measured = [row for row in rows if _number(row.get(metric)) is not None]
    variants = list(dict.fromkeys(str(row["variant"]) for row in measured))
    figure = Figure(figsize=(6.0 * max(len(variants), 1), 4.8), layout="constrained")
    axes = figure.subplots(1, max(len(variants), 1), squeeze=False)[0]
    impls = list(dict.fromkeys(str(row["impl"]) for row in measured))
    colour = {impl: COLOURS[i % len(COLOURS)] for i, impl in enumerate(impls)}
    for ax, variant in zip(axes, variants, strict=False):
        mine = [row for row in measured if row["variant"] == variant]
        for impl, dtype in dict.fromkeys((str(r["impl"]), str(r["dtype"])) for r in mine):
            line = sorted((int(r["seq"]), float(r[metric])) for r in mine if (r["impl"], r["dtype"]) == (impl, dtype))
            xs, ys = zip(*line, strict=True)
            ax.plot(xs, ys, DASHES.get(dtype, "-"), marker="o", color=colour[impl], label=f"{impl} {dtype}")
        for dtype in dict.fromkeys(str(r["dtype"]) for r in mine):
            if dtype in UNIT_ROUNDOFF:
                ax.axhline(UNIT_ROUNDOFF[dtype], color="#999999", linestyle=DASHES[dtype], linewidth=0.8)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(f"{variant}: output error against the fp64 answer")
        ax.set_xlabel("sequence length s (tokens)")
        ax.set_ylabel(METRICS.get(metric, metric))
        ax.grid(True, which="major", alpha=0.3)
        # Below the panel: the lines fill the panel's whole height at one length or another.
        ax.legend(
            fontsize="small",
            title="impl, dtype (grey: unit roundoff)",
            title_fontsize="small",
            loc="upper center",
            bbox_to_anchor=(0.5, -0.14),
            ncol=min(3, max(len(ax.get_lines()) - 1, 1)),
            frameon=False,
        )
    return figure


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if number == number and number > 0 else None  # NaN and exact zeros have no log
