"""A sweep from request to results, in three steps: prepare, start, run.

- ``prepare`` checks everything and plans: the spec from the request (or from the run
  folder to resume), the plugins and the device, the points still to run, whether the device
  can hold them and about how long they take. It makes nothing, so a typo never leaves a
  folder of half-written results behind, and ``--dry-run`` stops here.
- ``start`` makes the run folder with its meta.json (a resumed run has one).
- ``run`` measures the pending points into it, and marks the run complete or interrupted in
  meta.json whatever happens (Ctrl-C, a full disk).

A run spread over several GPUs (linbench/fleet/) walks the same line in each agent, on the
sweep the coordinator planned (``prepare_recorded``: meta.json's ``sweep`` section), into a
folder made at an exact path (``start(..., at=)``), and measures only its shard's points
(``run_points``), with hooks around each point (linbench/runner/hooks.py).

The estimate counts the kernel build where planning made it (runner/sizing.py); meta.json's
``estimate`` keeps it beside the wall time the command then took, from planning on, and their
ratio (results/estimate_record.py), so every run checks the estimator.

``linbench run`` and ``linbench decode`` walk this line and print around it; a script walks
it through ``linbench.run_sweep`` (linbench/runner/sweeps.py). Nothing here prints or exits: bad input
raises a ValueError (RunSetupError, SpecError, DeviceError, ...) saying what to change.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from linbench.results.estimate_record import SECTION, EstimateRecord
from linbench.results.meta import SweepRecord
from linbench.results.record import row_key
from linbench.results.rows import as_read
from linbench.results.schema import KEY_COLUMNS
from linbench.results.store import RunStore, RunStoreWriteError
from linbench.runner.hooks import NO_HOOKS, PointHooks
from linbench.runner.lifecycle import RunSetupError, check_resumable, create_run, finish_run
from linbench.runner.plan import RunPlan
from linbench.runner.recorder import Listener
from linbench.runner.sizing import NO_BUILD, KernelBuild
from linbench.runner.sweep_runner import SweepRunner
from linbench.sweep.points import Point
from linbench.sweep.request import SweepRequest
from linbench.sweep.spec import SweepSpec

DEFAULT_OUT = Path("results")
ONLY_POINTS = "only_points"  # meta.json: the points a run measures, where not all of its sweep's


@dataclass(frozen=True)
class Prepared:
    """A checked, planned sweep that has not started: nothing is made yet."""

    spec: SweepSpec
    plan: RunPlan
    store: RunStore | None  # the run folder to resume; None for a new run
    pending: tuple[Point, ...]  # the plan's points without a row yet, in run order
    estimate_s: float  # about how long they take (linbench/sweep/estimate.py's rough model), the build included
    out: Path  # where a new run's folder is made
    build: KernelBuild = NO_BUILD  # the kernel build planning made, if any
    began: float = field(default_factory=time.monotonic)  # when planning began (time.monotonic)
    only: frozenset[tuple[str, ...]] | None = None  # the plan's points to measure (--only-points); None: all
    # The estimate were every point's processes to grow to --max-processes (None: as estimate_s).
    most_s: float | None = None
    # When the command that runs it began (time.monotonic, its process's start; None: run from a
    # caller's own process): meta.json's overhead then counts the whole command.
    command_began: float | None = None

    def estimate_record(self) -> EstimateRecord:
        """meta.json's ``estimate`` as the run starts."""
        return EstimateRecord(
            self.estimate_s, self.build.estimate_s, len(self.pending), self.store is not None, self.build.took_s
        )

    @property
    def duration(self) -> str:
        """The estimate in words: ``about 2 min``, and where points' processes may grow to
        --max-processes, ``about 2 min, up to 12 min if their processes disagree (at most 20
        a point)``."""
        from linbench.sweep.estimate import format_duration

        low = format_duration(self.estimate_s)
        most = self.most_s
        if most is None or format_duration(most) == low:
            return f"about {low}"
        limit = self.plan.processes.most
        return f"about {low}, up to {format_duration(most)} if their processes disagree (at most {limit} a point)"

    @property
    def too_large(self) -> str | None:
        """Why this new sweep should run only when its user insists (past MAX_POINTS points or
        MAX_ESTIMATE_S by the estimate), or None; a resumed run has been insisted on already."""
        from linbench.sweep.estimate import too_large

        return too_large(len(self.pending), self.estimate_s) if self.store is None else None

    @property
    def sweep(self) -> dict[str, Any]:
        """The sweep as meta.json's ``sweep`` section records it: what ``prepare_recorded``
        plans again (in a fleet agent) to the same points."""
        from linbench.runner.lifecycle import sweep_record

        return sweep_record(self.spec, self.plan).section()


@dataclass(frozen=True)
class Outcome:
    """How a run ended, and what it left in its folder."""

    status: str  # "complete"; "interrupted" (Ctrl-C); "failed" (a write failed: see failure)
    path: Path  # the run folder
    meta: dict[str, Any]  # its meta.json as the run left it
    rows: list[dict[str, Any]]  # the results rows of the sweep's impls, typed as the listener hears them (rows.py)
    failure: str | None = None  # why a write failed (a full disk); the rows written stay, and it can resume

    @property
    def results_path(self) -> Path:
        return self.path / "results.csv"


def prepare(
    request: SweepRequest | None = None,
    out: Path = DEFAULT_OUT,
    *,
    resume: Path | None = None,
    mix: bool = False,
    repair: bool = True,
    only: frozenset[tuple[str, ...]] | None = None,
) -> Prepared:
    """Check and plan the sweep ``request`` asks for, or, with ``resume``, the one recorded in
    that run folder (the request may then change only ``timeout_s``, and names the command it
    expects: None takes the recorded one). A resumed run is refused on another device, torch
    or commit unless ``mix``; ``repair=False`` leaves the folder as it is (a dry run).
    ``only``: measure just these points of the plan (record.row_key's; RunSetupError for one
    the plan lacks); a resumed run keeps the ones it was started with (meta.json)."""
    from linbench.runner.sizing import fit_and_estimate, most_estimate

    began = time.monotonic()
    if mix and resume is None:  # dropped without a word, it would say a mixed run was allowed
        raise RunSetupError("--mix lets --resume go on where this machine differs from the run; give --resume")
    spec, store = _spec(request, resume, repair)
    plan, build = KernelBuild.around(lambda: plan_spec(spec))
    if store is not None:
        meta = store.read_meta()
        check_resumable(meta, plan, mix)
        only = recorded_only(meta)
    if only is not None:
        check_planned(only, plan, "")
    done = store.done_keys() if store is not None else set()
    pending = tuple(p for p in plan.points if p.key not in done and (only is None or p.key in only))
    estimate = fit_and_estimate(plan, pending) + build.estimate_s
    most = most_estimate(plan, pending) + build.estimate_s
    return Prepared(spec, plan, store, pending, estimate, out, build, began, only, most)


def check_planned(keys: Collection[tuple[str, ...]], plan: RunPlan, why: str) -> None:
    """RunSetupError when a point of ``keys`` (record.row_key's) is not one of ``plan``'s;
    ``why`` ends the message: what would make it so."""
    planned = {point.key for point in plan.points}
    stray = sorted(tuple(key) for key in keys if tuple(key) not in planned)
    if stray:
        raise RunSetupError(
            f"{len(stray)} of the {len(keys)} points asked for are not in the sweep as planned here "
            f"(first: {', '.join(stray[0])}){why}"
        )


def recorded_only(meta: Mapping[str, Any]) -> frozenset[tuple[str, ...]] | None:
    """The points a run was started to measure (meta.json's ``only_points``); None: all."""
    listed = meta.get(ONLY_POINTS)
    if not isinstance(listed, list):
        return None
    return frozenset(row_key(point) for point in listed if isinstance(point, dict))


def only_section(only: frozenset[tuple[str, ...]] | None) -> dict[str, Any]:
    """meta.json's ``only_points``: each point asked for as its key columns (none: empty)."""
    if only is None:
        return {}
    return {ONLY_POINTS: [dict(zip(KEY_COLUMNS, key, strict=True)) for key in sorted(only)]}


def prepare_recorded(sweep: Mapping[str, Any], out: Path = DEFAULT_OUT) -> Prepared:
    """Plan on this machine the sweep a meta.json ``sweep`` section records (SweepRecord), as
    ``--resume`` plans it, for a new folder: a fleet agent plans its coordinator's sweep so,
    and so gets the same points (on its own GPU). RunSetupError when it records none."""
    from linbench.runner.sizing import fit_and_estimate, most_estimate
    from linbench.sweep.spec import spec_from_settings

    began = time.monotonic()
    recorded = SweepRecord.read({"sweep": dict(sweep)})
    if recorded is None:
        raise RunSetupError("the sweep to run is not one a run's meta.json records (its sweep section)")
    spec = spec_from_settings(
        recorded.settings, recorded.tables, name=recorded.name, suite=recorded.suite, command=recorded.command
    )
    plan, build = KernelBuild.around(lambda: plan_spec(spec))
    estimate = fit_and_estimate(plan, plan.points) + build.estimate_s
    most = most_estimate(plan, plan.points) + build.estimate_s
    return Prepared(spec, plan, None, plan.points, estimate, out, build, began, most_s=most)


def start(
    prepared: Prepared,
    command: str | None = None,
    *,
    at: Path | None = None,
    meta: Mapping[str, Any] | None = None,
    ceilings: Mapping[str, Any] | None = None,
) -> RunStore:
    """The run folder to measure into: the resumed one, or a new one under ``prepared.out``
    (exactly at ``at``, when given) with its meta.json (RunSetupError when it cannot be made;
    nothing is left behind). ``command`` is what meta.json says made it (None: this
    process's linbench command line); ``meta`` adds the caller's sections; ``ceilings``
    are used as given instead of measured (lifecycle.create_run)."""
    sections = only_section(prepared.only) | dict(meta or {})
    store = prepared.store or create_run(
        prepared.out, prepared.spec, prepared.plan, command, at=at, meta=sections, ceilings=ceilings
    )
    store.update_meta({SECTION: prepared.estimate_record().section()})
    return store


def run(prepared: Prepared, store: RunStore, listener: Listener | None = None) -> Outcome:
    """Measure the pending points into ``store``; ``listener(event, point, row)`` hears "start"
    before each process and "row" when a point's row is written. Ctrl-C and a failed write
    (a full disk) end the run early; meta.json says so either way, and the run can resume."""
    runner = SweepRunner(prepared.plan, store)
    if listener is not None:
        runner.listener = _hearing_rows_as_read(listener)
    only = prepared.only
    return _drive(prepared, store, runner, [p for p in runner.pending() if only is None or p.key in only])


def run_points(
    prepared: Prepared,
    keys: Sequence[tuple[str, ...]],
    store: RunStore,
    hooks: PointHooks = NO_HOOKS,
    *,
    history: Iterable[Mapping[str, Any]] = (),
    listener: Listener | None = None,
) -> Outcome:
    """Measure the plan's points ``keys`` (record.row_key's) that ``store`` has no row for,
    in plan order, as ``run`` does, with ``hooks`` around each point. ``history``: results
    rows of these points written elsewhere before (an earlier attempt of a fleet shard, on
    the same GPU), which teach the skip rules as the store's own rows do. RunSetupError
    when a key is not a point of the plan (the sweep was planned differently here)."""
    runner = SweepRunner(prepared.plan, store, hooks=hooks)
    if listener is not None:
        runner.listener = _hearing_rows_as_read(listener)
    check_planned(keys, prepared.plan, "; its device, plugins or linbench version differ")
    runner.learn(history)
    wanted = {tuple(key) for key in keys}
    return _drive(prepared, store, runner, [point for point in runner.pending() if point.key in wanted])


def _hearing_rows_as_read(listener: Listener) -> Listener:
    """``listener``, handed each row as a reader of the run gets it back (rows.as_read): the
    same typed values as Outcome.rows and linbench.load_run, floats at the file's precision."""

    def hear(event: str, point: Point, row: dict[str, Any] | None) -> None:
        listener(event, point, None if row is None else as_read(row))

    return hear


def _drive(prepared: Prepared, store: RunStore, runner: SweepRunner, points: list[Point]) -> Outcome:
    """Run ``points`` and mark the run complete, interrupted or failed (see ``run``)."""
    runner.ledger.command_began = prepared.command_began
    status, failure, ctrl_c = "interrupted", None, False
    try:
        runner.run(points)
        status = "complete"
    except KeyboardInterrupt:
        ctrl_c = True
    except RunStoreWriteError as exc:  # a full disk: the rows written so far stay, the run can resume
        failure = str(exc)
    except OSError as exc:
        failure = f"{exc.strerror or exc}" + (f": {str(exc.filename)!r}" if exc.filename else "")
    finally:
        ended = "interrupted" if ctrl_c else "failed" if failure is not None else status
        record = prepared.estimate_record().ended(time.monotonic() - prepared.began, ended)
        try:
            meta = finish_run(store, status)
            store.update_meta({SECTION: record.section()})
            meta[SECTION] = record.section()
        except RunStoreWriteError as exc:  # meta.json keeps its last good state
            failure = failure or str(exc)
            meta = store.read_meta()
    ended = "interrupted" if ctrl_c else "failed" if failure is not None else status
    planned = set(prepared.plan.targets.pairs)
    rows = [row for row in store.rows() if (row["variant"], row["impl"]) in planned]
    return Outcome(ended, store.path, meta, rows, failure)


def plan_spec(spec: SweepSpec) -> RunPlan:
    """The plan of ``spec`` on this machine: its plugins loaded, its device resolved."""
    from linbench.devices import resolve_device
    from linbench.machine.facts import device_name
    from linbench.runner.plan import make_plan
    from linbench.variants.plugins import load_plugin_file

    for plugin in spec.plugins:
        load_plugin_file(Path(plugin))
    device = resolve_device(spec.device)
    return make_plan(spec, device, device_name(device))


def _spec(request: SweepRequest | None, resume: Path | None, repair: bool) -> tuple[SweepSpec, RunStore | None]:
    """The spec, and for ``resume`` the existing run folder (repaired for appending unless not
    ``repair``)."""
    from linbench.sweep.spec import build_spec, spec_from_settings, with_timeout

    if resume is None:
        return build_spec(request or SweepRequest()), None
    given = request.options() if request is not None else []
    if given:
        raise RunSetupError(f"--resume reruns the sweep recorded in {resume}/meta.json; drop {', '.join(given)}")
    store = RunStore.open(resume, repair=repair)
    recorded = SweepRecord.read(store.read_meta())
    if recorded is None:
        raise RunSetupError(f"{resume}/meta.json does not record a sweep to resume")
    made_by = recorded.command
    if request is not None and made_by != request.command:
        raise RunSetupError(f"{resume} was made by linbench {made_by}; resume it with linbench {made_by} --resume")
    spec = spec_from_settings(
        recorded.settings, recorded.tables, name=recorded.name, suite=recorded.suite, command=made_by
    )
    return with_timeout(spec, request.timeout_s if request is not None else None), store


__all__ = [
    "DEFAULT_OUT",
    "Outcome",
    "Prepared",
    "plan_spec",
    "prepare",
    "prepare_recorded",
    "run",
    "run_points",
    "start",
]
