"""Which of a process's times the gate judges (CPU, no timing): a CPU process's p20, a GPU's
median (its graph replays first), and the median where a side recorded no p20."""

from __future__ import annotations

from linbench.gate.statistic import GRAPH, MEDIAN, P20, chosen, fell_back, process_times
from linbench.results.processes import ProcessResult


def test_graph_replays_first_then_a_cpu_p20_else_the_median() -> None:
    assert chosen(cpu=False, graph=True, p20=True) == GRAPH
    assert chosen(cpu=True, graph=False, p20=True) == P20
    assert chosen(cpu=False, graph=False, p20=True) == MEDIAN  # an eager GPU time keeps its median
    assert chosen(cpu=True, graph=False, p20=False) == MEDIAN


def test_only_a_cpu_point_without_p20_fell_back() -> None:
    assert fell_back(True, MEDIAN) and not fell_back(True, P20) and not fell_back(False, MEDIAN)


def test_a_side_whose_every_process_recorded_a_p20_is_judged_on_them() -> None:
    processes = [ProcessResult("ok", time_ms=m, time_ms_p20=p) for m, p in ((2.0, 1.8), (80.0, 1.81))]
    assert process_times(processes, cpu=True) == (P20, [1.8, 1.81])
    assert process_times(processes, cpu=False) == (MEDIAN, [2.0, 80.0])
    one_missing = [*processes, ProcessResult("ok", time_ms=3.0)]
    assert process_times(one_missing, cpu=True) == (MEDIAN, [2.0, 80.0, 3.0])
    graphed = [ProcessResult("ok", time_ms=5.0, time_ms_p20=4.0, device_ms=1.0)]
    assert process_times(graphed, cpu=False) == (GRAPH, [1.0])
