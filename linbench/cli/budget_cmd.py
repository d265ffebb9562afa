"""``linbench budget RUN``: a budget file (per-point limits on time and memory, linbench/history/
budget.py) from a run, with a margin over what it measured, for ``linbench run --budget``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from linbench.cli.compare_cmd import parse_percent
from linbench.cli.errors import CliUsageError, usage_errors
from linbench.cli.outputs import write_output

if TYPE_CHECKING:
    from linbench.history.budget import Unjudged


def budget_command(
    run: Annotated[Path, typer.Argument(help="The run folder (or its results.csv) to take the limits from.")],
    margin: Annotated[
        str, typer.Option("--margin", help="How far above the measured figure each limit lies, percent.")
    ] = "20%",
    out: Annotated[Path | None, typer.Option("--out", metavar="FILE", help="Write here (default: print).")] = None,
) -> None:
    """Write a budget file from a run: each point's time and memory limits, --margin above what it measured."""
    from linbench.history.budget import BudgetError, write
    from linbench.report.load import ReportInputError, read_single_run

    with usage_errors():
        chosen = parse_percent(margin, "--margin")
        try:
            text = write(read_single_run(run, "budget"), chosen)  # a torn row would drop its limit
        except (ReportInputError, BudgetError) as exc:
            raise CliUsageError(str(exc)) from None
        if out is None:
            typer.echo(text, nl=False)
            return
        write_output(out, lambda path: path.write_text(text), "the budget")
    typer.echo(f"wrote {out} ({text.count('[[point]]')} points)")


def judge_budget(run_folder: Path, budget_file: Path) -> None:
    """After ``run --budget``: every point over its limit, by how much, and what could not be
    judged. Exit 1 when a point is over its budget, 4 when a limit judged no point (a budget
    that judged nothing there must not pass), 0 otherwise."""
    from linbench.history.budget import judge, read
    from linbench.report.load import read_single_run

    judgement = judge(read_single_run(run_folder), read(budget_file))
    for overrun in judgement.overruns:
        unit = "ms" if overrun.what == "time" else "bytes"
        typer.echo(
            f"budget: {overrun.point}: {overrun.what} {overrun.measured:.4g} {unit} is over its limit "
            f"{overrun.limit:.4g} {unit} by {overrun.by:.1%}"
        )
    for point in judgement.broken:
        typer.echo(f"budget: {point.point}: {point.why}, over its budget")
    _echo_unjudged(judgement.unjudged)
    exceeded = len({o.point for o in judgement.overruns} | {b.point for b in judgement.broken})
    if judgement.unmatched:
        numbers = ", ".join(map(str, judgement.unmatched))
        typer.echo(f"budget: {len(judgement.unmatched)} limit(s) judged no point of this run: {numbers}")
    if judgement.failed:
        typer.echo(f"budget: {exceeded} point(s) over their limits")
        raise typer.Exit(1)
    if judgement.unmatched:
        typer.echo("budget: INCONCLUSIVE: a limit that judged nothing cannot pass (exit 4)")
        raise typer.Exit(4)
    typer.echo("budget: every point judged is within its limits")


def _echo_unjudged(points: list[Unjudged], shown: int = 10) -> None:
    for point in points[:shown]:
        typer.echo(f"budget: {point.point}: not judged: {point.why}")
    if len(points) > shown:
        typer.echo(f"budget: and {len(points) - shown} more point(s) not judged")
