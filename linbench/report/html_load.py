"""The machine's load in the HTML report, from meta.json's "load" section: said once near the
top (one box with the worst reading when the machine was busy, else one line), and every
sample in a collapsed table at the end of the run's section.

Runs record load as linbench/machine/load.py writes it (samples, each with the reasons it
found the machine busy); another shape (a mapping without samples, a list, a text) is said in
the one box as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

from linbench.report.html_table import table_html
from linbench.report.render import ReportTable
from linbench.results.machine_load import load_warning


def load_summary(meta: Mapping[str, Any]) -> list[str]:
    """One box (busy) or one line (quiet) about the load; nothing when none was recorded."""
    load = meta.get("load")
    if load is None:
        return []
    if isinstance(load, Mapping) and isinstance(load.get("samples"), list):
        busy = load_warning(meta)
        if busy:
            return [f'<div class="warning"><b>Machine load:</b> {escape(busy)}.</div>']
        count = len([s for s in load["samples"] if isinstance(s, Mapping)])
        return [f'<p class="note">Machine load: no sample of the {count} found the machine busy.</p>']
    if isinstance(load, Mapping):
        warnings = load.get("warnings") or []
        said = "; ".join(plain(w) for w in (warnings if isinstance(warnings, list) else [warnings]))
    else:
        said = plain(load)
    return [f'<div class="warning"><b>Machine load:</b> {escape(said or "recorded, see below")}</div>']


def load_details(meta: Mapping[str, Any]) -> list[str]:
    """Every load sample (or whatever else the section holds) in a collapsed ``<details>``."""
    load = meta.get("load")
    if not isinstance(load, Mapping):
        return []
    samples = [s for s in load.get("samples") or [] if isinstance(s, Mapping)]
    if samples:
        busy = sum(1 for s in samples if s.get("busy"))
        rows = [[_sample_when(s), plain(s.get("load_avg") or "-"), _processes(s), plain(s.get("busy") or "no")]
                for s in samples]  # fmt: skip
        columns = ["sample", "load average (1, 5, 15 min)", "other busy processes", "busy"]
        cores = f"{load['cores']} cores" if load.get("cores") else ""
        threads = f", linbench's threads {load['linbench_threads']}" if load.get("linbench_threads") else ""
        body = [table_html(ReportTable(f"Load samples ({cores}{threads})", columns, rows))]
        if load.get("rule"):
            body.append(f'<p class="note">Rule: {escape(str(load["rule"]))}.</p>')
        summary = f"Machine load: {len(samples)} samples, {busy} of them busy"
    else:
        rest = [[str(k), plain(v)] for k, v in load.items() if k != "warnings"]
        if not rest:
            return []
        body = [table_html(ReportTable("Load as meta.json records it", ["entry", "value"], rest))]
        summary = "Machine load: what meta.json records"
    return ["<details><summary>" + escape(summary) + "</summary>", *body, "</details>"]


def _sample_when(sample: Mapping[str, Any]) -> str:
    return " ".join(str(sample[key]) for key in ("when", "at") if sample.get(key)) or "sample"


def _processes(sample: Mapping[str, Any]) -> str:
    found = [f"{p.get('name')} (pid {p.get('pid')}) {p.get('cpu_percent', 0):.0f}% CPU"
             for p in sample.get("busy_processes") or [] if isinstance(p, dict)]  # fmt: skip
    found += [f"{p.get('name')} (pid {p.get('pid')}) on the GPU" for p in sample.get("gpu_processes") or []
              if isinstance(p, dict)]  # fmt: skip
    return "; ".join(found) or "-"


def plain(value: Any) -> str:
    """A JSON value as one line of text."""
    if isinstance(value, dict):
        return ", ".join(f"{k}: {plain(v)}" for k, v in value.items())
    if isinstance(value, list):
        return "; ".join(plain(v) for v in value)
    return str(value)
