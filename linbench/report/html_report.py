"""``linbench report --format html``: one self-contained page a person can open from a CI
artefact, with nothing fetched from anywhere.

For each run, what it shows first: the machine's load said once where it was busy (one box
with the worst reading), the headline (each impl's crossover against the fastest softmax impl
and its speedup at the longest length both reached), the report's tables, the roofline table
("against the ceilings", where meta.json recorded them), a serving run's capacity table and a
hybrid preset's model tables, and every figure ``linbench plot``
draws, as PNG images embedded in base64. Then the details: what ran and where (the command,
device, versions, the timing policy and the run's status, from meta.json), every fit with what
backs it (law, exponent, R², points, range), and the load samples in a collapsed table.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Iterable, Mapping
from html import escape
from typing import Any

from linbench.report.analysis import Analysis, Crossover, FitResult
from linbench.report.capacity import capacity_tables
from linbench.report.device_split import device_split_tables
from linbench.report.html_load import load_details, load_summary
from linbench.report.html_table import key_values, table_html
from linbench.report.load import Run
from linbench.report.model_cost import model_cost_tables
from linbench.report.render import AXIS_NAME, AXIS_SYMBOL, ReportTable, report_tables, speedup_text
from linbench.report.roofline import roofline_tables
from linbench.results.machine_load import load_warning, run_notes
from linbench.units import format_bytes, format_size

FIGURE_DPI = 110
STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 2em auto; max-width: 1300px;
       padding: 0 1.5em; color: #222; line-height: 1.4; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { border-bottom: 2px solid #ccc; padding-bottom: 0.2em;
margin-top: 2em; } h3 { margin-top: 1.6em; }
table { border-collapse: collapse; margin: 0.6em 0 1.2em; font-size: 0.9em; }
th, td { border: 1px solid #d0d0d0; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #f2f2f2; } tr:nth-child(even) td { background: #fafafa; }
caption { caption-side: top; text-align: left; font-weight: 600; padding: 0.3em 0; }
table.meta th { width: 14em; } code { font-size: 0.95em; background: #f4f4f4; padding: 0 0.2em; }
.warning { background: #fff4e5; border-left: 4px solid #e69500; padding: 0.5em 0.8em; margin: 0.8em 0; }
.note { color: #666; font-size: 0.9em; }
figure { margin: 1.2em 0; } figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: 0.85em; color: #555; }
nav ul { columns: 2; font-size: 0.9em; } h4 { margin: 1.2em 0 0.3em; }
details { margin: 1em 0; } summary { cursor: pointer; font-weight: 600; }
"""


def html_report(runs: Iterable[Run], analyses: Iterable[Analysis], figures: bool = True) -> str:
    """The page for ``runs`` (with their analyses, in the same order)."""
    pairs = list(zip(runs, analyses, strict=True))
    names = ", ".join(run.name for run, _ in pairs)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>linbench report: {escape(names)}</title>",
        f"<style>{STYLE}</style></head><body>",
        "<h1>linbench report</h1>",
        f'<p class="note">{len(pairs)} run(s): {escape(names)}</p>',
    ]
    if len(pairs) > 1:
        parts.append("<nav><ul>" + "".join(f'<li><a href="#run-{n}">{escape(run.name)}</a></li>'
                                           for n, (run, _) in enumerate(pairs)) + "</ul></nav>")  # fmt: skip
    for n, (run, analysis) in enumerate(pairs):
        parts += _run_section(n, run, analysis, figures)
    parts.append("</body></html>")
    return "\n".join(parts)


def _run_section(n: int, run: Run, analysis: Analysis, figures: bool) -> list[str]:
    """Results first (load, headline, tables, figures), then the details."""
    parts = [f'<section id="run-{n}"><h2>{escape(run.name)}</h2>', f'<p class="note">{escape(str(run.path))}</p>']
    parts += load_summary(run.meta)
    notes = run_notes(run.results.to_dict("records"), run.meta)
    parts += [f'<div class="warning">{escape(note)}.</div>' for note in notes]
    parts += _headline(analysis.crossovers)
    tables = report_tables(analysis, bool(load_warning(run.meta)))
    if tables:
        parts.append("<h3>Scaling, crossovers and speedups</h3>")
        parts += [table_html(table) for table in tables]
    roofline = roofline_tables(run)
    if roofline:
        parts.append("<h3>Against the ceilings</h3>")
        parts += [table_html(table) for table in roofline]
    models = capacity_tables(run) + model_cost_tables(run)
    if models:
        parts.append("<h3>Serving capacity and model cost</h3>")
        parts += [table_html(table) for table in models]
    split = device_split_tables(run)
    if split:
        parts.append("<h3>Kernels and energy</h3>")
        parts += [table_html(table) for table in split]
    if figures:
        parts += ["<h3>Figures</h3>", *_figures(run)]
    parts += ["<h3>Details</h3>", "<h4>The run</h4>", key_values(run_metadata(run.meta), "meta")]
    if analysis.fits:
        parts += ["<h4>Fits and what backs them</h4>", _fits_table(analysis.fits)]
    parts += load_details(run.meta)
    parts.append("</section>")
    return parts


def _headline(crossovers: list[Crossover]) -> list[str]:
    """Per scenario along the length, each impl against the fastest softmax impl: where it
    starts to stay faster, and its speedup at the longest length both reached; fastest first."""
    by_scenario: dict[str, list[Crossover]] = {}
    for crossing in crossovers:
        if crossing.scenario.axis == "seq":
            by_scenario.setdefault(crossing.scenario.label(), []).append(crossing)
    if not by_scenario:
        return []
    parts = ["<h3>Headline</h3>"]
    for label, crossings in by_scenario.items():
        items = []
        for c in sorted(crossings, key=lambda c: -c.speedup):
            if c.seq is None:
                where = f"not faster than {c.baseline} (to {format_size(c.speedup_seq)})"
            else:
                where = f"faster than {c.baseline} from {'≤ ' if c.at_shortest else ''}{format_size(c.seq)}"
            speed = f"{speedup_text(c.speedup)} as fast as {c.speedup_baseline} at {format_size(c.speedup_seq)}"
            items.append(f"<li><b>{escape(f'{c.variant}:{c.impl}')}</b>: {escape(where)}; {escape(speed)}</li>")
        parts += [f'<p class="note">{escape(label)}</p>', "<ul>", *items, "</ul>"]
    return parts


def run_metadata(meta: Mapping[str, Any]) -> list[tuple[str, str]]:
    """What meta.json says of the run, as (label, text) rows; absent entries are left out."""
    rows: list[tuple[str, str]] = []

    def add(label: str, value: Any) -> None:
        if value not in (None, "", [], {}):
            rows.append((label, str(value)))

    add("command", meta.get("command"))
    add("status", meta.get("status"))
    add("started", meta.get("started_at"))
    add("finished", meta.get("finished_at"))
    device = meta.get("device_name")
    if device and meta.get("device") and device != meta.get("device"):
        device = f"{device} ({meta['device']})"
    add("device", device or meta.get("device"))
    if meta.get("device_memory_bytes"):
        add("device memory", format_bytes(meta["device_memory_bytes"]))
    gpu = [f"{meta[k]} {label}" for k, label in (("sm_count", "SMs"), ("compute_capability", "compute capability"))
           if meta.get(k)]  # fmt: skip
    if meta.get("l2_cache_bytes"):
        gpu.append(f"L2 {format_bytes(meta['l2_cache_bytes'])}")
    add("device details", ", ".join(gpu))
    cpu = meta.get("cpu_model")
    if cpu and meta.get("cpu_count"):
        cpu = f"{cpu}, {meta['cpu_count']} CPUs, torch threads {meta.get('torch_threads', '?')}"
    add("CPU", cpu)
    add("host", meta.get("hostname"))
    versions = [f"{name} {meta[key]}" for key, name in
                (("linbench_version", "linbench"), ("python", "Python"), ("torch", "torch"), ("cuda", "CUDA"),
                 ("driver_version", "driver")) if meta.get(key)]  # fmt: skip
    add("versions", ", ".join(versions))
    add("git", meta.get("git_sha"))
    add("timing policy", timing_text(meta.get("timing")))
    add("timeout per point", f"{meta['timeout_s']:g} s" if isinstance(meta.get("timeout_s"), (int, float)) else None)
    limit = meta.get("cpu_memory_limit_bytes")
    add("CPU memory cap", format_bytes(limit) if limit else None)
    sweep = meta.get("sweep")
    if not isinstance(sweep, dict):
        sweep = {}
    add("suite", sweep.get("suite"))
    add("impls", ", ".join(sweep.get("impls") or []))
    add("baselines", ", ".join(sweep.get("baselines") or []))
    add("points", sweep.get("points"))
    if "load" not in meta:
        rows.append(("machine load", "not recorded in meta.json"))
    return rows


def timing_text(timing: Any) -> str | None:
    """``warm-up 0.1 s, then repetitions for 0.5 s (10 to 1000)`` from meta.json's timing."""
    if not isinstance(timing, dict):
        return None
    parts = []
    if timing.get("warmup_s") is not None:
        parts.append(f"warm-up {timing['warmup_s']:g} s")
    if timing.get("budget_s") is not None:
        reps = ""
        if timing.get("min_reps") is not None and timing.get("max_reps") is not None:
            reps = f" ({timing['min_reps']} to {timing['max_reps']} repetitions)"
        parts.append(f"then repetitions for {timing['budget_s']:g} s{reps}")
    known = {"warmup_s", "budget_s", "min_reps", "max_reps"}
    parts += [f"{key} {value}" for key, value in timing.items() if key not in known and value not in (None, 0)]
    return ", ".join(parts) or None


def _fits_table(fits: list[FitResult]) -> str:
    columns = ["scenario", "impl", "metric", "against", "law", "exponent", "R²", "points", "range", "left out"]
    rows = []
    for fit in fits:
        size = format_size if fit.axis == "seq" else str
        exponent = "-" if fit.exponent is None else f"{AXIS_SYMBOL[fit.axis]}^{fit.exponent:.2f}"
        rows.append(
            [
                fit.scenario.label(),
                f"{fit.variant}:{fit.impl}",
                fit.metric,
                AXIS_NAME[fit.axis],
                {"power": "power law", "flat": "flat", "two_points": "2 points only", "none": "no power law found"}.get(
                    fit.law, fit.law
                ),
                exponent,
                f"{fit.r2:.3f}" if fit.law == "power" else f"({fit.r2:.3f})",
                str(fit.points),
                f"{size(fit.x_min)}–{size(fit.x_max)}",
                str(fit.left_out),
            ]
        )
    note = (
        '<p class="note">An R² in brackets is that of one line through the points of flat data, of two points or '
        "of points that follow no power law: it backs no exponent.</p>"
    )
    return table_html(ReportTable("Every fit", columns, rows)) + note


def _figures(run: Run) -> list[str]:
    from linbench.report.plot import figures

    parts = []
    for stem, figure in figures(run):
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=FIGURE_DPI, bbox_inches="tight")
        data = base64.b64encode(buffer.getvalue()).decode("ascii")
        parts.append(
            f'<figure><img alt="{escape(stem)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{escape(stem)}.png</figcaption></figure>"
        )
    return parts or ['<p class="note">nothing to plot (no impl has two lengths, head dims, batch sizes or heads)</p>']
