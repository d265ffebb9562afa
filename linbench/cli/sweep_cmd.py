"""What ``linbench run`` and ``linbench decode`` share: a sweep read from flags, a suite or
a run folder to resume, planned, given a run folder, and run point by point with progress.

All input is checked before the run folder is made, so a typo never leaves a folder of
half-written results behind.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from linbench.cli.common import load_plugins, resolve_device, stdout_console
from linbench.cli.errors import CliUsageError, exit_usage_error, usage_errors

if TYPE_CHECKING:
    from rich.console import Console

    from linbench.results.store import RunStore
    from linbench.runner.plan import RunPlan
    from linbench.sweep.points import Point
    from linbench.sweep.request import SweepRequest
    from linbench.sweep.spec import SweepSpec

RANGE_HELP = "a size (4k), a list (512,1k), powers of two (1k..64k), or stepped (1k..8k:x2, 64..256:+64)"


def whole_option(key: str, text: str | None) -> int | None:
    """An option that takes a whole number of at least 1 (``--threads``), read from its text
    here rather than by Typer, so that a bad one is refused in the words a suite's would be."""
    from linbench.sweep.spec import positive_int

    return None if text is None else positive_int(key, text)


def seconds_option(key: str, text: str | None) -> float | None:
    """An option that takes seconds, zero or more (``--warmup-s``); see whole_option."""
    from linbench.sweep.spec import nonnegative_float

    return None if text is None else nonnegative_float(key, text)


def execute_sweep(
    request: SweepRequest,
    *,
    resume: Path | None,
    out: Path,
    quiet: bool,
    allow_failures: bool = False,
    yes: bool = False,
    dry_run: bool = False,
    mix: bool = False,
) -> None:
    """Check everything, make (or reopen) the run folder, run the points, print the summary.

    A sweep whose sizes no device here can hold is refused; one past MAX_POINTS points or
    MAX_ESTIMATE_S by the estimate runs only with ``yes``. ``dry_run`` prints the plan and
    makes no folder. A resumed run is refused on another device, torch or commit unless
    ``mix``. Exits 1 when a point failed (mismatch, error, crashed: a wrong or broken
    impl) unless ``allow_failures``; oom, timeout and skipped are the sweep's reach and exit 0."""
    from linbench.sweep.estimate import too_large

    console = stdout_console()
    with usage_errors():
        spec, store = _load(request, resume, repair=not dry_run)
        plan = _plan(spec)
        if store is not None:
            from linbench.runner.lifecycle import check_resumable

            check_resumable(store.read_meta(), plan, mix)
        pending = _pending(plan, store)
        seconds = _fit_and_estimate(plan, pending)
    if dry_run:
        _print_plan(spec, plan, pending, seconds, store, out, console)
        return
    if store is None:
        why = too_large(len(pending), seconds)
        if why is not None and not yes:
            exit_usage_error(
                f"this sweep is {why}; narrow the axes, or give --yes to run it anyway (--dry-run prints the plan)"
            )
        from linbench.runner.lifecycle import create_run

        with usage_errors():
            store = create_run(out, spec, plan)
    _run(spec, plan, store, console, quiet, allow_failures, seconds)


def _load(request: SweepRequest, resume: Path | None, repair: bool = True) -> tuple[SweepSpec, RunStore | None]:
    """The spec, and for --resume the existing run folder (repaired for appending unless not ``repair``)."""
    from linbench.results.store import RunStore
    from linbench.sweep.spec import build_spec, spec_from_settings, with_timeout

    if resume is None:
        return build_spec(request), None
    command, timeout_s = request.command, request.timeout_s
    given = request.options()
    if given:
        what = ", ".join(given)
        raise CliUsageError(f"--resume reruns the sweep recorded in {resume}/meta.json; drop {what}")
    store = RunStore.open(resume, repair=repair)
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


def _pending(plan: RunPlan, store: RunStore | None) -> list[Point]:
    """The plan's points that have no row yet (all of them for a new run)."""
    if store is None:
        return list(plan.points)
    from linbench.sweep.points import KEY_COLUMNS

    done = {tuple(str(row.get(c)) for c in KEY_COLUMNS) for row in store.rows()}
    return [point for point in plan.points if point.key not in done]


def _fit_and_estimate(plan: RunPlan, pending: list[Point]) -> float:
    """Refuse sizes the device cannot hold at all (SweepTooLargeError); the seconds the
    pending points will take by linbench.sweep.estimate's rough model."""
    from linbench.results.meta import device_memory_bytes
    from linbench.sweep.estimate import check_fits, estimate_s
    from linbench.sweep.spec import DECODE_MODE
    from linbench.variants.registry import get_variant

    grows: dict[tuple[str, str], bool] = {}
    steps: dict[tuple[str, str], str] = {}
    for variant_name, impl_name in plan.targets.pairs:
        decoder = get_variant(variant_name).decoders.get(impl_name)
        if decoder is not None:
            grows[(variant_name, impl_name)] = "s" in decoder.state_memory.lower()
            steps[(variant_name, impl_name)] = decoder.step_time
    decode = [p for p in plan.points if p.mode == DECODE_MODE]
    check_fits(plan.points, device_memory_bytes(plan.device), grows if decode else None)
    flops = {point: _call_flops(point) for point in pending if point.mode != DECODE_MODE}
    # Every point is measured in at least plan.processes.wanted processes (more where they disagree).
    return estimate_s(pending, plan.timing, plan.timeout_s, flops, steps) * plan.processes.wanted


def _call_flops(point: Point) -> float:
    """The FLOPs of one call: the variant's count, or the S×S count for an impl that is
    quadratic in time where its variant is not (cosine:quadratic)."""
    from linbench.variants.flops import quadratic_flops
    from linbench.variants.registry import get_variant

    variant = get_variant(point.variant)
    quadratic = lambda cost: "s²" in cost or "s^2" in cost  # noqa: E731 - a one-line test
    if quadratic(variant.impl(point.impl).time_complexity) and not quadratic(variant.time_complexity):
        return quadratic_flops(*point.shape.sizes(), point.causal, point.mode)
    return variant.flops(*point.shape.sizes(), point.causal, point.mode)


def _print_plan(
    spec: SweepSpec,
    plan: RunPlan,
    pending: list[Point],
    seconds: float,
    store: RunStore | None,
    out: Path,
    console: Console,
) -> None:
    """--dry-run: what would run, where, and about how long it would take; nothing is made."""
    from linbench.sweep.estimate import format_duration, too_large

    what = "decoders" if spec.command == "decode" else "impls"
    names = lambda pairs: ", ".join(f"{v}:{i}" for v, i in pairs) or "none"  # noqa: E731 - a one-line label
    baselines = set(plan.targets.baselines)
    measured = [pair for pair in plan.targets.pairs if pair not in baselines]
    where = store.path if store is not None else out / f"<UTC time>-{spec.name}"
    lines = [
        f"linbench {spec.command} --dry-run: nothing runs and no folder is made",
        f"  points: {len(pending)} of {len(plan.points)} to run on {plan.device} ({plan.device_name})",
        f"  {what}: {names(measured)}",
        f"  baselines: {names(plan.targets.baselines)}",
        *(f"  note: {note}" for note in plan.targets.notes),
        f"  estimated time: about {format_duration(seconds)} (a rough model: linbench/sweep/estimate.py)",
        f"  results would go to: {where}",
    ]
    why = too_large(len(pending), seconds)
    if why is not None and store is None:
        lines.append(f"  this sweep is {why}: it runs only with --yes")
    for line in lines:
        console.print(line, markup=False, soft_wrap=True)


def _announce(spec: SweepSpec, plan: RunPlan, pending: int, store: RunStore, console: Console, seconds: float) -> None:
    from linbench.sweep.estimate import format_duration

    what = "decoders" if spec.command == "decode" else "impls"
    console.print(
        f"linbench {spec.command}: {pending} of {len(plan.points)} points to run ({len(plan.targets.pairs)} {what}) "
        f"on {plan.device} ({plan.device_name}), about {format_duration(seconds)} -> {store.path}",
        markup=False,
        soft_wrap=True,
    )
    for note in plan.targets.notes:
        console.print(f"  note: {note}", markup=False, soft_wrap=True)


def _run(
    spec: SweepSpec,
    plan: RunPlan,
    store: RunStore,
    console: Console,
    quiet: bool,
    allow_failures: bool,
    seconds: float,
) -> None:
    from rich.markup import escape

    from linbench.cli.run_display import (
        failed_rows,
        failure_note,
        make_progress,
        row_line,
        status_counts,
        summary_tables,
    )
    from linbench.results.machine_load import load_warning
    from linbench.results.store import RunStoreWriteError
    from linbench.runner.ledger import overhead_line
    from linbench.runner.lifecycle import finish_run
    from linbench.runner.sweep_runner import SweepRunner

    runner = SweepRunner(plan, store)
    pending = runner.pending()
    _announce(spec, plan, len(pending), store, console, seconds)
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
        try:
            meta = finish_run(store, outcome)
        except RunStoreWriteError as exc:  # meta.json keeps its last good state
            failure = failure or str(exc)
            meta = store.read_meta()
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
    busy = load_warning(meta)
    if busy and not quiet:
        console.print(f"[yellow]warning:[/] {escape(busy)}", soft_wrap=True)
    tail = f"; warning: {busy}" if busy and quiet else ""  # --quiet keeps its single summary line
    if not quiet and meta.get("overhead"):
        console.print(overhead_line(meta["overhead"]), markup=False, soft_wrap=True)
    failed = failed_rows(rows)
    summary = f"{status_counts(rows)} -> {store.results_path}{failure_note(failed, allow_failures)}{tail}"
    console.print(summary, markup=False, soft_wrap=True)
    if failed and not allow_failures:
        raise typer.Exit(1)
