"""Idle cores, a worker's threads and the oversubscription mark, from made-up /proc/stat
readings (device: cpu; no test here reads the machine's own load)."""

from __future__ import annotations

import pytest

from linbench.machine.cpu_use import (
    CLOCK_TICKS,
    CpuTimes,
    idle_cores,
    neighbour_cores,
    oversubscribed,
    parse_proc_stat,
    threads_for,
)

STAT = """cpu  300 0 100 500 20 0 0 0 0 0
cpu0 100 0 50 300 10 0 0 0 0 0
cpu1 200 0 50 200 10 0 0 5 0 0
intr 1 2 3
ctxt 99
"""


def _times(busy: dict[int, int], idle: dict[int, int]) -> CpuTimes:
    return CpuTimes(busy, idle)


def test_proc_stat_is_read_per_cpu_with_steal_as_busy_and_iowait_as_idle() -> None:
    times = parse_proc_stat(STAT)
    assert times.busy == {0: 150, 1: 255} and times.idle == {0: 310, 1: 210}
    assert times.totals([1]) == (255, 210) and times.totals() == (405, 520)
    with pytest.raises(ValueError):
        parse_proc_stat("intr 1 2\n")


def test_idle_cores_count_linbench_s_own_time_as_free() -> None:
    before = _times({0: 0, 1: 0}, {0: 0, 1: 0})
    # One second on two cores: cpu0 idle throughout, cpu1 busy throughout.
    after = _times({0: 0, 1: 100}, {0: 100, 1: 0})
    assert idle_cores(before, after, own_ticks=0, cpus=[0, 1]) == pytest.approx(1.0)
    # Half of cpu1's busy time was linbench's own: that half is free for it.
    assert idle_cores(before, after, own_ticks=50, cpus=[0, 1]) == pytest.approx(1.5)
    # Only the CPUs this process may use are counted (a container's affinity).
    assert idle_cores(before, after, own_ticks=0, cpus=[1]) == pytest.approx(0.0)
    assert idle_cores(before, before, own_ticks=0, cpus=[0, 1]) is None


@pytest.mark.parametrize(
    ("idle", "threads"),
    [(2.0, 2), (1.85, 2), (1.79, 1), (1.0, 1), (0.3, 1), (0.0, 1), (None, 2)],
)
def test_a_worker_takes_one_thread_per_idle_core_and_at_least_one(idle: float | None, threads: int) -> None:
    # A core counts as idle when 80% of it was free; never fewer than one thread, never more
    # than torch's default.
    assert threads_for(idle, cores=2, most=2) == threads


def test_threads_stay_within_torch_s_default_and_the_cores() -> None:
    assert threads_for(15.0, cores=16, most=8) == 8
    assert threads_for(3.0, cores=4, most=8) == 3


def test_neighbour_cores_are_busy_time_less_this_process_s_own() -> None:
    before = _times({0: 0, 1: 0}, {0: 0, 1: 0})
    after = _times({0: 100, 1: 100}, {0: 0, 1: 0})  # both cores busy for one second
    # This process used one core's worth: the neighbours used the other, less a tick per CPU.
    expected = 1.0 - 2 / CLOCK_TICKS
    assert neighbour_cores(before, after, own_cpu_s=1.0, wall_s=1.0, cpus=[0, 1]) == pytest.approx(expected)
    assert neighbour_cores(before, after, own_cpu_s=2.0, wall_s=1.0, cpus=[0, 1]) == 0.0
    assert neighbour_cores(before, after, own_cpu_s=0.0, wall_s=0.0, cpus=[0, 1]) is None


@pytest.mark.parametrize(
    ("neighbours", "threads", "marked"),
    [
        (0.0, 2, False),  # alone on the machine
        (0.2, 2, False),  # a little housekeeping beside two threads
        (0.3, 2, True),  # two threads and a neighbour: one thread waits at every barrier
        (1.0, 1, False),  # a busy neighbour on the other core
        (1.2, 1, False),
        (1.3, 1, True),  # two neighbours' threads and ours share two cores
        (None, 2, False),  # not measured
    ],
)
def test_a_point_is_oversubscribed_when_neighbours_and_its_threads_want_more_cores(
    neighbours: float | None, threads: int, marked: bool
) -> None:
    assert oversubscribed(neighbours, threads, cores=2) is marked
