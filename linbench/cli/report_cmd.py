"""``linbench report``: fitted exponents, crossovers, speedups and reach of finished runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from linbench.cli.common import stdout_console
from linbench.cli.errors import CliUsageError, usage_errors

FORMATS = ("table", "md", "json")


def report_command(
    runs: Annotated[list[Path], typer.Argument(help="Run folders, results.csv files, or folders of runs.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON (the same as --format json).")] = False,
    output_format: Annotated[
        str, typer.Option("--format", help="table (rich, the default), md (markdown for a CI comment) or json.")
    ] = "table",
) -> None:
    """Fit time and memory against length and head dim; crossovers and speedups against softmax."""
    from linbench.report.analysis import analyse
    from linbench.report.load import load_runs
    from linbench.report.render import markdown, report_tables, rich_table

    with usage_errors():
        chosen = _format(output_format, as_json)
        loaded = load_runs(runs)
    analyses = [analyse(run) for run in loaded]
    if chosen == "json":
        merged: dict[str, list[dict]] = {"fits": [], "crossovers": [], "max_seq": []}
        for analysis in analyses:
            record = analysis.to_json()
            for key in merged:
                merged[key] += [{"run": analysis.run, **item} for item in record[key]]
        typer.echo(json.dumps(merged, indent=2))
        return
    if chosen == "md":
        typer.echo("\n".join(markdown(report_tables(a), f"linbench report: {a.run}") for a in analyses))
        return
    console = stdout_console()
    for run, analysis in zip(loaded, analyses, strict=True):
        console.print(f"[bold]{run.path}[/bold]  {run.meta.get('command', '')}", soft_wrap=True)
        for table in report_tables(analysis):
            console.print(rich_table(table))


def _format(output_format: str, as_json: bool) -> str:
    chosen = output_format.strip().lower()
    if chosen not in FORMATS:
        raise CliUsageError(f"unknown --format {output_format!r}; use {', '.join(FORMATS)}")
    if as_json and chosen not in ("table", "json"):
        raise CliUsageError("--json and --format md contradict each other; give one")
    return "json" if as_json else chosen
