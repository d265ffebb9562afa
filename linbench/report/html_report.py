"""``linbench report --format html``: one self-contained page a person can open from a CI
artefact, with nothing fetched from anywhere.

For each run: what ran and where (the command, device, versions, the timing policy and the
run's status, from meta.json), the machine's load while it ran and its warnings where meta.json
records them (a "load" section; older runs have none), the report's tables, every fit with what
backs it (law, exponent, R², points, range), and every figure ``linbench plot`` draws, as PNG
images embedded in base64.
"""

from __future__ import annotations

import base64
import io
import re
from collections.abc import Iterable, Mapping
from html import escape
from typing import Any

from linbench.report.analysis import Analysis, FitResult
from linbench.report.load import Run
from linbench.report.render import AXIS_NAME, AXIS_SYMBOL, ReportTable, report_tables
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
nav ul { columns: 2; font-size: 0.9em; }
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
    parts = [f'<section id="run-{n}"><h2>{escape(run.name)}</h2>', f'<p class="note">{escape(str(run.path))}</p>']
    parts += ["<h3>The run</h3>", _key_values(run_metadata(run.meta), "meta")]
    parts += _load_section(run.meta)
    tables = report_tables(analysis)
    if tables:
        parts.append("<h3>Scaling, crossovers and speedups</h3>")
        parts += [table_html(table) for table in tables]
    if analysis.fits:
        parts += ["<h3>Fits and what backs them</h3>", _fits_table(analysis.fits)]
    if figures:
        parts += ["<h3>Figures</h3>", *_figures(run)]
    parts.append("</section>")
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
    sweep = meta.get("sweep") if isinstance(meta.get("sweep"), dict) else {}
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


def _load_section(meta: Mapping[str, Any]) -> list[str]:
    """meta.json's "load" section: a warning for every sample that found the machine busy (its
    reasons), then every sample in a table and the rule. Another shape (a list, a text, a
    mapping without samples) is shown as it is, its "warnings" boxed."""
    load = meta.get("load")
    if load is None:
        return []
    parts = ["<h3>Machine load while the run measured</h3>"]
    if isinstance(load, dict) and isinstance(load.get("samples"), list):
        samples = [sample for sample in load["samples"] if isinstance(sample, dict)]
        busy = [sample for sample in samples if sample.get("busy")]
        if busy:
            parts.append(
                f'<div class="warning">The machine was busy in {len(busy)} of {len(samples)} load samples: '
                "times may be slower than on an idle machine.</div>"
            )
            parts += [
                f'<div class="warning">{escape(_sample_when(s))}: {escape(_plain(s["busy"]))}</div>' for s in busy
            ]
        else:
            parts.append(f'<p class="note">No sample of the {len(samples)} found the machine busy.</p>')
        rows = [[_sample_when(s), _plain(s.get("load_avg") or "-"), _processes(s), _plain(s.get("busy") or "no")]
                for s in samples]  # fmt: skip
        columns = ["sample", "load average (1, 5, 15 min)", "other busy processes", "busy"]
        cores = f"{load['cores']} cores" if load.get("cores") else ""
        threads = f", linbench's threads {load['linbench_threads']}" if load.get("linbench_threads") else ""
        parts.append(table_html(ReportTable(f"Load samples ({cores}{threads})", columns, rows)))
        if load.get("rule"):
            parts.append(f'<p class="note">Rule: {escape(str(load["rule"]))}.</p>')
    elif isinstance(load, dict):
        warnings = load.get("warnings") or []
        parts += [f'<div class="warning">{escape(_plain(w))}</div>' for w in
                  (warnings if isinstance(warnings, list) else [warnings])]  # fmt: skip
        rest = [(str(k), _plain(v)) for k, v in load.items() if k != "warnings"]
        if rest:
            parts.append(_key_values(rest, "meta"))
    elif isinstance(load, list):
        parts += [f'<div class="warning">{escape(_plain(item))}</div>' for item in load]
    else:
        parts.append(f'<div class="warning">{escape(str(load))}</div>')
    return parts


def _sample_when(sample: Mapping[str, Any]) -> str:
    return " ".join(str(sample[key]) for key in ("when", "at") if sample.get(key)) or "sample"


def _processes(sample: Mapping[str, Any]) -> str:
    found = [f"{p.get('name')} (pid {p.get('pid')}) {p.get('cpu_percent', 0):.0f}% CPU"
             for p in sample.get("busy_processes") or [] if isinstance(p, dict)]  # fmt: skip
    found += [f"{p.get('name')} (pid {p.get('pid')}) on the GPU" for p in sample.get("gpu_processes") or []
              if isinstance(p, dict)]  # fmt: skip
    return "; ".join(found) or "-"


def _plain(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_plain(v)}" for k, v in value.items())
    if isinstance(value, list):
        return "; ".join(_plain(v) for v in value)
    return str(value)


def _key_values(rows: list[tuple[str, str]], css: str) -> str:
    body = "".join(f"<tr><th>{escape(k)}</th><td>{_cell(v)}</td></tr>" for k, v in rows)
    return f'<table class="{css}">{body}</table>'


EXPONENT = re.compile(r"\b([sdBH])\^(-?\d+\.\d+)")


def _cell(text: str) -> str:
    """A table cell, its exponents raised (``s^1.02`` as s<sup>1.02</sup>)."""
    return EXPONENT.sub(r"\1<sup>\2</sup>", escape(text))


def table_html(table: ReportTable) -> str:
    head = "".join(f"<th>{escape(column)}</th>" for column in table.columns)
    body = "".join("<tr>" + "".join(f"<td>{_cell(cell)}</td>" for cell in row) + "</tr>" for row in table.rows)
    return f"<table><caption>{escape(table.title)}</caption><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


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
