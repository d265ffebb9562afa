"""What ``linbench run`` and ``linbench decode`` share: a sweep read from flags, a suite or
a run folder to resume, planned, given a run folder, and run point by point with progress.

All input is checked before the run folder is made, so a typo never leaves a folder of
half-written results behind.
"""

from __future__ import annotations

import shutil
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from linbench.cli.common import load_plugins, resolve_device, stdout_console
from linbench.cli.errors import CliUsageError, exit_usage_error, usage_errors

if TYPE_CHECKING:
    from rich.console import Console

    from linbench.results.store import RunStore
    from linbench.runner.plan import RunPlan
    from linbench.sweep.spec import SweepSpec

# More points than this deserve a warning before the run starts.
LARGE_SWEEP = 300
RANGE_HELP = "a size (4k), a list (512,1k), powers of two (1k..64k), or stepped (1k..8k:x2, 64..256:+64)"


def execute_sweep(
    command: str,
    flags: dict[str, Any],
    *,
    suite: Path | None,
    resume: Path | None,
    timeout_s: float | None,
    out: Path,
    quiet: bool,
    allow_failures: bool = False,
) -> None:
    """Check everything, make (or reopen) the run folder, run the points, print the summary.

    Exits 1 when a point failed (mismatch, error, crashed: a wrong or broken impl) unless
    ``allow_failures``; oom, timeout and skipped are the sweep's reach and exit 0."""
    console = stdout_console()
    with usage_errors():
        spec, store = _load(command, flags, suite, resume, timeout_s)
        plan = _plan(spec)
    if store is None:
        with usage_errors():
            store = _create_store(out, spec, plan)
    _run(spec, plan, store, console, quiet, allow_failures)


def _load(
    command: str, flags: dict[str, Any], suite: Path | None, resume: Path | None, timeout_s: float | None
) -> tuple[SweepSpec, RunStore | None]:
    """The spec, and for --resume the existing run folder."""
    from linbench.results.store import RunStore
    from linbench.sweep.spec import build_spec, spec_from_settings, with_timeout

    if resume is None:
        return build_spec(flags | {"timeout_s": timeout_s}, suite, command), None
    given = sorted(f"--{k.replace('_', '-')}" for k, v in flags.items() if v is not None)
    if given or suite is not None:
        what = ", ".join(given + (["--suite"] if suite else []))
        raise CliUsageError(f"--resume reruns the sweep recorded in {resume}/meta.json; drop {what}")
    store = RunStore.open(resume)
    meta = store.read_meta()
    try:
        recorded = meta["sweep"]
        made_by = recorded.get("command", "run")
        settings, tables, name = recorded["settings"], recorded["tables"], recorded["name"]
    except (KeyError, TypeError, AttributeError):
        raise CliUsageError(f"{resume}/meta.json does not record a sweep to resume") from None
    if made_by != command:
        raise CliUsageError(f"{resume} was made by linbench {made_by}; resume it with linbench {made_by} --resume")
    spec = spec_from_settings(settings, tables, name=name, suite=recorded.get("suite"), command=command)
    return with_timeout(spec, timeout_s), store


def _plan(spec: SweepSpec) -> RunPlan:
    from linbench.results.meta import device_name
    from linbench.runner.plan import make_plan

    load_plugins([Path(p) for p in spec.plugins])
    device = resolve_device(spec.device)
    return make_plan(spec, device, device_name(device))


def _create_store(out: Path, spec: SweepSpec, plan: RunPlan) -> RunStore:
    from linbench.results.meta import collect_meta
    from linbench.results.store import RunStore, RunStoreWriteError

    try:
        store = RunStore.create(out, spec.name)
    except OSError as exc:
        raise CliUsageError(f"--out {out}: cannot create a run folder: {exc.strerror or exc}") from None
    meta = collect_meta(sys.argv[1:], plan.device)
    meta["sweep"] = {
        "command": spec.command,
        "name": spec.name,
        "suite": spec.suite,
        "settings": {k: v for k, v in spec.settings.items() if k != "sweep"},
        "tables": spec.settings.get("sweep", []),
        "impls": [f"{v}:{i}" for v, i in plan.targets.pairs],
        "baselines": [f"{v}:{i}" for v, i in plan.targets.baselines],
        "points": len(plan.points),
    }
    meta["timing"] = plan.timing.__dict__
    meta["timeout_s"] = plan.timeout_s
    meta["cpu_memory_limit_bytes"] = plan.memory_limit_bytes
    meta["status"] = "running"
    try:
        store.write_meta(meta)
    except RunStoreWriteError as exc:
        shutil.rmtree(store.path, ignore_errors=True)  # nothing ran yet: leave no folder without meta.json
        raise CliUsageError(f"{exc}; no run folder was made") from None
    return store


def _announce(spec: SweepSpec, plan: RunPlan, pending: int, store: RunStore, console: Console) -> None:
    what = "decoders" if spec.command == "decode" else "impls"
    console.print(
        f"linbench {spec.command}: {pending} of {len(plan.points)} points to run ({len(plan.targets.pairs)} {what}) "
        f"on {plan.device} ({plan.device_name}) -> {store.path}",
        markup=False,
        soft_wrap=True,
    )
    for note in plan.targets.notes:
        console.print(f"  note: {note}", markup=False, soft_wrap=True)
    if pending > LARGE_SWEEP:
        console.print(f"[yellow]warning:[/] {pending} points is a large sweep; narrow the axes to finish sooner")


def _run(spec: SweepSpec, plan: RunPlan, store: RunStore, console: Console, quiet: bool, allow_failures: bool) -> None:
    from linbench.cli.run_display import (
        failed_rows,
        failure_note,
        make_progress,
        row_line,
        status_counts,
        summary_tables,
    )
    from linbench.results.store import RunStoreWriteError
    from linbench.runner.sweep_runner import SweepRunner

    runner = SweepRunner(plan, store)
    pending = runner.pending()
    _announce(spec, plan, len(pending), store, console)
    meta = store.read_meta()
    outcome = "interrupted"
    failure: str | None = None
    try:
        if quiet:
            runner.run(pending)
        else:
            with make_progress(console) as progress:
                bar = progress.add_task("starting", total=len(pending))

                def listen(event: str, point: Any, row: dict[str, Any] | None) -> None:
                    if event == "start":
                        progress.update(bar, description=point.label)
                    elif row is not None:
                        progress.console.print(row_line(row), soft_wrap=True)
                        progress.advance(bar)

                runner.listener = listen
                runner.run(pending)
        outcome = "complete"
    except KeyboardInterrupt:
        console.print(
            f"interrupted: finished points are in {store.results_path}; "
            f"finish with linbench {spec.command} --resume {store.path}"
        )
        raise typer.Exit(130) from None
    except RunStoreWriteError as exc:  # a full disk: the rows written so far stay, the run can resume
        failure = str(exc)
    except OSError as exc:
        failure = f"{exc.strerror or exc}" + (f": {str(exc.filename)!r}" if exc.filename else "")
    finally:
        meta |= {"status": outcome, "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        try:
            store.write_meta(meta)
        except RunStoreWriteError as exc:  # meta.json keeps its last good state
            failure = failure or str(exc)
    if failure is not None:
        exit_usage_error(
            f"{failure}; the finished points are kept in {store.path}: "
            f"make room, then finish with linbench {spec.command} --resume {store.path}"
        )
    planned = set(plan.targets.pairs)
    rows = [row for row in store.rows() if (row["variant"], row["impl"]) in planned]
    if not quiet:
        for table in summary_tables(rows, plan.targets.baselines):
            console.print(table)
    failed = failed_rows(rows)
    summary = f"{status_counts(rows)} -> {store.results_path}{failure_note(failed, allow_failures)}"
    console.print(summary, markup=False, soft_wrap=True)
    if failed and not allow_failures:
        raise typer.Exit(1)
