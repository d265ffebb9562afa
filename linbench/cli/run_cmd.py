"""``linbench run``: sweep impls over sizes, measure each point in a worker, write one CSV.

All input is checked before the run folder is made, so a typo never leaves a folder of
half-written results behind.
"""

from __future__ import annotations

import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from linbench.cli.common import DEVICE_HELP, PLUGIN_HELP, load_plugins, resolve_device, stdout_console
from linbench.cli.errors import CliUsageError, usage_errors

if TYPE_CHECKING:
    from rich.console import Console

    from linbench.results.store import RunStore
    from linbench.runner.plan import RunPlan
    from linbench.sweep.spec import SweepSpec

# More points than this deserve a warning before the run starts.
LARGE_SWEEP = 300
RANGE_HELP = "a size (4k), a list (512,1k), powers of two (1k..64k), or stepped (1k..8k:x2, 64..256:+64)"
HELP = {
    "seq": f"Sequence lengths: {RANGE_HELP}. Default: 1k..16k.",
    "dim_v": "Head dims of v, crossed with --dim. Default: the same as --dim.",
    "mode": "fwd, bwd, fwdbwd (comma list). Default: fwd.",
    "timeout_s": "Limit per point, seconds. Default: 120.",
    "quiet": "No progress display; a summary line at the end.",
    "budget_s": "Seconds of timed repetitions per point. Default: 1 on CPU, 0.5 on GPU.",
}


def run_command(
    variant: Annotated[
        list[str] | None,
        typer.Option("--variant", help="NAME or NAME:IMPL (repeatable or comma list); 'all' for every variant."),
    ] = None,
    baseline: Annotated[
        list[str] | None, typer.Option("--baseline", help="Baselines to compare with. Default: softmax, every impl.")
    ] = None,
    no_baseline: Annotated[bool, typer.Option("--no-baseline", help="Run no baseline.")] = False,
    seq: Annotated[str | None, typer.Option("--seq", help=HELP["seq"])] = None,
    batch: Annotated[str | None, typer.Option("--batch", help="Batch sizes, same grammar. Default: 1.")] = None,
    heads: Annotated[str | None, typer.Option("--heads", help="Head counts. Default: 8.")] = None,
    dim: Annotated[str | None, typer.Option("--dim", help="Head dims of q and k (and v). Default: 64.")] = None,
    dim_v: Annotated[str | None, typer.Option("--dim-v", help=HELP["dim_v"])] = None,
    dtype: Annotated[list[str] | None, typer.Option("--dtype", help="fp32, bf16, fp16 (comma list).")] = None,
    mode: Annotated[list[str] | None, typer.Option("--mode", help=HELP["mode"])] = None,
    causal: Annotated[bool, typer.Option("--causal", help="Causal masking (the default).")] = False,
    bidirectional: Annotated[bool, typer.Option("--bidirectional", help="No masking.")] = False,
    device: Annotated[str | None, typer.Option("--device", help=DEVICE_HELP)] = None,
    suite: Annotated[Path | None, typer.Option("--suite", help="A TOML suite; flags override its keys.")] = None,
    out: Annotated[Path, typer.Option("--out", help="Where run folders are made.")] = Path("results"),
    resume: Annotated[
        Path | None, typer.Option("--resume", help="Finish the run in this folder: only its missing points run.")
    ] = None,
    plugin: Annotated[list[Path] | None, typer.Option("--plugin", help=PLUGIN_HELP)] = None,
    timeout_s: Annotated[float | None, typer.Option("--timeout-s", help=HELP["timeout_s"])] = None,
    budget_s: Annotated[float | None, typer.Option("--budget-s", help=HELP["budget_s"])] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help=HELP["quiet"])] = False,
) -> None:
    """Measure time and peak memory of attention impls across sizes; write results.csv and meta.json."""
    with usage_errors():
        masking = _masking(causal, bidirectional)
    flags: dict[str, Any] = {
        "variant": variant or None,
        "baseline": baseline or None,
        "no_baseline": no_baseline or None,
        "seq": seq,
        "batch": batch,
        "heads": heads,
        "dim": dim,
        "dim_v": dim_v,
        "dtype": dtype or None,
        "mode": mode or None,
        "causal": masking,
        "device": device,
        "plugin": [str(p) for p in plugin] if plugin else None,
        "budget_s": budget_s,
    }
    console = stdout_console()
    with usage_errors():
        spec, store = _load(flags, suite, resume, timeout_s)
        plan = _plan(spec)
    if store is None:
        with usage_errors():
            store = _create_store(out, spec, plan)
    _run(spec, plan, store, console, quiet)


def _masking(causal: bool, bidirectional: bool) -> str | None:
    if causal and bidirectional:
        raise CliUsageError("--causal and --bidirectional exclude each other")
    return "causal" if causal else "bidirectional" if bidirectional else None


def _load(
    flags: dict[str, Any], suite: Path | None, resume: Path | None, timeout_s: float | None
) -> tuple[SweepSpec, RunStore | None]:
    """The spec, and for --resume the existing run folder."""
    from linbench.results.store import RunStore
    from linbench.sweep.spec import build_spec, spec_from_settings, with_timeout

    if resume is None:
        return build_spec(flags | {"timeout_s": timeout_s}, suite), None
    given = sorted(f"--{k.replace('_', '-')}" for k, v in flags.items() if v is not None)
    if given or suite is not None:
        what = ", ".join(given + (["--suite"] if suite else []))
        raise CliUsageError(f"--resume reruns the sweep recorded in {resume}/meta.json; drop {what}")
    store = RunStore.open(resume)
    meta = store.read_meta()
    try:
        recorded = meta["sweep"]
        spec = spec_from_settings(
            recorded["settings"], recorded["tables"], name=recorded["name"], suite=recorded.get("suite")
        )
    except (KeyError, TypeError):
        raise CliUsageError(f"{resume}/meta.json does not record a sweep to resume") from None
    return with_timeout(spec, timeout_s), store


def _plan(spec: SweepSpec) -> RunPlan:
    from linbench.results.meta import device_name
    from linbench.runner.plan import make_plan

    load_plugins([Path(p) for p in spec.plugins])
    device = resolve_device(spec.device)
    return make_plan(spec, device, device_name(device))


def _create_store(out: Path, spec: SweepSpec, plan: RunPlan) -> RunStore:
    from linbench.results.meta import collect_meta
    from linbench.results.store import RunStore

    try:
        store = RunStore.create(out, spec.name)
    except OSError as exc:
        raise CliUsageError(f"--out {out}: cannot create a run folder: {exc.strerror or exc}") from None
    meta = collect_meta(sys.argv[1:], plan.device)
    meta["sweep"] = {
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
    store.write_meta(meta)
    return store


def _announce(plan: RunPlan, pending: int, store: RunStore, console: Console) -> None:
    impls = len(plan.targets.pairs)
    console.print(
        f"linbench run: {pending} of {len(plan.points)} points to run ({impls} impls) on {plan.device} "
        f"({plan.device_name}) -> {store.path}",
        markup=False,
        soft_wrap=True,
    )
    for note in plan.targets.notes:
        console.print(f"  note: {note}", markup=False, soft_wrap=True)
    if pending > LARGE_SWEEP:
        console.print(f"[yellow]warning:[/] {pending} points is a large sweep; narrow the axes to finish sooner")


def _run(spec: SweepSpec, plan: RunPlan, store: RunStore, console: Console, quiet: bool) -> None:
    from linbench.cli.run_display import make_progress, row_line, status_counts, summary_tables
    from linbench.runner.sweep_runner import SweepRunner

    runner = SweepRunner(plan, store)
    pending = runner.pending()
    _announce(plan, len(pending), store, console)
    meta = store.read_meta()
    outcome = "interrupted"
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
        console.print(f"interrupted: finished points are in {store.results_path}; finish with --resume {store.path}")
        raise typer.Exit(130) from None
    finally:
        meta |= {"status": outcome, "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        store.write_meta(meta)
    planned = set(plan.targets.pairs)
    rows = [row for row in store.rows() if (row["variant"], row["impl"]) in planned]
    if not quiet:
        for table in summary_tables(rows, plan.targets.baselines):
            console.print(table)
    console.print(f"{status_counts(rows)} -> {store.results_path}", markup=False, soft_wrap=True)
