"""The Ray executor (linbench/fleet/ray_executor.py) started for real, with fake GPUs and a
two-node local cluster: one actor per GPU, each seeing its own and running agents as
subprocesses; an agent killed mid-point is a crashed row; a node lost mid-run loses no row.
CPU only: the rows come from the test-only fake runner. Skipped without the ray extra
(pip install "linbench[ray]")."""

from __future__ import annotations

import csv
import importlib.util
import os
import signal
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from fake_runner import FAKE
from fleet_attempts import new_plan
from fleet_helpers import FakeInventory, fake_inventory_json, on_stall, sweep_keys, write_json

from linbench.fleet.inventory import FAKE_DEVICES_ENV
from linbench.fleet.merge import merge_run
from linbench.fleet.plan import read_fleet_plan
from linbench.fleet.ray_executor import RayOptions, run_ray
from linbench.results.schema import KEY_COLUMNS

# Ray is imported by the tests that run, not at collection (0.6 s in every test worker).
pytestmark = [
    pytest.mark.ray,
    pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="could not import 'ray': not installed"),
]
WAIT_S = 300


class Probe:
    """An actor asking Ray for a GPU as the executor's do: where did it land?"""

    def where(self) -> tuple[str, list[Any], str]:
        import ray

        return ray.get_runtime_context().get_node_id(), ray.get_gpu_ids(), os.environ["CUDA_VISIBLE_DEVICES"]


@pytest.mark.extended
def test_each_actor_gets_a_gpu_of_its_own() -> None:
    import ray

    ray.init(num_cpus=2, num_gpus=4, include_dashboard=False, log_to_driver=False)
    try:
        probe = ray.remote(num_gpus=1, num_cpus=0, max_restarts=0)(Probe)
        actors = [probe.remote() for _ in range(4)]
        places = ray.get([a.where.remote() for a in actors], timeout=WAIT_S)
        assert sorted(cvd for _, _, cvd in places) == ["0", "1", "2", "3"]
        assert sorted(ids[0] for _, ids, _ in places) == [0, 1, 2, 3]
        assert ray.available_resources().get("GPU", 0) == 0  # a fifth actor would wait, never share
    finally:
        ray.shutdown()


def rows(run: Path) -> list[dict[str, str]]:
    with (run / "results.csv").open(newline="") as handle:
        return list(csv.DictReader(handle))


def keys(table: list[dict[str, str]]) -> list[tuple[str, ...]]:
    return [tuple(r[c] for c in KEY_COLUMNS) for r in table]


def test_the_ray_executor_runs_an_actor_per_gpu_and_merges(fake_gpus: FakeInventory, tmp_path: Path) -> None:
    fake_gpus(4)
    run = tmp_path / "run"
    new_plan(run, sweep_keys())
    outcome = run_ray(run, read_fleet_plan(run), RayOptions(oversubscribe=True, runner=FAKE))
    assert outcome.failed == [] and outcome.lost == []
    assert sorted(outcome.gpus) == [f"node-a GPU-node-a-{i:04d}" for i in range(4)]  # one actor a GPU
    merge_run(run)
    table = rows(run)
    assert keys(table) == sweep_keys() and {r["status"] for r in table} == {"ok"}
    for shard in {r["shard"] for r in table}:  # each scenario on one card
        assert len({r["gpu_uuid"] for r in table if r["shard"] == shard}) == 1


@pytest.mark.extended
def test_an_agent_killed_in_its_actor_is_a_crashed_row_and_the_actor_goes_on(
    fake_gpus: FakeInventory, tmp_path: Path
) -> None:
    marker = tmp_path / "stalled"
    fake_gpus(2, stall={"seq": "256", "marker": str(marker)})
    run = tmp_path / "run"
    new_plan(run, sweep_keys())
    niceness: list[int] = []

    def kill(pid: int) -> None:
        niceness.append(os.getpriority(os.PRIO_PROCESS, pid))
        os.kill(pid, signal.SIGKILL)

    killer = on_stall(marker, kill, WAIT_S)
    outcome = run_ray(run, read_fleet_plan(run), RayOptions(oversubscribe=True, runner=FAKE))
    killer.join()
    # The agent measures at a normal priority, not at Ray's worker niceness of 15.
    assert niceness == [0]
    assert outcome.failed == [] and outcome.lost == []
    summary = merge_run(run)
    table = rows(run)
    assert keys(table) == sweep_keys() and Counter(r["status"] for r in table) == {"ok": 23, "crashed": 1}
    (crashed,) = [r for r in table if r["status"] == "crashed"]
    assert f"(pid {marker.read_text().strip()}) died (signal 9)" in crashed["error"]
    assert summary.shards[crashed["shard"]] == [1, 2]  # the rest by a new agent of the same actor


def node_inventory(tmp_path: Path, host: str, marker: Path) -> dict[str, str]:
    """The environment of a Ray node whose host is ``host``, with 2 fake GPUs of its own."""
    data = fake_inventory_json(2, host=host) | {"stall": {"seq": "256", "marker": str(marker)}}
    return {FAKE_DEVICES_ENV: str(write_json(tmp_path / f"{host}.json", data))}


@pytest.mark.extended
def test_a_node_lost_mid_run_loses_no_row(
    fake_gpus: FakeInventory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ray
    from ray.cluster_utils import Cluster

    marker = tmp_path / "stalled"
    fake_gpus(1)  # the driver's: it plans nothing on it, its nodes have their own
    run = tmp_path / "run"
    new_plan(run, sweep_keys())
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(sys.path))  # the nodes' workers import linbench as here
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "num_gpus": 0, "include_dashboard": False})
    try:
        envs = [node_inventory(tmp_path, host, marker) for host in ("node-a", "node-b")]
        nodes = {env[FAKE_DEVICES_ENV]: cluster.add_node(num_cpus=1, num_gpus=2, env_vars=env) for env in envs}
        cluster.wait_for_nodes()

        lost_hosts: list[str] = []

        def lose_node_of(pid: int) -> None:  # the node whose inventory the stalled agent read
            environ = Path(f"/proc/{pid}/environ").read_text().split("\0")
            mine = next(item.split("=", 1)[1] for item in environ if item.startswith(f"{FAKE_DEVICES_ENV}="))
            lost_hosts.append(Path(mine).stem)
            cluster.remove_node(nodes[mine])

        remover = on_stall(marker, lose_node_of, WAIT_S)
        options = RayOptions(address=cluster.address, oversubscribe=True, runner=FAKE)
        outcome = run_ray(run, read_fleet_plan(run), options)
        remover.join()
    finally:
        ray.shutdown()
        cluster.shutdown()
    assert len(outcome.lost) >= 1 and outcome.failed == []  # the lost node's actors, reported
    summary = merge_run(run)
    table = rows(run)
    assert keys(table) == sweep_keys() and {r["status"] for r in table} == {"ok"}  # every point once
    # The lost node's shards (one, or both where Ray placed both actors on it), each started
    # over on a card of the other node.
    restarted = [shard for shard, attempts in summary.shards.items() if attempts != [1]]
    assert 1 <= len(restarted) <= 2 and len(lost_hosts) == 1
    for shard in restarted:
        hosts = {r["host"] for r in table if r["shard"] == shard}
        assert len(hosts) == 1 and lost_hosts[0] not in hosts, (shard, hosts, lost_hosts)
