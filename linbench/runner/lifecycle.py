"""A run folder's life: made with its provenance, reopened to resume, marked finished.

Everything here happens around the points, not between them: meta.json records what the
run measures and how (its sweep, timing policy, process protocol, schema version; the
device's ceilings follow from the run's first session), and a resumed run is refused where
this machine is not the one that measured it, so that one results.csv never silently mixes
two devices, torch builds or commits.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from linbench.results.meta import Provenance, SweepRecord, timing_protocol_section
from linbench.results.schema import SCHEMA_VERSION
from linbench.results.store import RunStore, RunStoreWriteError
from linbench.runner.plan import RunPlan
from linbench.sweep.spec import SweepSpec


class RunSetupError(ValueError):
    """A run folder that cannot be made or resumed; the message says what to do."""


def create_run(
    out: Path,
    spec: SweepSpec,
    plan: RunPlan,
    command: str | None = None,
    *,
    at: Path | None = None,
    meta: Mapping[str, Any] | None = None,
    ceilings: Mapping[str, Any] | None = None,
) -> RunStore:
    """A new run folder under ``out`` (or exactly at ``at``: RunStore.create_at) with
    meta.json written; nothing is left behind when it cannot be made. meta.json's
    ``command`` is ``command``, else this process's linbench command line; ``meta`` adds
    sections of the caller's (a fleet agent's ``fleet``); ``ceilings`` are recorded as given
    (one agent's shards share its device's), else measured by the run's first session."""
    from linbench.runner.provenance import collect_meta

    # The device's ceilings are measured by the run's first session (session.py), once it has
    # watched the machine and chosen the threads they are measured with.
    try:
        store = RunStore.create(out, spec.name) if at is None else RunStore.create_at(at)
    except OSError as exc:
        raise RunSetupError(f"--out {at or out}: cannot create a run folder: {exc.strerror or exc}") from None
    meta = collect_meta(sys.argv[1:], plan.device) | _plan_meta(spec, plan) | dict(meta or {})
    if command is not None:
        meta["command"] = command
    if ceilings is not None:
        meta["ceilings"] = dict(ceilings)
    meta["status"] = "running"
    try:
        store.write_meta(meta)
    except RunStoreWriteError as exc:
        if at is None:  # a folder made at ``at`` belongs to its caller, who claimed it
            shutil.rmtree(store.path, ignore_errors=True)  # nothing ran yet: leave no folder without meta.json
        raise RunSetupError(f"{exc}; no run folder was made") from None
    return store


def sweep_record(spec: SweepSpec, plan: RunPlan) -> SweepRecord:
    """meta.json's ``sweep`` section: enough to plan the sweep again (--resume, a fleet agent)."""
    return SweepRecord(
        command=spec.command,
        name=spec.name,
        suite=spec.suite,
        settings={k: v for k, v in spec.settings.items() if k != "sweep"},
        tables=spec.settings.get("sweep", []),
        impls=[f"{v}:{i}" for v, i in plan.targets.pairs],
        baselines=[f"{v}:{i}" for v, i in plan.targets.baselines],
        points=len(plan.points),
    )


def _plan_meta(spec: SweepSpec, plan: RunPlan) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "sweep": sweep_record(spec, plan).section(),
        "timing": plan.timing.__dict__ | {"threads": plan.threads, "cuda_graph": plan.cuda_graph},
        "timing_protocol": timing_protocol_section(plan.processes, plan.timing.budget_s),
        "params": plan.params_meta(),
        "timeout_s": plan.timeout_s,
        "cpu_memory_limit_bytes": plan.memory_limit_bytes,
    }


def check_resumable(meta: dict[str, Any], plan: RunPlan, mix: bool) -> None:
    """RunSetupError when this machine is not the one that measured the run (its device,
    torch or linbench commit differs), unless ``mix``."""
    if mix:
        return
    from linbench.machine.facts import git_sha

    here = Provenance(device_name=plan.device_name, torch=_torch_version(), git_sha=git_sha())
    differ = Provenance.read(meta).differences(here)
    if differ:
        raise RunSetupError(
            f"--resume would mix measurements: {'; '.join(differ)}; start a new run, or pass --mix to go on anyway"
        )


def _torch_version() -> str:
    import torch

    return torch.__version__


def finish_run(store: RunStore, outcome: str) -> dict[str, Any]:
    """Mark the run ``outcome`` (complete, interrupted) in meta.json and return the meta
    (RunStoreWriteError when it cannot be written: meta.json keeps its last good state)."""
    meta = store.read_meta()  # read again: the runner has added its load samples meanwhile
    meta |= {"status": outcome, "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    store.write_meta(meta)
    return meta


__all__ = ["RunSetupError", "check_resumable", "create_run", "finish_run", "sweep_record"]
