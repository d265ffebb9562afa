"""``linbench budget RUN``: a budget file (per-point limits on time and memory, linbench/history/
budget.py) from a run, with a margin over what it measured, for ``linbench run --budget``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from linbench.cli.compare_cmd import parse_percent
from linbench.cli.errors import CliUsageError, usage_errors
from linbench.cli.outputs import write_output


def budget_command(
    run: Annotated[Path, typer.Argument(help="The run folder (or its results.csv) to take the limits from.")],
    margin: Annotated[
        str, typer.Option("--margin", help="How far above the measured figure each limit lies, percent.")
    ] = "20%",
    out: Annotated[Path | None, typer.Option("--out", metavar="FILE", help="Write here (default: print).")] = None,
) -> None:
    """Write a budget file from a run: each point's time and memory limits, --margin above what it measured."""
    from linbench.history.budget import write
    from linbench.report.load import ReportInputError, read_single_run

    with usage_errors():
        chosen = parse_percent(margin, "--margin")
        try:
            text = write(read_single_run(run, "budget"), chosen)  # a torn row would drop its limit
        except ReportInputError as exc:
            raise CliUsageError(str(exc)) from None
        if out is None:
            typer.echo(text, nl=False)
            return
        write_output(out, lambda path: path.write_text(text), "the budget")
    typer.echo(f"wrote {out} ({text.count('[[point]]')} points)")


def judge_budget(run_folder: Path, budget_file: Path) -> None:
    """After ``run --budget``: every point over its limit, by how much; exit 1 when one is."""
    from linbench.history.budget import judge, read
    from linbench.report.load import read_single_run

    budget = read(budget_file)
    overruns, unmatched = judge(read_single_run(run_folder), budget)
    for overrun in overruns:
        unit = "ms" if overrun.what == "time" else "bytes"
        typer.echo(
            f"budget: {overrun.point}: {overrun.what} {overrun.measured:.4g} {unit} is over its limit "
            f"{overrun.limit:.4g} {unit} by {overrun.by:.1%}"
        )
    if unmatched:
        typer.echo(f"budget: {len(unmatched)} limit(s) matched no point of this run: {', '.join(map(str, unmatched))}")
    typer.echo(f"budget: {len(overruns)} limit(s) exceeded" if overruns else "budget: every point within its limits")
    if overruns:
        raise typer.Exit(1)
