"""``linbench report``: fitted exponents, crossovers, speedups and reach of finished runs."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from linbench.cli.common import REPORT_FORMATS, output_format, stdout_console, warn_left_out
from linbench.cli.errors import CliUsageError, usage_errors
from linbench.cli.outputs import write_output

# html is report's alone (compare prints table, md or json).
FORMATS = (*REPORT_FORMATS, "html")


def report_command(
    runs: Annotated[list[Path], typer.Argument(help="Run folders, results.csv files, or folders of runs.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON (the same as --format json).")] = False,
    output_format_flag: Annotated[
        str,
        typer.Option(
            "--format",
            help="table (rich, the default), md (markdown for a CI comment), json, or html (one self-contained "
            "page: metadata, tables, fits and every figure embedded).",
        ),
    ] = "table",
    out: Annotated[
        Path | None, typer.Option("--out", help="Write the report to this file instead of printing it.")
    ] = None,
    compare_to: Annotated[
        str | None,
        typer.Option(
            "--compare-to",
            help="VARIANT:IMPL (e.g. linear:fla): add each impl's speedup over it at every length it ran.",
        ),
    ] = None,
) -> None:
    """Fit time and memory against length and head dim; crossovers and speedups against softmax."""
    from linbench.report.analysis import analyse
    from linbench.report.capacity import capacity_json, capacity_tables
    from linbench.report.device_split import device_split_tables
    from linbench.report.load import load_runs
    from linbench.report.model_cost import model_cost_json, model_cost_tables
    from linbench.report.render import markdown, report_tables
    from linbench.report.roofline import roofline_json, roofline_tables
    from linbench.results.machine_load import load_warning, run_notes

    with usage_errors():
        chosen = _report_format(output_format_flag, as_json)
        loaded = load_runs(runs)
        warn_left_out(line for run in loaded for line in run.warnings)
        against = _compare_target(compare_to, loaded) if compare_to is not None else None
    analyses = [analyse(run, against) for run in loaded]
    if chosen == "table" and out is None:
        _print_tables(stdout_console(), loaded, analyses)
        return
    if chosen == "html":
        from linbench.report.html_report import html_report

        text = html_report(loaded, analyses)
    elif chosen == "json":
        merged: dict[str, list[dict]] = {"fits": [], "crossovers": [], "max_seq": []}
        if against is not None:
            merged["compare_to"] = []
        for analysis in analyses:
            record = analysis.to_json()
            for key in merged:
                merged[key] += [{"run": analysis.run, **item} for item in record.get(key, [])]
        if roofline := roofline_json(loaded):  # only runs that recorded ceilings have one
            merged["roofline"] = roofline
        if capacity := [line for run in loaded for line in capacity_json(run)]:  # serving decode runs
            merged["capacity"] = capacity
        if model_cost := [line for run in loaded for line in model_cost_json(run)]:  # hybrid preset runs
            merged["model_cost"] = model_cost
        text = json.dumps(merged, indent=2)
    elif chosen == "md":
        sections = []
        for analysis, run in zip(analyses, loaded, strict=True):
            busy = load_warning(run.meta)
            notes = [f"\n\n**warning:** {busy}"] if busy else []
            notes += [f"\n\n**note:** {note}" for note in run_notes(run.results.to_dict("records"), run.meta)]
            title = f"linbench report: {analysis.run}" + "".join(notes)
            tables = (
                report_tables(analysis, bool(busy))
                + roofline_tables(run)
                + capacity_tables(run)
                + model_cost_tables(run)
                + device_split_tables(run)
            )
            sections.append(markdown(tables, title))
        text = "\n".join(sections)
    else:  # the tables, as plain text for a file
        buffer = io.StringIO()
        console = Console(file=buffer, width=200, highlight=False, color_system=None)
        _print_tables(console, loaded, analyses)
        text = buffer.getvalue().rstrip("\n")
    with usage_errors():
        _emit(text, out)


def _print_tables(console: Console, loaded: list, analyses: list) -> None:
    from rich.markup import escape

    from linbench.report.capacity import capacity_tables
    from linbench.report.device_split import device_split_tables
    from linbench.report.model_cost import model_cost_tables
    from linbench.report.render import report_tables, rich_table
    from linbench.report.roofline import roofline_tables
    from linbench.results.machine_load import load_warning, run_notes

    for run, analysis in zip(loaded, analyses, strict=True):
        console.print(f"[bold]{run.path}[/bold]  {escape(str(run.meta.get('command', '')))}", soft_wrap=True)
        if busy := load_warning(run.meta):
            console.print(f"[yellow]warning:[/] {escape(busy)}", soft_wrap=True)
        for note in run_notes(run.results.to_dict("records"), run.meta):
            console.print(f"[yellow]note:[/] {escape(note)}", soft_wrap=True)
        tables = (
            report_tables(analysis, bool(busy))
            + roofline_tables(run)
            + capacity_tables(run)
            + model_cost_tables(run)
            + device_split_tables(run)
        )
        for table in tables:
            console.print(rich_table(table))
        if not tables:  # say why, not a header alone
            console.print(f"no table: {_no_ok_point(run.results)}", markup=False, soft_wrap=True)


def _no_ok_point(results: Any) -> str:
    """Why a run gave no table: none of its points ended ok (counted by how they ended), or
    those that did are too few to tabulate."""
    counts = results["status"].value_counts()
    ended = ", ".join(f"{n} {status}" for status, n in counts.items())
    if not ended:
        return "the run holds no point"
    if counts.get("ok", 0):
        needs = "a scaling table needs an impl at two lengths, a roofline the run's ceilings"
        return f"its points ({ended}) give none: {needs}"
    return f"no point of this run ended ok with a time ({ended})"


def _compare_target(spec: str, loaded: list) -> str:
    """``--compare-to``'s VARIANT:IMPL, which must have ok times in one of the runs."""
    name = spec.strip()
    variant, colon, impl = name.partition(":")
    if not colon or not variant or not impl:
        raise CliUsageError(f"--compare-to {spec!r}: give VARIANT:IMPL, like linear:fla")
    present: set[str] = set()
    for run in loaded:
        ok = run.results[run.results["status"] == "ok"]
        present |= {f"{v}:{i}" for v, i in zip(ok["variant"], ok["impl"], strict=True)}
    if name not in present:
        listed = ", ".join(sorted(present)) or "none"
        raise CliUsageError(f"--compare-to {name}: no ok time of it in these runs; impls with ok times: {listed}")
    return name


def _report_format(flag: str, as_json: bool) -> str:
    """``--format``, with html, which only report prints, besides the formats it shares with compare."""
    name = flag.strip().lower()
    if name not in FORMATS:
        raise CliUsageError(f"unknown --format {flag!r}; use {', '.join(FORMATS)}")
    if name == "html":
        if as_json:
            raise CliUsageError("--json and --format html contradict each other; give one")
        return name
    return output_format(flag, as_json)


def _emit(text: str, out: Path | None) -> None:
    """Print ``text``, or write it to ``out`` and say so on stderr."""
    if out is None:
        typer.echo(text)
        return
    write_output(out, lambda path: path.write_text(text + "\n", encoding="utf-8"), "the report")
    typer.echo(f"linbench report: wrote {out}", err=True)
