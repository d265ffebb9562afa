"""``linbench doctor``: can this machine's numbers be trusted? A table of checks, each with
its measured value, what it is compared with, and a verdict. Exit 1 when a check fails.

``--devices SPEC`` checks a run over several GPUs instead (linbench/fleet/preflight.py): the
inventory, the placement (GPU → cores → NUMA node), other processes on the cards, and whether
agents side by side move a launch-bound point's time."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from linbench.cli.common import DEVICE_HELP, resolve_device, stdout_console
from linbench.cli.errors import exit_usage_error, usage_errors

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


DEVICES_HELP = (
    "Check a run over these GPUs instead (cuda:0-7, GPU-<uuid>,..., all): inventory, placement, other "
    "processes, and a launch-bound point alone and beside the other agents."
)


def doctor_command(
    device: Annotated[str, typer.Option(help=f"Device to check: {DEVICE_HELP}.")] = "auto",
    as_json: Annotated[bool, typer.Option("--json", help="Print the checks and ceilings as JSON.")] = False,
    devices: Annotated[str | None, typer.Option("--devices", help=DEVICES_HELP)] = None,
    cpus_per_gpu: Annotated[
        int | None, typer.Option("--cpus-per-gpu", help="--devices: cores each agent gets, as run takes it.")
    ] = None,
    oversubscribe: Annotated[
        bool, typer.Option("--oversubscribe", help="--devices: let agents share cores, as run takes it.")
    ] = False,
) -> None:
    """Check that this machine's timings and memory figures can be trusted, before a sweep."""
    if devices is not None:
        if device != "auto":
            exit_usage_error("--device checks one device, --devices a run over several: give one")
        _doctor_devices(devices, cpus_per_gpu, oversubscribe, as_json)
        return
    if cpus_per_gpu is not None or oversubscribe:  # they shape --devices' placement: alone, they say nothing
        exit_usage_error("--cpus-per-gpu and --oversubscribe check a placement over several devices: give --devices")
    with usage_errors():
        resolved = resolve_device(device)
    from linbench.doctor.diagnose import diagnose

    report = diagnose(resolved)
    _print(report, as_json)


def _doctor_devices(spec: str, cpus_per_gpu: int | None, oversubscribe: bool, as_json: bool) -> None:
    import time

    from linbench.doctor.diagnose import DoctorReport
    from linbench.fleet.preflight import checkup, plan_devices

    start = time.perf_counter()
    with usage_errors():
        inventory, placements = plan_devices(spec, cpus_per_gpu=cpus_per_gpu, oversubscribe=oversubscribe)
    if not as_json:
        for placement in placements:
            typer.echo(placement.line)
    found = checkup(spec, inventory, placements)
    models = ", ".join(sorted({p.choice.device.name for p in placements}))
    report = DoctorReport(f"--devices {spec}", models, found.checks, time.perf_counter() - start)
    _print(report, as_json, found.to_json())


def _print(report: DoctorReport, as_json: bool, fleet: dict[str, object] | None = None) -> None:
    if as_json:
        typer.echo(json.dumps(report.to_json() | ({"fleet": fleet} if fleet else {}), indent=2))
    else:
        console = stdout_console()
        console.print(doctor_table(report))
        style = VERDICT_STYLE[report.verdict]
        console.print(f"[{style}]{escape(summary_line(report))}[/]", soft_wrap=True)
    raise typer.Exit(report.exit_code)
