"""How an agent process is started: its command line and its environment.

Everything that binds an agent to its GPU is in the environment given to ``exec``, so it is
in place before the interpreter (and anything it imports) starts: CUDA_VISIBLE_DEVICES names
the GPU by UUID, CUDA_DEVICE_ORDER makes indices mean nvidia-smi's, and the thread counts
match the agent's cores. The agent then pins itself to those cores before importing torch.
Every executor (local, Slurm, Ray) starts agents with this.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from linbench.fleet.cpulist import format_cpulist
from linbench.fleet.inventory import CPU_AGENTS_ENV, CPU_MODEL
from linbench.fleet.placement import Placement

AGENT_MODULE = "linbench.fleet.agent"
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


@dataclass(frozen=True)
class AgentSpec:
    """What an agent is told at start: its device, its cores, and who started it."""

    visible_id: str  # what CUDA_VISIBLE_DEVICES holds: the GPU's UUID (or a MIG slice's)
    gpu_uuid: str  # the physical GPU
    gpu_index: int
    gpu_pci: str
    gpu_name: str
    numa_node: int | None
    cores: tuple[int, ...]
    numa_local: bool = True
    shared_cores: bool = False
    host: str = ""  # the agent's host, as its inventory names it (filled in by the agent)
    runner: str = "linbench"  # the point runner: linbench, or module:function (linbench/fleet/seam.py)
    busy_wait_s: float = 0.0  # how long a point waits for a foreign process to leave the GPU
    parent_pid: int | None = None  # die with this process (the local coordinator)

    @classmethod
    def of(cls, placement: Placement, **settings: Any) -> AgentSpec:
        device = placement.choice.device
        return cls(
            visible_id=placement.choice.visible_id,
            gpu_uuid=device.uuid,
            gpu_index=device.index,
            gpu_pci=device.pci_bus_id,
            gpu_name=device.name,
            numa_node=placement.numa_node,
            cores=placement.cores,
            numa_local=placement.numa_local,
            shared_cores=placement.shared_cores,
            **settings,
        )

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> AgentSpec:
        data = json.loads(text)
        data["cores"] = tuple(data["cores"])
        return cls(**data)

    @property
    def mig_uuid(self) -> str | None:
        return None if self.visible_id == self.gpu_uuid else self.visible_id

    def where(self, shard: str, attempt: int, cores: Iterable[int], agent_pid: int | None) -> dict[str, Any]:
        """The ``where`` columns (linbench/results/schema.py) of a row this agent measured in
        ``attempt`` of ``shard`` on ``cores``, but its times (started_at, finished_at,
        foreign_gpu_procs), which are the point's own."""
        return {
            **{"host": self.host, "gpu_uuid": self.gpu_uuid, "mig_uuid": self.mig_uuid, "gpu_pci": self.gpu_pci},
            **{"gpu_index": self.gpu_index, "numa_node": self.numa_node, "cpu_affinity": format_cpulist(cores)},
            **{"numa_local": self.numa_local, "shared_cores": self.shared_cores, "shard": shard, "attempt": attempt},
            "agent_pid": agent_pid,
        }


def agent_env(spec: AgentSpec, base: Mapping[str, str]) -> dict[str, str]:
    """The agent's environment: ``base`` with its GPU and thread counts set."""
    env = dict(base)
    env["CUDA_VISIBLE_DEVICES"] = spec.visible_id
    env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    # A thread per core it owns; one where agents share cores (--oversubscribe): several agents'
    # thread pools on the same cores make each wait at its barriers for descheduled threads.
    threads = 1 if spec.shared_cores else max(1, len(spec.cores))
    for name in THREAD_VARIABLES:
        env[name] = str(threads)
    env["LINBENCH_AGENT_CORES"] = format_cpulist(spec.cores)
    if spec.gpu_name == CPU_MODEL and spec.gpu_uuid.startswith("CPU-"):  # --devices cpu:N
        env[CPU_AGENTS_ENV] = str(spec.gpu_index + 1)  # an inventory that holds this agent's CPU-<index>
    return env


def agent_command(spec: AgentSpec, python: str = sys.executable) -> list[str]:
    """The agent's command line, serving work read from its standard input."""
    return [python, "-m", AGENT_MODULE, "serve", spec.to_json()]
