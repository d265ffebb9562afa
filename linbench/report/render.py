"""An Analysis as tables: one per scenario, built once and drawn as rich or markdown."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

from rich.markup import escape
from rich.table import Table

from linbench.report.analysis import Analysis, Crossover, FitResult, Reach, Speedup
from linbench.report.fit import FLAT, NONE, quality_text
from linbench.report.series import AXES, Scenario
from linbench.units import format_size

AXIS_SYMBOL = {"seq": "s", "dim": "d", "batch": "B", "heads": "H"}
AXIS_NAME = {"seq": "sequence length", "dim": "head dimension", "batch": "batch size", "heads": "heads"}
# The fitted metrics of each kind of scenario, and their column headings.
RUN_METRICS = {"time": "time ∝", "memory": "memory ∝"}
DECODE_METRICS = {"time": "time/token ∝", "state": "state ∝", "memory": "step peak ∝"}


@dataclass
class ReportTable:
    title: str
    columns: list[str]
    rows: list[list[str]]


def report_tables(analysis: Analysis, busy: bool = False) -> list[ReportTable]:
    """A table per scenario: scaling in length (with crossovers and reach), then in head dim,
    batch and heads where the run swept them. ``busy``: the run measured on a busy machine, which
    every time fit says."""
    fits: dict[Scenario, dict[tuple[str, str], dict[str, FitResult]]] = defaultdict(lambda: defaultdict(dict))
    for fit in analysis.fits:
        fits[fit.scenario][(fit.variant, fit.impl)][fit.metric] = fit
    crossings = {(c.scenario, c.variant, c.impl): c for c in analysis.crossovers}
    reach = {(r.scenario, r.variant, r.impl): r for r in analysis.reach}
    scenario_impls: dict[Scenario, list[tuple[str, str]]] = defaultdict(list)
    items: list[Reach | FitResult] = [*analysis.reach, *analysis.fits]
    for item in items:
        key = (item.variant, item.impl)
        if key not in scenario_impls[item.scenario]:
            scenario_impls[item.scenario].append(key)
    tables = []
    for scenario in sorted(scenario_impls, key=lambda s: (AXES.index(s.axis), [v for _, v in s.fixed])):
        impls = scenario_impls[scenario]
        metrics = DECODE_METRICS if scenario.decode else RUN_METRICS
        if scenario.axis == "seq":
            rows = [
                _seq_row(
                    v,
                    i,
                    _fit_cells(fits[scenario][(v, i)], metrics, busy),
                    crossings.get((scenario, v, i)),
                    reach.get((scenario, v, i)),
                )
                for v, i in impls
            ]
            extra = ["faster than softmax from", "speedup", "longest ok"]
        else:
            rows = [[f"{v}:{i}", *_fit_cells(fits[scenario][(v, i)], metrics, busy)] for v, i in impls]
            extra = []
        first = "decoder" if scenario.decode else "impl"
        tables.append(ReportTable(_title(scenario), [first, *metrics.values(), *extra], rows))
    return tables + speedup_tables(analysis.speedups)


def speedup_tables(speedups: list[Speedup]) -> list[ReportTable]:
    """``--compare-to``: per scenario, each impl's speedup over the named one at every length it ran."""
    by_scenario: dict[Scenario, dict[str, dict[int, float | None]]] = defaultdict(lambda: defaultdict(dict))
    for item in speedups:
        by_scenario[item.scenario][f"{item.variant}:{item.impl}"][item.seq] = item.speedup
    tables = []
    for scenario, impls in by_scenario.items():
        against = next(s.against for s in speedups if s.scenario == scenario)
        lengths = sorted({seq for cells in impls.values() for seq in cells})
        rows = [
            [name, *(speedup_text(value) if (value := cells.get(seq)) is not None else "-" for seq in lengths)]
            for name, cells in impls.items()
        ]
        title = f"Speedup over {against} (its time / the impl's) — {_title(scenario).split(' — ', 1)[1]}"
        tables.append(ReportTable(title, ["impl", *(format_size(seq) for seq in lengths)], rows))
    return tables


def _title(scenario: Scenario) -> str:
    device = scenario.get("device")
    name = scenario.get("device_name")
    where = f"{device} ({name})" if name and name != device else device
    if scenario.decode:
        axis = "context length" if scenario.axis == "seq" else AXIS_NAME[scenario.axis]
        return f"Decoding against {axis} — {where} · {scenario.label()}"
    return f"Scaling in {AXIS_NAME[scenario.axis]} — {where} · {scenario.label()}"


def _fit_cells(by_metric: dict[str, FitResult], metrics: Mapping[str, str], busy: bool) -> list[str]:
    # A busy machine slows times, not memory: only a time fit warns of it.
    return [_fit_cell(by_metric.get(metric), busy and metric == "time") for metric in metrics]


def _fit_cell(fit: FitResult | None, busy: bool = False) -> str:
    """``s^1.02 (R² 0.999, 5 points, 2k–64k)``; the range starts past the points left out as
    overhead-bound. Flat data, two points and no power law at all say so; so do too few points
    and (``busy``) times from a busy machine."""
    if fit is None:
        return "-"
    symbol = AXIS_SYMBOL[fit.axis]
    quality = quality_text(fit.law, fit.r2, fit.points, busy)
    backing = f"{quality}, {_size(fit.x_min, fit.axis)}–{_size(fit.x_max, fit.axis)}"
    if fit.law == NONE or fit.exponent is None:
        return f"no power law found ({backing})"
    power = f"{symbol}^{round(fit.exponent, 2) + 0.0:.2f}"  # a flat fit reads 0.00, never -0.00
    if fit.law == FLAT:
        return f"flat ({power}, {backing})"
    return f"{power} ({backing})"


def _size(value: int, axis: str) -> str:
    return format_size(value) if axis == "seq" else str(value)


def _seq_row(
    variant: str, impl: str, fit_cells: list[str], crossing: Crossover | None, reach: Reach | None
) -> list[str]:
    return [f"{variant}:{impl}", *fit_cells, *_crossing_cells(crossing), _reach_cell(reach)]


def _crossing_cells(crossing: Crossover | None) -> list[str]:
    if crossing is None:
        return ["-", "-"]
    if crossing.seq is None:
        where = f"never (to {format_size(crossing.speedup_seq)})"
    else:
        where = ("≤ " if crossing.at_shortest else "") + format_size(crossing.seq)
    speedup = f"{speedup_text(crossing.speedup)} vs {crossing.speedup_baseline} at {format_size(crossing.speedup_seq)}"
    return [where, speedup]


def speedup_text(speedup: float) -> str:
    """``4.10x``; two significant digits below 0.1 (``0.0021x``, where two decimals say 0.00x)."""
    return f"{speedup:.2f}x" if speedup >= 0.095 else f"{speedup:.2g}x"


def _reach_cell(reach: Reach | None) -> str:
    if reach is None:
        return "-"
    longest = format_size(reach.max_seq) if reach.max_seq is not None else "none"
    if reach.stopped_by is None:
        return longest
    return f"{longest} ({reach.stopped_by} at {format_size(reach.stopped_at or 0)})"


def rich_table(table: ReportTable, cell_styles: Mapping[str, str] | None = None) -> Table:
    """``table`` for the terminal; cells equal to a key of ``cell_styles`` get that style."""
    styles = cell_styles or {}
    out = Table(title=table.title, title_justify="left")
    for n, column in enumerate(table.columns):
        out.add_column(column, no_wrap=n == 0)
    for row in table.rows:
        out.add_row(*(f"[{styles[cell]}]{escape(cell)}[/]" if cell in styles else escape(cell) for cell in row))
    return out


def markdown(tables: list[ReportTable], heading: str) -> str:
    lines = [f"## {heading}", ""]
    for table in tables:
        lines += [f"**{table.title}**", "", "| " + " | ".join(table.columns) + " |"]
        lines.append("|" + "---|" * len(table.columns))
        lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in table.rows]
        lines.append("")
    return "\n".join(lines)
