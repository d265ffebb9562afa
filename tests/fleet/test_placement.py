"""The placement plan (GPU → cores → NUMA node) as a pure function of a fake inventory and
a host CPU list. CPU only."""

from __future__ import annotations

import pytest
from fleet_helpers import gpu

from linbench.fleet.device_spec import DeviceChoice
from linbench.fleet.errors import PlacementError
from linbench.fleet.placement import core_groups, plan_placement, read_siblings

NODE0, NODE1 = tuple(range(0, 16)), tuple(range(16, 32))


def choices(*nodes: int | None) -> list[DeviceChoice]:
    cpus = {0: NODE0, 1: NODE1, None: ()}
    return [DeviceChoice(gpu(i, numa=n, cpus=cpus[n])) for i, n in enumerate(nodes)]


def all_cores(plan: tuple) -> list[int]:  # type: ignore[type-arg]
    return [c for p in plan for c in p.cores]


def test_eight_gpus_on_two_nodes_get_disjoint_local_cores() -> None:
    plan = plan_placement(choices(0, 0, 0, 0, 1, 1, 1, 1), range(32))
    assert len(all_cores(plan)) == len(set(all_cores(plan)))  # no core serves two agents
    for p in plan:
        assert p.numa_local and not p.shared_cores
        assert set(p.cores) <= set(NODE0 if p.numa_node == 0 else NODE1)
        assert len(p.cores) == 3  # one core held back leaves 15 on a node: 3 each, the same on both nodes
    assert plan[0].cores == (0, 1, 2)  # the lowest-numbered first


def test_one_core_is_held_back_for_the_coordinator() -> None:
    plan = plan_placement(choices(0, 0), range(16))
    assert [len(p.cores) for p in plan] == [7, 7]  # 16 - 1 held back, shared equally
    assert 15 not in all_cores(plan)  # the highest-numbered core is the one held back


def test_the_core_held_back_is_off_every_gpus_node_where_possible() -> None:
    plan = plan_placement(choices(0, 0), range(32))
    assert 31 not in all_cores(plan)
    assert all(set(p.cores) <= set(NODE0) for p in plan)


def test_a_fixed_count_per_gpu_and_smt_siblings_kept_together() -> None:
    siblings = {c: (c % 8, c % 8 + 8) for c in range(16)}  # cpu c and c+8 share a core
    plan = plan_placement(choices(0, 0), range(16), cores_per_gpu=2, siblings=siblings)
    assert plan[0].cores == (0, 1, 8, 9)
    assert plan[1].cores == (2, 3, 10, 11)


def test_unknown_numa_node_takes_any_core() -> None:
    plan = plan_placement(choices(None, None), range(8))
    assert all(p.numa_node is None and p.numa_local for p in plan)
    assert len(set(all_cores(plan))) == len(all_cores(plan)) == 6


def test_cores_off_the_gpus_node_are_used_and_said_to_be() -> None:
    # Allowed CPUs (a container, a Slurm task) hold only two cores of node 0's sixteen.
    plan = plan_placement(choices(0, 0), [0, 1, 20, 21, 22], cores_per_gpu=2, reserve=0)
    assert plan[0].cores == (0, 1) and plan[0].numa_local
    assert plan[1].cores == (20, 21) and not plan[1].numa_local
    assert "not NUMA-local" in plan[1].line


def test_too_few_cores_is_refused_in_one_line() -> None:
    with pytest.raises(PlacementError) as caught:
        plan_placement(choices(None, None, None, None), range(2))
    assert "--oversubscribe" in str(caught.value) and "\n" not in str(caught.value)
    with pytest.raises(PlacementError):
        plan_placement(choices(0, 0), range(16), cores_per_gpu=9)


def test_oversubscribed_agents_share_cores_and_say_so() -> None:
    plan = plan_placement(choices(None, None, None, None), range(2), min_cores=1, oversubscribe=True)
    assert [p.cores for p in plan] == [(0,), (1,), (0,), (1,)]
    assert all(p.shared_cores for p in plan)
    assert "(shared cores)" in plan[0].line


def test_the_plan_line_names_gpu_cores_and_node() -> None:
    (p,) = plan_placement(choices(1), range(32), cores_per_gpu=4)
    assert p.line == f"cuda:0 → {gpu(0).uuid}  Fake H100  PCI 0000:01:00.0  NUMA 1  cores 16-19"


def test_core_groups_and_siblings_from_sysfs(tmp_path) -> None:  # type: ignore[no-untyped-def]
    for cpu, text in ((0, "0,2"), (2, "0,2")):
        folder = tmp_path / "devices" / "system" / "cpu" / f"cpu{cpu}" / "topology"
        folder.mkdir(parents=True)
        (folder / "thread_siblings_list").write_text(text + "\n")
    siblings = read_siblings([0, 1, 2], tmp_path)
    assert siblings == {0: (0, 2), 1: (1,), 2: (0, 2)}
    assert core_groups([0, 1, 2], siblings) == [(0, 2), (1,)]
    assert core_groups([0, 1], siblings) == [(0,), (1,)]  # a sibling that is not allowed is left out
