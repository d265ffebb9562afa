"""``linbench run`` over several GPUs: plan once, write RUN/fleet.json, start the agents through
the executor asked for, merge the shards into RUN's results, report as a run does.

* ``--devices SPEC``: the local executor on this host (standard library only);
* ``--executor slurm`` / ``--executor ray``: a job array, or an actor per GPU;
* ``--shard K/N --out OUT``: part K here, under a launcher that gave this process one GPU (or,
  ``--devices cpu``, as a CPU agent on this process's cores), into the run folder
  ``OUT/<sweep name>`` every part shares; ``linbench merge OUT/<sweep name>`` once every part
  is done;
* ``--resume RUN`` of a fleet run: the points its attempts lack, on the devices given (or
  those it was started with).

Everything is checked before a folder is made; bad input is one line and exit 2.
"""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from linbench.cli.common import stdout_console
from linbench.cli.errors import INTERRUPTED_EXIT, CliUsageError, exit_usage_error, usage_errors
from linbench.cli.fleet_options import FleetOptions
from linbench.cli.fleet_started import Started

if TYPE_CHECKING:
    from linbench.fleet.inventory import Inventory
    from linbench.fleet.placement import Placement
    from linbench.runner.pipeline import Prepared
    from linbench.sweep.request import SweepRequest


def execute_fleet(
    request: SweepRequest,
    fleet: FleetOptions,
    *,
    resume: Path | None,
    out: Path,
    quiet: bool,
    allow_failures: bool,
    yes: bool,
    dry_run: bool,
) -> None:
    """Plan (or reopen) the fleet run, run it through its executor, and report (see the module)."""
    from linbench.cli.fleet_report import fleet_progress, print_plan, report_fleet_run

    console = stdout_console()
    with usage_errors():
        started = _resumed(request, fleet, resume) if resume is not None else _new(request, fleet, out)
        placements = _placements(started.options) if started.mode == "local" else ()
    why = started.prepared.too_large
    if why is not None and not yes and not started.resumed:
        exit_usage_error(f"this sweep is {why}; narrow the axes, or give --yes to run it anyway (--dry-run prints it)")
    if dry_run:
        print_plan(started, placements, console)
        return
    with usage_errors():
        started.plan.write(started.run_dir)
    print_plan(started, placements, console, announce=True)
    try:
        with fleet_progress(console, started, quiet) as heard:
            left = _run(started, started.options, placements, heard)
    except KeyboardInterrupt:
        console.print(f"interrupted: finish with linbench run --resume {started.run_dir}", markup=False)
        raise typer.Exit(INTERRUPTED_EXIT) from None
    report_fleet_run(started, left, console, quiet, allow_failures)


def _new(request: SweepRequest, fleet: FleetOptions, out: Path) -> Started:
    from linbench.fleet.plan import plan_fleet
    from linbench.runner.pipeline import prepare

    mode = fleet.mode
    _check_extra(mode)
    if mode == "shard":
        _check_part(fleet)
    prepared = prepare(request, out)
    _check_device(request, prepared, fleet.devices)
    command = shlex.join(["linbench", *sys.argv[1:]])
    # fleet.json keeps the options, so that --resume goes on as the run was started.
    plan = plan_fleet(prepared, command, executor=mode, devices=fleet.devices, options=asdict(fleet))
    run_dir = _part_folder(out, prepared.spec.name) if mode == "shard" else _new_folder(out, prepared.spec.name)
    return Started(run_dir, plan, prepared, mode, resumed=False, options=fleet, part=fleet.shard)


def _check_part(fleet: FleetOptions) -> None:
    """--shard K/N: a part, and this process given exactly one GPU (or told, --devices cpu, to
    be a CPU agent) to run it on."""
    from linbench.fleet.agent import visible_spec

    visible_spec(_part_inventory(fleet), "linbench", 0.0)


def _part_inventory(fleet: FleetOptions) -> Inventory:
    """A part's inventory: one CPU agent, CPU-<K>, for --devices cpu; else this host's GPUs."""
    from linbench.fleet.device_spec import cpu_agents
    from linbench.fleet.inventory import cpu_inventory, read_inventory
    from linbench.fleet.shards import parse_shard_spec

    part, _parts = parse_shard_spec(fleet.shard or "")
    return cpu_inventory(1, first=part) if cpu_agents(fleet.devices) else read_inventory()


def _resumed(request: SweepRequest, fleet: FleetOptions, run_dir: Path) -> Started:
    """A fleet run to finish: its plan from RUN/fleet.json, planned here again."""
    from linbench.fleet.plan import read_fleet_plan
    from linbench.runner.pipeline import prepare_recorded

    given = request.options()
    if given:
        raise CliUsageError(f"--resume reruns the sweep recorded in {run_dir}/fleet.json; drop {', '.join(given)}")
    plan = read_fleet_plan(run_dir)
    recorded = str(plan.settings.get("executor") or "")
    if not fleet.given:  # as it was started: its executor, devices and placement
        if recorded == "shard":
            raise CliUsageError(f"{run_dir} was run in --shard parts: run each again (it goes on), or give --devices")
        fleet = FleetOptions.recorded(plan.settings.get("options") or {})
    mode = fleet.mode
    if mode == "shard":
        raise CliUsageError(
            f"{run_dir} runs in --shard parts: run each part again (it goes on where it stopped), then linbench merge"
        )
    _check_extra(mode)
    prepared = prepare_recorded(plan.settings.get("sweep") or {}, run_dir)
    return Started(run_dir, plan, prepared, mode, resumed=True, options=fleet)


def _check_extra(mode: str) -> None:
    """A one-line error naming the install command when the executor's extra is missing."""
    if mode == "slurm":
        from linbench.fleet.slurm import load_submitit

        load_submitit()
    elif mode == "ray":
        from linbench.fleet.ray_executor import load_ray

        load_ray()


def _check_device(request: SweepRequest, prepared: Prepared, devices: str | None) -> None:
    """The agents each measure on their own GPU: the sweep must be a GPU sweep (a CPU one for CPU
    agents, and on the test suite's fake inventory, whose fake GPUs measure on the CPU)."""
    import torch

    from linbench.fleet.device_spec import cpu_agents
    from linbench.fleet.inventory import FAKE_DEVICES_ENV

    wanted = (request.device or "auto").strip().lower()
    if wanted not in ("auto", "cuda", "cpu"):
        raise CliUsageError(f"--device {request.device}: each agent measures on its own GPU; leave --device out")
    device = prepared.plan.device
    if cpu_agents(devices) is not None:
        if device.type != "cpu":
            raise CliUsageError(f"--devices {devices}: CPU agents measure a CPU sweep; add --device cpu")
    elif os.environ.get(FAKE_DEVICES_ENV):
        if device.type != "cpu":
            raise CliUsageError(f"{FAKE_DEVICES_ENV} (a test-only inventory) measures on the CPU; use --device cpu")
    elif device.type != "cuda" and not torch.cuda.is_available():
        build = "; this torch is a CPU-only build" if torch.version.cuda is None else ""
        what = f"--devices {devices}" if devices else "a sweep over several GPUs"
        raise CliUsageError(
            f"{what}: no CUDA device is here (torch sees none{build}); "
            "plan it where linbench sees a GPU of the kind the agents have"
        )
    elif device.type != "cuda":
        raise CliUsageError(
            f"this sweep runs on {device}: several GPUs take a GPU sweep (a CPU sweep runs alone on its host); "
            "plan it where linbench sees a GPU of the kind the agents have"
        )


def _part_folder(out: Path, name: str) -> Path:
    """The run folder every --shard part shares: ``out/<sweep name>``, the same path for every
    part (a plain run's name has a time stamp, which the parts would not agree on)."""
    from linbench.fleet.folders import FLEET_FILE

    if (out / FLEET_FILE).exists():  # --out used to name the run folder itself
        raise CliUsageError(
            f"--out {out} is a run folder (it holds {FLEET_FILE}); --out names the folder the run folder goes in, "
            "as for a plain run: give its parent folder to go on with it, or a new folder"
        )
    return out / name


def _new_folder(out: Path, name: str) -> Path:
    """A new run folder's path under ``out`` (RUN/fleet.json makes it), named as a run's is."""
    from linbench.results.store import utc_stamp

    stem = f"{utc_stamp()}-{name}"
    path, n = out / stem, 1
    while path.exists():
        n += 1
        path = out / f"{stem}-{n}"
    return path


def _placements(fleet: FleetOptions) -> tuple[Placement, ...]:
    """One agent per GPU of --devices, each on cores of its own."""
    from linbench.fleet.device_spec import inventory_for, select_devices
    from linbench.fleet.inventory import read_inventory
    from linbench.fleet.placement import plan_placement, read_siblings

    inventory = inventory_for(fleet.devices, read_inventory)
    choices = select_devices(fleet.devices or "", inventory, os.environ, allow_shared=fleet.allow_shared_gpu)
    cpus = os.sched_getaffinity(0)
    return plan_placement(
        choices,
        cpus,
        cores_per_gpu=fleet.cpus_per_gpu,
        oversubscribe=fleet.oversubscribe,
        siblings=read_siblings(cpus),
    )


def _run(started: Started, fleet: FleetOptions, placements: tuple[Placement, ...], heard: Any) -> list[str]:
    """Run the fleet through its executor; one line for each thing left undone."""
    from linbench.fleet.seam import default_runner

    run_dir, mode, runner = started.run_dir, started.mode, default_runner()
    if mode == "local":
        from linbench.fleet.local import run_local

        done = run_local(run_dir, placements, runner=runner, heard=heard)
        lines = [f"agent refused: {e}" for e in done.errors] + [f"card given up: {u}" for u in done.retired]
        return lines + [f"shard {s}: no agent left to run it" for s in done.unrun]
    if mode == "slurm":
        from linbench.fleet.slurm import SlurmOptions, run_slurm

        options = SlurmOptions(
            partition=fleet.slurm_partition,
            time_min=fleet.slurm_time,
            cpus_per_gpu=fleet.cpus_per_gpu or 2,
            max_gpus=fleet.max_gpus,
            node_exclusive=fleet.node_exclusive,
            nodes=fleet.nodes or 1,
            extra=fleet.slurm_extra(),
            oversubscribe=fleet.oversubscribe,
            runner=runner,
        )
        outcome = run_slurm(run_dir, started.plan, options)
        return [f"Slurm task for shards {', '.join(ids)} failed: {why}" for ids, why in outcome.failed]
    if mode == "ray":
        from linbench.fleet.ray_executor import RayOptions, run_ray

        ray_options = RayOptions(fleet.ray_address, fleet.max_gpus, fleet.cpus_per_gpu, fleet.oversubscribe, runner)
        result = run_ray(run_dir, started.plan, ray_options)
        return [f"Ray actor lost: {line}" for line in result.lost] + [f"shard {s}: {w}" for s, w in result.failed]
    return _run_part(started, fleet, heard, runner)


def _run_part(started: Started, fleet: FleetOptions, heard: Any, runner: str) -> list[str]:
    """--shard K/N: this process is the agent, on the one GPU its launcher gave it."""
    from linbench.fleet.agent import Events, run_part
    from linbench.fleet.errors import FleetError

    try:
        events = Events(heard=lambda event: heard("", event))
        run_part(started.run_dir, fleet.shard, runner, 0.0, events, inventory=_part_inventory(fleet))
    except FleetError as exc:
        exit_usage_error(str(exc))
    return []
