"""Ray with fake GPUs and fake nodes: one actor per GPU, each seeing its own, running agents
(as subprocesses) on parts of a plan; a node lost mid-run loses no row. CPU only; skipped
without the ray extra (pip install "linbench[ray]")."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fleet_helpers import FakeInventory, sweep_keys

from linbench.fleet.folders import write_plan
from linbench.fleet.merge import merge_run
from linbench.fleet.shards import make_shards, plan_hash
from linbench.results.schema import KEY_COLUMNS

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.ray
WAIT_S = 300


@ray.remote(num_gpus=1, num_cpus=0, max_restarts=0)
class AgentActor:
    """What the Ray executor will start per GPU: an actor that runs the agent as a subprocess,
    in an environment of its own (Ray's worker has imported things and set OMP_NUM_THREADS)."""

    def where(self) -> tuple[str, list[Any], str]:
        return ray.get_runtime_context().get_node_id(), ray.get_gpu_ids(), os.environ["CUDA_VISIBLE_DEVICES"]

    def run_part(self, run_dir: str, part: str, env: dict[str, str]) -> int:
        env = env | {"CUDA_VISIBLE_DEVICES": os.environ["CUDA_VISIBLE_DEVICES"]}
        command = [sys.executable, "-m", "linbench.fleet.agent", "part", "--runner", "fake", "--run-dir", run_dir]
        command += ["--part", part]
        return subprocess.run(command, env=env, capture_output=True, timeout=WAIT_S).returncode


def test_each_actor_gets_a_gpu_of_its_own() -> None:
    ray.init(num_cpus=2, num_gpus=4, include_dashboard=False, log_to_driver=False)
    try:
        actors = [AgentActor.remote() for _ in range(4)]
        places = ray.get([a.where.remote() for a in actors], timeout=WAIT_S)
        assert sorted(cvd for _, _, cvd in places) == ["0", "1", "2", "3"]
        assert sorted(ids[0] for _, ids, _ in places) == [0, 1, 2, 3]
        assert ray.available_resources().get("GPU", 0) == 0  # a fifth actor would wait, never share
    finally:
        ray.shutdown()


def test_a_lost_node_loses_no_row(fake_gpus: FakeInventory, tmp_path: Path) -> None:
    from ray.cluster_utils import Cluster

    marker = tmp_path / "stalled"
    fake_gpus(2, stall={"seq": "256", "marker": str(marker)})
    run = tmp_path / "run"
    shards = make_shards(sweep_keys())
    write_plan(run, shards, plan_hash(shards), {})
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "num_gpus": 0, "include_dashboard": False})
    try:
        nodes = [cluster.add_node(num_cpus=1, num_gpus=2) for _ in range(2)]
        ray.init(address=cluster.address, log_to_driver=False)
        cluster.wait_for_nodes()
        actors = [AgentActor.remote() for _ in range(4)]
        homes = [node for node, _, _ in ray.get([a.where.remote() for a in actors], timeout=WAIT_S)]
        assert len(set(homes)) == 2  # per-node GPU indices: host and UUID, not the index, name a card
        env = dict(os.environ) | {"PYTHONPATH": os.pathsep.join(sys.path)}
        runs = {k: actors[k].run_part.remote(str(run), f"{k}/4", env) for k in range(4)}
        while not marker.exists() or not marker.read_text().endswith("\n"):
            ready, _ = ray.wait(list(runs.values()), timeout=0.1, num_returns=len(runs))
            assert len(ready) < len(runs), "no agent stalled"
        stalled = _part_of_agent(run, shards, int(marker.read_text()))
        lost_node = next(n for n in nodes if n.node_id == homes[stalled])
        cluster.remove_node(lost_node)  # the node with the stalled agent goes away
        survivors = [a for a, home in zip(actors, homes, strict=True) if home != lost_node.node_id]
        failed = []
        for k, ref in runs.items():
            try:
                assert ray.get(ref, timeout=WAIT_S) == 0
            except ray.exceptions.RayActorError:
                failed.append(k)
        assert stalled in failed
        for i, k in enumerate(failed):  # requeue the lost node's parts on the others
            assert ray.get(survivors[i % len(survivors)].run_part.remote(str(run), f"{k}/4", env), timeout=WAIT_S) == 0
    finally:
        ray.shutdown()
        cluster.shutdown()
    merge_run(run)
    with (run / "results.csv").open() as handle:
        rows = [tuple(r[c] for c in KEY_COLUMNS) for r in csv.DictReader(handle)]
    assert rows == sweep_keys()  # every point once, in plan order


def _part_of_agent(run: Path, shards: Any, pid: int) -> int:
    """The part (of 4) whose shard the agent ``pid`` is running: its attempt's meta says."""
    from linbench.fleet.shards import select_part

    for folder in (run / "shards").glob("*/attempt-*"):
        if json.loads((folder / "meta.json").read_text())["fleet"]["agent_pid"] == pid:
            return next(k for k in range(4) if folder.parent.name in {s.id for s in select_part(shards, f"{k}/4")})
    raise AssertionError(f"no attempt of agent {pid}")
