"""``linbench report``: fitted exponents, crossovers, speedups and reach of finished runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from linbench.cli.common import output_format, stdout_console
from linbench.cli.errors import usage_errors


def report_command(
    runs: Annotated[list[Path], typer.Argument(help="Run folders, results.csv files, or folders of runs.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON (the same as --format json).")] = False,
    output_format_flag: Annotated[
        str, typer.Option("--format", help="table (rich, the default), md (markdown for a CI comment) or json.")
    ] = "table",
) -> None:
    """Fit time and memory against length and head dim; crossovers and speedups against softmax."""
    from linbench.report.analysis import analyse
    from linbench.report.load import load_runs
    from linbench.report.render import markdown, report_tables, rich_table
    from linbench.report.roofline import roofline_json, roofline_tables

    with usage_errors():
        chosen = output_format(output_format_flag, as_json)
        loaded = load_runs(runs)
    analyses = [analyse(run) for run in loaded]
    if chosen == "json":
        merged: dict[str, list[dict]] = {"fits": [], "crossovers": [], "max_seq": []}
        for analysis in analyses:
            record = analysis.to_json()
            for key in merged:
                merged[key] += [{"run": analysis.run, **item} for item in record[key]]
        if roofline := roofline_json(loaded):  # only runs that recorded ceilings have one
            merged["roofline"] = roofline
        typer.echo(json.dumps(merged, indent=2))
        return
    if chosen == "md":
        pairs = zip(analyses, loaded, strict=True)
        typer.echo(
            "\n".join(markdown(report_tables(a) + roofline_tables(r), f"linbench report: {a.run}") for a, r in pairs)
        )
        return
    console = stdout_console()
    for run, analysis in zip(loaded, analyses, strict=True):
        console.print(f"[bold]{run.path}[/bold]  {run.meta.get('command', '')}", soft_wrap=True)
        for table in report_tables(analysis) + roofline_tables(run):
            console.print(rich_table(table))
