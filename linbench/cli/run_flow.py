"""What ``linbench run`` and ``linbench decode`` share around the sweep pipeline
(linbench/runner/pipeline.py): the plan printed for ``--dry-run``, the ``--yes`` refusal, the
progress bar, the summary, and the exit status an outcome ends with.

All input is checked (``prepare``) before the run folder is made (``start``), so a typo never
leaves a folder of half-written results behind.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import fields as dataclass_fields
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from linbench.cli.common import command_began, is_command_process, load_plugins, stdout_console, warn_left_out
from linbench.cli.errors import INTERRUPTED_EXIT, CliUsageError, exit_usage_error, usage_errors
from linbench.cli.fleet_options import FleetOptions
from linbench.results.point_list import read_point_list

if TYPE_CHECKING:
    from rich.console import Console

    from linbench.results.store import RunStore
    from linbench.runner.pipeline import Outcome, Prepared
    from linbench.runner.recorder import Listener
    from linbench.sweep.lengths import Pack
    from linbench.sweep.points import Point
    from linbench.sweep.request import SweepRequest
    from linbench.sweep.spec import Axes, SweepSpec

RANGE_HELP = "a size (4k), a list (512,1k), powers of two (1k..64k), or stepped (1k..8k:x2, 64..256:+64)"


# Options that take a whole number of at least 1, and seconds (zero or more): typed as text
# for Typer and read here, so that a bad one is refused in the words a suite's would be
# ("threads: 'two' is not a positive whole number"), not Typer's.
WHOLE_OPTIONS = ("threads", "min_reps", "processes", "max_processes", "pool", "drift_steps")
SECONDS_OPTIONS = ("warmup_s",)
# The options of run and decode that are not the sweep's: where the run folder goes, how the
# run is shown, what ends it with 1, what it measures of a plan (--only-points), the masking's
# second flag (--bidirectional: run gives the request's causal itself), the old spellings of
# --against (cli/against_options.py), and the fleet's (cli/fleet_options.py FleetOptions).
# Every other option is the SweepRequest field of its name: sweep_request refuses one that is
# neither, so an option whose name matches no field fails every run and test at once, instead
# of being dropped without a word.
NOT_SWEEP_OPTIONS = frozenset(
    {"out", "resume", "quiet", "allow_failures", "yes", "dry_run", "mix", "only_points", "budget", "no_check"}
    | {"bidirectional", "baseline", "no_baseline"}
    | {f.name for f in dataclass_fields(FleetOptions)}
)


def sweep_request(command: str, options: Mapping[str, Any], **fields: Any) -> SweepRequest:
    """The request of ``linbench run`` or ``linbench decode`` from its options, by parameter
    name (``variant`` fills ``variants``): a list as a tuple, an option not given (None, an
    empty list, a flag left off) left unset, whole numbers and seconds read from their text.
    ``fields`` set what takes more than one option (run's masking); the options that are not
    the sweep's (NOT_SWEEP_OPTIONS: ``--out``, ``--quiet``) are left out, and any other that
    names no field is a TypeError: a command whose option would reach nothing."""
    from linbench.sweep.request import SETTING_KEYS, SweepRequest
    from linbench.sweep.values import nonnegative_float, positive_int

    plural = {key: name for name, key in SETTING_KEYS.items()}  # "variant" -> "variants"
    known = {f.name for f in dataclass_fields(SweepRequest)}
    for option, value in options.items():
        name = plural.get(option, option)
        if name not in known and option not in NOT_SWEEP_OPTIONS:
            raise TypeError(f"linbench {command}'s option {option!r} is no SweepRequest field nor in NOT_SWEEP_OPTIONS")
        if name not in known or name in fields or value is None or value is False or value == []:
            continue
        if option in WHOLE_OPTIONS:
            value = positive_int(option, value)
        elif option in SECONDS_OPTIONS:
            value = nonnegative_float(option, value)
        fields[name] = tuple(value) if isinstance(value, list) else value
    return SweepRequest(command=command, **fields)


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
    only_points: Path | None = None,
    check: bool = True,
) -> Path | None:
    """Check everything, make (or reopen) the run folder, run the points, print the summary;
    the run folder (None for a dry run).

    A sweep whose sizes no device here can hold is refused; one past MAX_POINTS points or
    MAX_ESTIMATE_S by the estimate runs only with ``yes``. ``dry_run`` prints the plan and
    makes no folder. A resumed run is refused on another device, torch or commit unless
    ``mix``. Exits 1 when a point failed (mismatch, error, crashed: a wrong or broken
    impl) unless ``allow_failures``; oom, timeout and skipped are the sweep's reach and exit 0.
    ``only_points``: a CSV naming the points of the sweep to measure (results/point_list.py);
    ``check`` False: no correctness check before each point (run --no-check)."""
    # The fork server: a fork of this process once it holds the worker's imports, where this
    # process is the command's own (a host process's state is not ours to fork), else a process
    # of its own, started now so that its imports run beside this one's (supervisor.py).
    from linbench.runner.supervisor import server_can_fork_from_here, start_worker_server

    fork_here = not dry_run and is_command_process() and server_can_fork_from_here()
    if not dry_run:
        from linbench.machine.load import open_start_window

        if not fork_here:
            start_worker_server()
        open_start_window()  # so the start sample's window spans the imports, instead of waiting after
    from linbench.runner.pipeline import prepare, run, start

    if fork_here:
        import linbench.runner.worker  # noqa: F401 - the server forked now holds it for every worker

        start_worker_server(fork=True)  # before this process runs any torch op

    console = stdout_console()
    with usage_errors():
        if resume is None:
            _check_out(out)
        elif only_points is not None:
            raise CliUsageError("--resume measures the points the run was started with; drop --only-points")
        only = read_point_list(only_points) if only_points is not None else None
        # Loaded here first, so a plugin's error names its file as given, as list's and check's do
        # (the spec holds resolved paths); prepare then finds it loaded.
        load_plugins(list(request.plugins))
        prepared = replace(
            prepare(request, out, resume=resume, mix=mix, repair=not dry_run, only=only),
            command_began=command_began(),
        )
        if not check:
            prepared = replace(prepared, plan=replace(prepared.plan, check=False))
    if dry_run:
        _print_plan(prepared, console)
        return None
    why = prepared.too_large
    if why is not None and not yes:
        exit_usage_error(
            f"this sweep is {why}; narrow the axes, or give --yes to run it anyway (--dry-run prints the plan)"
        )
    with usage_errors():
        store = start(prepared)
    warn_left_out(store.repairs)
    _announce(prepared, store, console)
    if quiet:
        outcome = run(prepared, store)
    else:
        with _progress(console, len(prepared.pending), store) as listen:
            outcome = run(prepared, store, listen)
    end_run(prepared, outcome, console, quiet, allow_failures)
    return outcome.path


def _check_out(out: Path) -> None:
    """Refuse an ``--out`` that is, or lies under, a file: run folders are made in a folder
    (the OS would only say "File exists" or "Not a directory")."""
    for path in (out, *out.parents):
        if path.exists():
            if not path.is_dir():
                raise CliUsageError(
                    f"--out {out}: {path} is a file; --out must be a folder (run folders are made in it)"
                )
            return


def _print_plan(prepared: Prepared, console: Console) -> None:
    """--dry-run: what would run, where, and about how long it would take; nothing is made."""

    spec, plan, store = prepared.spec, prepared.plan, prepared.store
    what = plan.kind.words.targets
    names = lambda pairs: ", ".join(f"{v}:{i}" for v, i in pairs) or "none"  # noqa: E731 - a one-line label
    baselines = set(plan.targets.baselines)
    planned = {(point.variant, point.impl) for point in plan.points}  # not those whose points were all left out
    measured = [pair for pair in plan.targets.pairs if pair not in baselines and pair in planned]
    where = store.path if store is not None else prepared.out / f"<UTC time>-{spec.name}"
    lines = [
        f"linbench {spec.command} --dry-run: nothing runs and no folder is made",
        f"  points: {len(prepared.pending)} of {len(plan.points)} to run on {plan.device} ({plan.device_name})",
        f"  {what}: {names(measured)}",
        f"  against: {names([pair for pair in plan.targets.baselines if pair in planned])}",
        *_axes_lines(spec.blocks, spec.command, packed=spec.pack is not None, contexts=_drawn_contexts(spec)),
        *([f"  pack: {pack_line(spec.pack, spec.packing)}"] if spec.pack is not None else []),
        *(f"  note: {note}" for note in plan.targets.notes),
        f"  estimated time: {prepared.duration}{_build_note(prepared, dry_run=True)}"
        f"{_busy_note()} (a rough model: linbench/sweep/estimate.py)",
        f"  results would go to: {where}",
    ]
    if prepared.too_large is not None:
        lines.append(f"  this sweep is {prepared.too_large}: it runs only with --yes")
    for line in lines:
        console.print(line, markup=False, soft_wrap=True)


def _axes_lines(blocks: tuple[Axes, ...], command: str, packed: bool = False, contexts: str | None = None) -> list[str]:
    lines = [axes_line(block, command, packed) for block in blocks]
    if contexts is not None:  # each request's context is drawn: the context axis is not what runs
        lines = [f"context drawn per request from {contexts} · {line.split(' · ', 1)[1]}" for line in lines]
    if len(blocks) == 1:
        return [f"  axes: {lines[0]}"]
    return [f"  block {i}: {line}" for i, line in enumerate(lines, 1)]


def _drawn_contexts(spec: SweepSpec) -> str | None:
    """A decode sweep's --contexts distribution, where its requests' contexts are drawn."""
    return spec.serving.contexts if spec.command == "decode" and spec.serving is not None else None


def pack_line(pack: Pack, packing: tuple[str, ...]) -> str:
    """A pack in words: where its lengths come from, how many, the padding, how it runs."""
    lengths = pack.lengths
    return (
        f"{pack.label}: {pack.sequences} sequences of {min(lengths)} to {max(lengths)} tokens "
        f"(mean {pack.tokens / pack.sequences:.0f}); padded to the longest, {pack.padding_waste:.0%} of "
        f"the batch is padding · run {', '.join(packing)}"
    )


def axes_line(block: Axes, command: str, packed: bool = False) -> str:
    """The values of each axis of one block: "seq 1k, 2k · batch 1 · heads 8 · ..." (a pack's
    lengths and batch are its own: pack_line)."""
    from linbench.sweep.settings import LENGTH_AXIS
    from linbench.units import format_size

    def values(items: tuple[Any, ...]) -> str:
        return ", ".join(format_size(v) if isinstance(v, int) else str(v) for v in items)

    length = LENGTH_AXIS[command]
    batch = f"tokens/seq ({format_size(block.tokens)} tokens)" if block.tokens else values(block.batch)
    parts = [f"{length} {values(block.seq)}", f"batch {batch}", f"heads {values(block.heads)}"]
    if block.kv_heads:
        parts.append(f"kv_heads {values(block.kv_heads)}")
    if block.v_heads:
        parts.append(f"v_heads {values(block.v_heads)}")
    if packed:
        parts = parts[2:]
    parts.append(f"dim {values(block.dim)}" + (f" × dim_v {values(block.dim_v)}" if block.dim_v else ""))
    if block.chunk:
        parts.append(f"chunk {values(block.chunk)}")
    parts.append(f"dtype {values(block.dtype)}")
    if block.tokens_per_step:
        parts.append(f"tokens/step {values(block.tokens_per_step)}")
    if block.state_dtype:
        parts.append(f"state {', '.join(block.state_dtype)}")
    if block.state_layout:
        parts.append(f"state layout {', '.join(block.state_layout)}")
    if command != "decode":  # decode's mode is the decode step, its masking causal
        parts.append(f"mode {values(block.mode)}")
        parts.append(", ".join("causal" if causal else "bidirectional" for causal in block.causal))
    if block.skip:
        parts.append(f"without {', '.join(block.skip)}")
    return " · ".join(parts)


def _announce(prepared: Prepared, store: RunStore, console: Console) -> None:

    spec, plan = prepared.spec, prepared.plan
    count = len(plan.targets.pairs)
    what = plan.kind.words.targets if count != 1 else plan.kind.words.targets.removesuffix("s")
    console.print(
        f"linbench {spec.command}: {len(prepared.pending)} of {len(plan.points)} points to run "
        f"({count} {what}) on {plan.device} ({plan.device_name}), "
        f"{prepared.duration}{_build_note(prepared)}{_busy_note()} -> {store.path}",
        markup=False,
        soft_wrap=True,
    )
    for note in plan.targets.notes:
        console.print(f"  note: {note}", markup=False, soft_wrap=True)


def _estimate_line(meta: dict[str, Any]) -> str | None:
    """The run's wall time against its estimate (meta.json's ``estimate``), or None."""
    from linbench.results.estimate_record import EstimateRecord

    record = EstimateRecord.read(meta)
    if record is None or record.actual_s is None or record.ratio is None:
        return None
    return (
        f"time: took {record.actual_s:.0f} s against an estimate of {record.estimate_s:.0f} s, "
        f"{record.ratio:.2f}× the estimate (kept in meta.json's estimate)"
    )


def _busy_note() -> str:
    """The estimate is an idle machine's: say so where the machine is busy now (its 1-minute
    load average above its cores, machine/load.py's rule), since every point then takes longer."""
    from linbench.machine.load import cpu_cores, load_average

    load, cores = load_average(), cpu_cores()
    if load is None or load[0] <= cores:
        return ""
    return f" on an idle machine; this one is busy (load average {load[0]:.1f} on {cores} cores): expect longer"


def _build_note(prepared: Prepared, dry_run: bool = False) -> str:
    """What the estimate says of the first-use kernel build planning made (nothing without one)."""
    from linbench.sweep.estimate import format_duration

    build = prepared.build
    if not build.built:
        return ""
    took = f"; it took {format_duration(build.took_s)}" if build.took_s is not None else ""
    done = ", which this dry run has done: a run now would not" if dry_run else ""
    return f" with the first-use kernel build (about {format_duration(build.estimate_s)}{took}{done})"


@contextmanager
def _progress(console: Console, total: int, store: RunStore) -> Iterator[Listener]:
    """A progress bar over ``total`` points, and the listener that moves it: the point being
    measured, and a line per finished point above the bar. Before the first point, the torch
    threads the session chose (recorded in ``store``'s meta.json once the session began)."""
    from linbench.cli.run_display import make_progress, row_line, threads_line

    with make_progress(console) as progress:
        bar = progress.add_task("starting", total=total)
        told = False

        def listen(event: str, point: Point, row: dict[str, Any] | None) -> None:
            nonlocal told
            if not told:  # the session chooses the threads after the start line is printed
                told = True
                line = threads_line(store.read_meta())
                if line is not None:
                    progress.console.print(line, markup=False, soft_wrap=True)
            if event == "start":
                progress.update(bar, description=point.label)
            elif row is not None:
                progress.console.print(row_line(row), soft_wrap=True)
                progress.advance(bar)

        yield listen


def end_run(prepared: Prepared, outcome: Outcome, console: Console, quiet: bool, allow_failures: bool) -> None:
    """The summary of a finished run, and its exit status: 130 for Ctrl-C, 2 for a failed
    write, 1 for a failed point (unless ``allow_failures``), else 0."""
    from rich.markup import escape

    from linbench.cli.run_display import failed_rows, failure_note, status_counts, summary_tables
    from linbench.results.machine_load import load_warning, run_notes
    from linbench.results.meta import Overhead
    from linbench.runner.ledger import overhead_line

    command, path = prepared.spec.command, outcome.path
    if outcome.status == "interrupted":
        finished = outcome.results_path
        # Unwrapped (the terminal wraps it) and unmarked: the command must copy whole, the
        # path never broken onto a line of its own, nor its [brackets] read as markup.
        console.print(
            f"interrupted: finished points are in {finished}; finish with linbench {command} --resume {path}",
            markup=False,
            soft_wrap=True,
        )
        raise typer.Exit(INTERRUPTED_EXIT)
    if outcome.failure is not None:
        exit_usage_error(
            f"{outcome.failure}; the finished points are kept in {path}: "
            f"make room, then finish with linbench {command} --resume {path}"
        )
    rows, meta = outcome.rows, outcome.meta
    if not quiet:
        for table in summary_tables(rows, prepared.plan.targets.baselines):
            console.print(table)
    busy = load_warning(meta)
    if busy and not quiet:
        console.print(f"[yellow]warning:[/] {escape(busy)}", soft_wrap=True)
    notes = run_notes(rows, meta)
    if not quiet:
        for note in notes:
            console.print(f"note: {note}", markup=False, soft_wrap=True)
    # --quiet keeps its single summary line
    tail = "".join(f"; warning: {line}" for line in ([busy] if busy else []) + notes) if quiet else ""
    overhead = Overhead.read(meta)
    if not quiet and overhead is not None:
        console.print(overhead_line(overhead), markup=False, soft_wrap=True)
    if not quiet and (took := _estimate_line(meta)):
        console.print(took, markup=False, soft_wrap=True)
    failed = failed_rows(rows)
    summary = f"{status_counts(rows)} -> {outcome.results_path}{failure_note(failed, allow_failures)}{tail}"
    console.print(summary, markup=False, soft_wrap=True)
    if failed and not allow_failures:
        raise typer.Exit(1)
