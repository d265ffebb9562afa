"""What ``linbench run`` over several GPUs prints: the plan and placement before, the progress
while the local agents run, and after, the merged run's summary as a plain run ends with it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import typer

from linbench.cli.errors import exit_usage_error

if TYPE_CHECKING:
    from rich.console import Console

    from linbench.cli.fleet_started import Started
    from linbench.fleet.placement import Placement

Heard = Callable[[str, dict[str, Any]], None]


def print_plan(started: Started, placements: tuple[Placement, ...], console: Console, announce: bool = False) -> None:
    """The sweep, its shards and where they run; for --dry-run, with nothing made."""
    from linbench.fleet.device_spec import cpu_agents
    from linbench.sweep.estimate import format_duration

    plan = started.plan
    where = {"local": f"{len(placements)} GPUs of this host", "slurm": "a Slurm job array", "ray": "a Ray cluster"}
    if cpu_agents(started.options.devices) is not None:  # asked for by name: said on the start line
        agents = f"{len(placements)} CPU agents" if placements else "one CPU agent"
        where = where | {"local": f"{agents} of this host (--devices {started.options.devices}: no GPU)"}
        where = where | {"shard": "one CPU agent on this process's cores (--devices cpu: no GPU)"}
    on = where.get(started.mode, f"the one GPU this process was given (part {started.part})")
    shards = f"{len(plan.shards)} shard{'s' if len(plan.shards) != 1 else ''}"
    estimate = format_duration(sum(s.cost for s in plan.shards))
    if announce and started.mode == "shard":
        from linbench.fleet.shards import select_part

        mine = select_part(plan.shards, started.part or "0/1")
        ids = ", ".join(s.id for s in mine) or "none"
        points = sum(len(s.points) for s in mine)
        head = f"linbench run: part {started.part}, {points} of {plan.points} points (shards {ids}) on {on}"
        lines = [f"{head} -> {started.run_dir}"]
    elif announce:
        verb = "resuming" if started.resumed else "running"
        head = f"linbench run: {verb} {plan.points} points in {shards} on {on}, about {estimate} of GPU time"
        lines = [f"{head} -> {started.run_dir}"]
    else:
        lines = [
            "linbench run --dry-run: nothing runs and no folder is made",
            f"  points: {plan.points} in {shards} (one scenario each), on {on}",
            f"  estimated time: about {estimate} of GPU time, shared by the GPUs",
            f"  results would go to: {started.run_dir}",
        ]
    lines += [f"  {placement.line}" for placement in placements]
    for line in lines:
        console.print(line, markup=False, soft_wrap=True)


@contextmanager
def fleet_progress(console: Console, started: Started, quiet: bool) -> Iterator[Heard]:
    """A progress bar over the points, moved by the local agents' events (Slurm and Ray agents
    run elsewhere: their progress is in their shard folders)."""
    if quiet or started.mode in ("slurm", "ray"):
        if not quiet:
            console.print(f"  waiting for the {started.mode} tasks ...", markup=False)
        yield lambda uuid, event: None
        return
    from linbench.cli.run_display import make_progress

    with make_progress(console) as progress:
        bar = progress.add_task("starting the agents", total=started.plan.points)

        def heard(uuid: str, event: dict[str, Any]) -> None:
            if event.get("event") == "start":
                label = " ".join(str(v) for v in event["key"][:2]) + f" seq {event['key'][8]}"
                progress.update(bar, description=f"{event.get('shard', '')} {label}")
            elif event.get("event") == "row":
                progress.advance(bar)

        yield heard


def report_fleet_run(started: Started, left: list[str], console: Console, quiet: bool, allow_failures: bool) -> None:
    """The end of a fleet run: what was left undone, then (but for a --shard part) the merged
    run's summary; exit 1 when points failed or have no row, as a plain run does."""
    for line in left:
        console.print(f"warning: {line}", markup=False, soft_wrap=True)
    if started.mode == "shard":
        _report_part(started, console, allow_failures)
        return
    from linbench.cli.run_flow import end_run
    from linbench.fleet.errors import MergeError
    from linbench.fleet.merge import merge_run
    from linbench.results.store import RunStore
    from linbench.runner.pipeline import Outcome

    try:
        summary = merge_run(started.run_dir, allow_partial=True)
    except MergeError as exc:
        exit_usage_error(f"{exc} (the shards are kept in {started.run_dir}/shards)")
    store = RunStore(started.run_dir)
    outcome = Outcome("complete", started.run_dir, store.read_meta(), store.rows())
    if summary.missing:
        shards = sorted({s.id for s in started.plan.shards if set(s.keys) & set(summary.missing)})
        console.print(
            f"{len(summary.missing)} of {started.plan.points} points have no row yet (shards {', '.join(shards)}); "
            f"finish with linbench run --resume {started.run_dir}",
            markup=False,
            soft_wrap=True,
        )
    end_run(started.prepared, outcome, console, quiet, allow_failures)
    if summary.missing:
        raise typer.Exit(1)


def _report_part(started: Started, console: Console, allow_failures: bool) -> None:
    """--shard K/N: this part's rows, and the merge still to come."""
    from linbench.cli.run_display import failed_rows, failure_note, status_counts
    from linbench.fleet.progress import chain_rows, chosen_chain, read_attempts
    from linbench.fleet.shards import select_part

    part = started.part or "0/1"
    mine = select_part(started.plan.shards, part)
    rows = [row for s in mine for _, row in chain_rows(chosen_chain(read_attempts(started.run_dir, s), s)).values()]
    failed = failed_rows(rows)
    shards = ", ".join(s.id for s in mine) or "none (more parts than shards)"
    console.print(
        f"part {part} (shards {shards}): {status_counts(rows)}{failure_note(failed, allow_failures)} "
        f"-> {started.run_dir}/shards; once every part is done: linbench merge {started.run_dir}",
        markup=False,
        soft_wrap=True,
    )
    if failed and not allow_failures:
        raise typer.Exit(1)
