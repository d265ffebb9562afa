"""Figures of one run: time, peak memory and throughput against length, the speedup over the
fastest softmax impl (plot_speedup.py), time and memory against head dim, batch and heads where
the run swept them, for a decode run the decode figure (plot_decode.py), and for a pack run
each impl's throughput packed against padded (plot_pack.py).

Every scenario (what the run held fixed, see series.py) gets its own figures: log-log
lines per impl (a hue and a marker of its own, its variant's line style; see styles.py), the
fitted exponent and what backs it in each legend entry, dashed O(x) and O(x²) reference
slopes from the lowest measured point at the smallest size, points that were not ok marked at
their length in a strip above the plot, and crossovers against the fastest softmax impl starred.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure

from linbench.report.analysis import Analysis, analyse
from linbench.report.load import Run
from linbench.report.plot_decode import draw_decode
from linbench.report.plot_load import busy_line
from linbench.report.plot_pack import is_pack_run, pack_figures
from linbench.report.plot_parts import (
    AXIS_LABEL,
    AXIS_SYMBOL,
    SLOPE_POWERS,
    TITLE_PAD,
    Metric,
    draw_crossovers,
    draw_failures,
    draw_series,
    fit_label,
    format_axes,
    legend_extras,
    metrics,
)
from linbench.report.plot_slopes import draw_reference_slopes
from linbench.report.plot_speedup import draw_speedup
from linbench.report.series import (
    AXES,
    Scenario,
    axis_column,
    baseline_names,
    impl_series,
    memory_column,
    scenarios,
)
from linbench.report.styles import SeriesStyle, series_styles

FORMATS = ("png", "svg", "pdf")


def figures(run: Run) -> Iterator[tuple[str, Figure]]:
    """Every figure of ``run``, one at a time, with the file name it is saved under (no suffix)."""
    analysis = analyse(run)
    baselines = baseline_names(run.results, run.meta)
    styles = series_styles(run.results)  # the run's: an impl looks the same in all its figures
    busy = busy_line(run.meta)
    if is_pack_run(run.results):  # one pack: no axis to draw along, packed against padded
        yield from pack_figures(run.results, busy)
    for axis in AXES:
        for scenario, rows in scenarios(run.results, axis):
            if scenario.decode and axis == "seq":
                yield f"decode-vs-context_{scenario.slug()}", draw_decode(rows, scenario, analysis, styles, busy)
                continue
            device_type = str(scenario.get("device")).split(":")[0]
            for metric in metrics(device_type, memory_column(rows)).values():
                if axis != "seq" and metric.name == "throughput":
                    continue
                if (rows[metric.column] > 0).any():  # a throughput needs a FLOP formula, a plugin may lack one
                    yield (
                        f"{metric.name}-vs-{axis}_{scenario.slug()}",
                        # A busy machine slows times; a memory figure does not speak of them.
                        draw(rows, scenario, metric, analysis, styles, busy if metric.name != "memory" else None),
                    )
            if axis == "seq" and not scenario.decode:
                speedup = draw_speedup(rows, scenario, analysis, baselines, styles, busy)
                if speedup is not None:
                    yield f"speedup-vs-seq_{scenario.slug()}", speedup


def plot_run(run: Run, out_dir: Path, formats: Iterable[str] = ("png",)) -> list[Path]:
    """Draw every figure of ``run`` into ``out_dir``; the paths written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for stem, figure in figures(run):
        written += _save(figure, out_dir / stem, formats)
    return written


def _save(figure: Figure, stem: Path, formats: Iterable[str]) -> list[Path]:
    paths = []
    for extension in formats:
        path = stem.with_suffix(f".{extension}")
        figure.savefig(path, dpi=130, bbox_inches="tight")
        paths.append(path)
    return paths


def draw(
    rows: pd.DataFrame,
    scenario: Scenario,
    metric: Metric,
    analysis: Analysis,
    styles: dict[tuple[str, str], SeriesStyle] | None = None,
    busy: str | None = None,
) -> Figure:
    """One figure of ``metric`` in ``scenario``; exponents and crossovers come from ``analysis``,
    each impl's look from ``styles`` (the run's; by default those of ``rows``); ``busy`` (from
    ``busy_line``) ends the title."""
    crossings = [c for c in analysis.crossovers if c.scenario == scenario] if metric.name == "time" else []
    fitted = {(f.variant, f.impl): f for f in analysis.fits
              if f.scenario == scenario and f.metric == metric.name}  # fmt: skip
    figure = Figure(figsize=(9.5, 6.0))
    ax = figure.add_subplot()
    axis = scenario.axis
    x = axis_column(axis)
    styles = styles or series_styles(rows)
    for variant, impl, series in impl_series(rows):
        label = f"{variant}:{impl}"
        if (variant, impl) in fitted:
            label += fit_label(fitted[(variant, impl)], AXIS_SYMBOL[axis], busy is not None and metric.name == "time")
        draw_series(ax, series, x, metric, label, styles[(variant, impl)])
    slopes = []
    if metric.name != "throughput" and axis != "chunk":  # time against chunk size follows no power law
        slopes = draw_reference_slopes(ax, rows, x, metric, AXIS_SYMBOL[axis], SLOPE_POWERS[axis])
    draw_crossovers(ax, rows, crossings, styles)
    strip = draw_failures(ax, rows, x, styles)
    format_axes(ax, rows, x, metric, axis)
    device = scenario.get("device_name") or scenario.get("device")
    ax.set_title(
        f"{metric.title} against {AXIS_LABEL[axis].split(' (')[0]}\n{device} · {scenario.label()}"
        + (f"\n{busy}" if busy else ""),
        fontsize=11,
        loc="left",
        pad=TITLE_PAD + strip,
    )
    handles, labels = ax.get_legend_handles_labels()
    extra = legend_extras(rows, crossings, styles, slopes)
    handles, labels = [*handles, *(h for h, _ in extra)], [*labels, *(text for _, text in extra)]
    ax.legend(handles, labels, fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    return figure
