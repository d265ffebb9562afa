"""The options of ``linbench run`` that spread one sweep over several GPUs (docs/scale-out.md),
read into one FleetOptions and checked together: each bad combination is one line, exit 2."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Annotated, Any

import typer

from linbench.cli.errors import CliUsageError

EXECUTORS = ("local", "slurm", "ray")
# Tried on a CPU with fake GPUs, a one-node Slurm and a local Ray only (docs/scale-out.md).
EXPERIMENTAL = "experimental: not yet run on a multi-GPU node"
PANEL = "Several GPUs (docs/scale-out.md)"
HELP = {
    "devices": f"({EXPERIMENTAL}) Spread the sweep over these GPUs of this host, one agent each: cuda:0-7, cuda:0,2, "
    "GPU-<uuid>,... or all (the local executor); cpu:N for N CPU agents on cores of their own "
    "(a CPU sweep, to try this without GPUs). With --shard, only cpu: run the part on this process's cores.",
    "shard": "Run part K of N (K from 0) of the sweep here, on the one GPU this process was given "
    "(a Slurm array task, a Kubernetes Indexed Job); --out names the folder the run folder every "
    "part shares goes in, as for a plain run.",
    "executor": "Who starts the agents: local (--devices), slurm (a job array; pip install "
    "'linbench\\[slurm]') or ray (one actor per GPU; pip install 'linbench\\[ray]'); slurm and ray are "
    f"{EXPERIMENTAL}.",
    "node_exclusive": "slurm: a whole node per task (--exclusive), the local executor on all its GPUs: "
    "nothing else shares the host. For gate and publication runs.",
    "nodes": "slurm --node-exclusive: how many nodes share the shards. Default: 1.",
    "cpus_per_gpu": "Cores each agent gets, its own. Default: local and ray, an equal share of the "
    "GPU's NUMA node (at least 2); slurm, 2.",
    "max_gpus": "slurm and ray: the most GPUs used at once. Default: one per shard.",
    "oversubscribe": "Let agents share cores when there are too few (their rows say shared_cores).",
    "allow_shared_gpu": "Accept MIG slices (MIG-<uuid>) in --devices: they share their GPU's "
    "bandwidth, power and clocks.",
    "slurm_partition": "slurm: the partition to submit to.",
    "slurm_time": "slurm: each task's time limit, minutes. Default: from the sweep's estimate.",
    "slurm_option": "slurm: another sbatch option as KEY=VALUE, submitit's name (account=proj, qos=high), repeatable.",
    "ray_address": "ray: the cluster to join (auto, ray://head:10001). Default: a Ray on this host.",
}


@dataclass(frozen=True)
class FleetOptions:
    """How a sweep is spread over GPUs; all unset: an ordinary run on one device."""

    devices: str | None = None
    shard: str | None = None
    executor: str | None = None
    node_exclusive: bool = False
    nodes: int | None = None
    cpus_per_gpu: int | None = None
    max_gpus: int | None = None
    oversubscribe: bool = False
    allow_shared_gpu: bool = False
    slurm_partition: str | None = None
    slurm_time: int | None = None
    slurm_option: tuple[str, ...] = field(default=())
    ray_address: str | None = None

    @classmethod
    def recorded(cls, options: Mapping[str, Any]) -> FleetOptions:
        """The options fleet.json recorded (``asdict``), for --resume."""
        known = {f.name for f in fields(cls)}
        given = {k: v for k, v in options.items() if k in known}
        given["slurm_option"] = tuple(given.get("slurm_option") or ())
        return cls(**given)

    @property
    def given(self) -> bool:
        """Whether any of them was given (the run then goes through the fleet)."""
        return self != FleetOptions()

    @property
    def mode(self) -> str:
        """local, slurm, ray or shard (``--shard K/N``); CliUsageError for a mix that means nothing."""
        executor = (self.executor or "").strip().lower() or None
        if executor is not None and executor not in EXECUTORS:
            raise CliUsageError(f"--executor {self.executor!r}: use {', '.join(EXECUTORS)}")
        if self.shard is not None:
            cpu_part = (self.devices or "").strip().lower() in ("cpu", "cpu:1")
            if (self.devices is not None and not cpu_part) or executor is not None:
                raise CliUsageError(
                    "--shard K/N runs one part here, on the GPU a launcher gave this process (or, with "
                    "--devices cpu, on this process's cores); it takes no other --devices and no --executor"
                )
            return "shard"
        if executor in ("slurm", "ray") and self.devices is not None:
            raise CliUsageError(
                f"--devices names this host's GPUs; --executor {executor} takes its GPUs from "
                f"{'Slurm' if executor == 'slurm' else 'the Ray cluster'} (--max-gpus bounds them)"
            )
        mode = executor or "local"
        if mode == "local" and self.devices is None:
            raise CliUsageError("the local executor spreads a sweep over the GPUs --devices names (cuda:0-7, all)")
        self._check_mode_options(mode)
        return mode

    def _check_mode_options(self, mode: str) -> None:
        only = {
            "slurm": ("node_exclusive", "nodes", "slurm_partition", "slurm_time", "slurm_option"),
            "ray": ("ray_address",),
            "local": ("allow_shared_gpu",),
        }
        for owner, names in only.items():
            for name in names:
                if owner != mode and getattr(self, name) not in (None, False, ()):
                    raise CliUsageError(f"--{name.replace('_', '-')} is for --executor {owner}, not {mode}")
        if self.nodes is not None and not self.node_exclusive:
            raise CliUsageError("--nodes counts the whole nodes of --node-exclusive; give that too")
        if mode == "local" and self.max_gpus is not None:
            raise CliUsageError("--max-gpus bounds slurm and ray; on one host, --devices names the GPUs")
        self.slurm_extra()

    def slurm_extra(self) -> dict[str, str]:
        """--slurm-option KEY=VALUE as a dict; CliUsageError for one without '='."""
        extra = {}
        for item in self.slurm_option:
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                raise CliUsageError(f"--slurm-option {item!r} is not KEY=VALUE (account=proj)")
            extra[key.strip()] = value.strip()
        return extra


def _option(name: str, flag: str) -> Any:
    return typer.Option(flag, help=HELP[name], rich_help_panel=PANEL)


# The parameters run_cmd.py adds to ``linbench run``, typed once here.
Devices = Annotated[str | None, _option("devices", "--devices")]
Shard = Annotated[str | None, _option("shard", "--shard")]
Executor = Annotated[str | None, _option("executor", "--executor")]
NodeExclusive = Annotated[bool, _option("node_exclusive", "--node-exclusive")]
Nodes = Annotated[int | None, _option("nodes", "--nodes")]
CpusPerGpu = Annotated[int | None, _option("cpus_per_gpu", "--cpus-per-gpu")]
MaxGpus = Annotated[int | None, _option("max_gpus", "--max-gpus")]
Oversubscribe = Annotated[bool, _option("oversubscribe", "--oversubscribe")]
AllowSharedGpu = Annotated[bool, _option("allow_shared_gpu", "--allow-shared-gpu")]
SlurmPartition = Annotated[str | None, _option("slurm_partition", "--slurm-partition")]
SlurmTime = Annotated[int | None, _option("slurm_time", "--slurm-time")]
SlurmOption = Annotated[list[str] | None, _option("slurm_option", "--slurm-option")]
RayAddress = Annotated[str | None, _option("ray_address", "--ray-address")]


def fleet_options(options: dict[str, object]) -> FleetOptions:
    """The fleet's options out of ``linbench run``'s, by parameter name."""
    given = {f.name: options.get(f.name) for f in fields(FleetOptions)}
    given["slurm_option"] = tuple(options.get("slurm_option") or ())  # type: ignore[arg-type]
    for name in ("nodes", "cpus_per_gpu", "max_gpus", "slurm_time"):
        value = given[name]
        if value is not None and int(value) < 1:  # type: ignore[call-overload]
            raise CliUsageError(f"--{name.replace('_', '-')} {value}: give a whole number of at least 1")
    for name in ("node_exclusive", "oversubscribe", "allow_shared_gpu"):
        given[name] = bool(given[name])
    return FleetOptions(**given)  # type: ignore[arg-type]
