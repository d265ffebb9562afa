"""``linbench doctor``: can this machine's numbers be trusted? A table of checks, each with
its measured value, what it is compared with, and a verdict. Exit 1 when a check fails."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from linbench.cli.common import DEVICE_HELP, resolve_device, stdout_console
from linbench.cli.errors import usage_errors

if TYPE_CHECKING:
    from linbench.doctor.diagnose import DoctorReport

VERDICT_STYLE = {"pass": "green", "warn": "yellow", "fail": "bold red"}


def doctor_table(report: DoctorReport) -> Table:
    where = report.device if report.device_name == report.device else f"{report.device} ({report.device_name})"
    table = Table(title=f"linbench doctor: {where}", title_justify="left")
    for column in ("check", "measured", "reference", "verdict", "note"):
        table.add_column(column, no_wrap=column in ("check", "verdict"))
    for check in report.checks:
        style = VERDICT_STYLE[check.verdict]
        cells = (check.name, check.measured, check.reference)
        table.add_row(*(escape(c) for c in cells), f"[{style}]{check.verdict}[/]", escape(check.note))
    return table


def summary_line(report: DoctorReport) -> str:
    counts = {v: sum(c.verdict == v for c in report.checks) for v in VERDICT_STYLE}
    tally = ", ".join(f"{n} {v}" for v, n in counts.items() if n)
    return f"{report.verdict}: {tally} ({report.seconds:.1f} s)"


def doctor_command(
    device: Annotated[str, typer.Option(help=f"Device to check: {DEVICE_HELP}.")] = "auto",
    as_json: Annotated[bool, typer.Option("--json", help="Print the checks and ceilings as JSON.")] = False,
) -> None:
    """Check that this machine's timings and memory figures can be trusted, before a sweep."""
    with usage_errors():
        resolved = resolve_device(device)
    from linbench.doctor.diagnose import diagnose

    report = diagnose(resolved)
    if as_json:
        typer.echo(json.dumps(report.to_json(), indent=2))
    else:
        console = stdout_console()
        console.print(doctor_table(report))
        style = VERDICT_STYLE[report.verdict]
        console.print(f"[{style}]{escape(summary_line(report))}[/]", soft_wrap=True)
    raise typer.Exit(report.exit_code)
