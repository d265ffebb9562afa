"""Which of a process's times the gate judges (CPU, no timing): a one-thread CPU process's paced
CPU time where both sides paced, else its CPU time, else a CPU process's p20, a GPU's median
(its graph replays first), and the median where a side recorded no p20."""

from __future__ import annotations

from linbench.gate.statistic import CPU_TIME, GRAPH, MEDIAN, P20, PACED, chosen, fell_back, process_times
from linbench.results.processes import ProcessResult


def test_graph_replays_first_then_a_cpu_p20_else_the_median() -> None:
    assert chosen(cpu=False, graph=True, p20=True) == GRAPH
    assert chosen(cpu=True, graph=False, p20=True) == P20
    assert chosen(cpu=False, graph=False, p20=True) == MEDIAN  # an eager GPU time keeps its median
    assert chosen(cpu=True, graph=False, p20=False) == MEDIAN
    assert chosen(cpu=True, graph=False, p20=True, cpu_time=True) == CPU_TIME
    assert chosen(cpu=True, graph=False, p20=True, cpu_time=True, paced=True) == PACED
    assert chosen(cpu=False, graph=False, p20=True, cpu_time=True, paced=True) == MEDIAN


def test_only_a_cpu_point_without_p20_fell_back() -> None:
    assert fell_back(True, MEDIAN) and not fell_back(True, P20) and not fell_back(False, MEDIAN)


def test_sides_whose_every_process_recorded_a_p20_are_judged_on_them() -> None:
    processes = [ProcessResult("ok", time_ms=m, time_ms_p20=p) for m, p in ((2.0, 1.8), (80.0, 1.81))]
    assert process_times(processes, processes, cpu=True) == (P20, [1.8, 1.81], [1.8, 1.81])
    assert process_times(processes, processes, cpu=False) == (MEDIAN, [2.0, 80.0], [2.0, 80.0])
    one_missing = [*processes, ProcessResult("ok", time_ms=3.0)]
    assert process_times(processes, one_missing, cpu=True) == (MEDIAN, [2.0, 80.0], [2.0, 80.0, 3.0])
    graphed = [ProcessResult("ok", time_ms=5.0, time_ms_p20=4.0, device_ms=1.0)]
    assert process_times(graphed, graphed, cpu=False) == (GRAPH, [1.0], [1.0])


def _one_thread(cpu_ms: float, paced: float | None = None, work: str | None = "matmul") -> ProcessResult:
    return ProcessResult(
        "ok", time_ms=cpu_ms, time_ms_p20=cpu_ms, cpu_ms_p20=cpu_ms, threads=1, paced_p20=paced, pace_work=work
    )


def test_the_paced_figure_is_judged_only_where_both_sides_paced_against_the_same_reference() -> None:
    paced = [_one_thread(2.0, 20.0), _one_thread(3.0, 20.5)]
    assert process_times(paced, paced, cpu=True) == (PACED, [20.0, 20.5], [20.0, 20.5])
    # A baseline from before the pace (or paced against other work): both sides on CPU time,
    # never one side's reference calls against the other's milliseconds.
    unpaced = [_one_thread(2.0, None, None), _one_thread(2.1, None, None)]
    assert process_times(unpaced, paced, cpu=True) == (CPU_TIME, [2.0, 2.1], [2.0, 3.0])
    other_work = [_one_thread(2.0, 40.0, "other"), _one_thread(2.1, 41.0, "other")]
    assert process_times(other_work, paced, cpu=True)[0] == CPU_TIME
