"""The gate does not judge the time of a point either side measured oversubscribed (device:
cpu; synthetic runs): not a pass, not a regression, not even a gross one; its memory still is."""

from __future__ import annotations

from pathlib import Path

from synthetic_processes import write_process_run
from synthetic_runs import series

from linbench.gate.advice import judging_lines
from linbench.gate.compare import Thresholds, compare_runs
from linbench.gate.render import statistic_lines
from linbench.report.load import read_run
from linbench.results.schema import KEY_COLUMNS
from linbench.results.store import RunStore

LINEAR = lambda s: 0.01 * s  # noqa: E731


def _rows() -> list[dict]:
    return series("cosine", "chunked", LINEAR, seqs=(1024, 2048, 4096, 8192, 16384, 32768))


def _marked(rows: list[dict], index: int, time: float = 1.0, memory: float = 1.0) -> list[dict]:
    out = [dict(row) for row in rows]
    out[index].update(oversubscribed=True, neighbour_cpu=1.9)
    out[index]["time_ms"] *= time
    out[index]["peak_bytes"] *= memory
    return out


def _compare(tmp_path: Path, base: list[dict], cur: list[dict]):
    baseline = write_process_run(tmp_path / "base", base)
    current = write_process_run(tmp_path / "cur", cur)
    return compare_runs(read_run(baseline), read_run(current), Thresholds())


def test_a_50x_time_measured_oversubscribed_is_not_judged_even_as_gross(tmp_path: Path) -> None:
    comparison = _compare(tmp_path, _rows(), _marked(_rows(), 2, time=50.0))
    marked = comparison.points[2]
    assert marked.time_verdict == "oversubscribed" and not marked.gross
    assert {p.time_verdict for i, p in enumerate(comparison.points) if i != 2} == {"same"}
    assert not comparison.failed and comparison.verdict == "inconclusive"
    assert [p.key["seq"] for p in comparison.unjudged] == [4096]
    assert any("oversubscribed" in line for line in judging_lines(comparison, Thresholds()))


def test_a_baseline_measured_oversubscribed_is_not_judged_either(tmp_path: Path) -> None:
    comparison = _compare(tmp_path, _marked(_rows(), 0), _rows())
    assert comparison.points[0].time_verdict == "oversubscribed" and comparison.verdict == "inconclusive"


def test_the_memory_of_an_oversubscribed_point_is_still_gated(tmp_path: Path) -> None:
    comparison = _compare(tmp_path, _rows(), _marked(_rows(), 5, memory=1.5))
    assert comparison.points[5].memory_verdict == "regression" and comparison.failed


def test_a_point_measured_with_other_threads_on_each_side_is_not_judged(tmp_path: Path) -> None:
    # A quiet baseline took both cores, a busy current run one: slower and larger, by design.
    base = [row | {"threads": 2} for row in _rows()]
    cur = [row | {"threads": 2} for row in _rows()]
    cur[1].update(threads=1, time_ms=cur[1]["time_ms"] * 1.8, peak_bytes=cur[1]["peak_bytes"] * 0.8)
    comparison = _compare(tmp_path, base, cur)
    point = comparison.points[1]
    assert point.time_verdict == "other threads" and point.memory_verdict == "-"
    assert not comparison.failed and comparison.verdict == "inconclusive"
    assert {p.time_verdict for i, p in enumerate(comparison.points) if i != 1} == {"same"}


def _with_crowded_processes(folder: Path, row: dict, count: int, slower: float) -> None:
    """Add ``count`` oversubscribed processes of ``row``'s point to the run in ``folder``, each
    ``slower`` times its time (the scheduler's share)."""
    store = RunStore(folder)
    for n in range(count):
        process = {column: row.get(column) for column in KEY_COLUMNS}
        process.update(process=10 + n, pid=2000 + n, status="ok", oversubscribed=True, neighbour_cpu=1.9)
        process.update({c: row[c] * slower for c in ("time_ms", "time_ms_p20", "time_ms_p80")})
        process["peak_bytes"] = row.get("peak_bytes")
        store.append_process(process)


def test_oversubscribed_processes_are_left_out_where_enough_others_remain(tmp_path: Path) -> None:
    """5 clean processes a side and 3 crowded ones 1.5x slower on the current side: the point is
    judged on the clean ones (same), and the output says what was left out."""
    baseline = write_process_run(tmp_path / "base", _rows())
    rows = _marked(_rows(), 2)  # the row marked, as any of its processes marks it
    current = write_process_run(tmp_path / "cur", rows)
    _with_crowded_processes(current, rows[2], count=3, slower=1.5)
    comparison = compare_runs(read_run(baseline), read_run(current), Thresholds())
    point = comparison.points[2]
    assert point.time_verdict == "same" and point.left_out == 3 and point.processes == 5
    assert comparison.verdict == "pass"
    assert any("3 oversubscribed process(es) of 1 point(s) left out" in line for line in statistic_lines(comparison))


def test_a_side_with_fewer_clean_processes_than_the_gate_needs_stays_unjudged(tmp_path: Path) -> None:
    baseline = write_process_run(tmp_path / "base", _rows())
    rows = _marked(_rows(), 2)
    current = write_process_run(tmp_path / "cur", rows, offsets=(0.0, 0.001))  # two clean processes
    _with_crowded_processes(current, rows[2], count=3, slower=1.5)
    comparison = compare_runs(read_run(baseline), read_run(current), Thresholds())
    assert comparison.points[2].time_verdict == "oversubscribed" and comparison.points[2].left_out == 0
