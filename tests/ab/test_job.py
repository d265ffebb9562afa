"""The A/B job without the CLI (CPU, no rounds run): what it refuses before making anything,
the run options a gate suite needs per round, the merged sides' record of the protocol, and
that it never reaches up into the command layer."""

from __future__ import annotations

from pathlib import Path

import pytest
from result_rows import result_row

from linbench.ab.job import AbError, AbJob, ab_folder, one_process_per_round, points_needing_more
from linbench.results.protocol import AB_ROUNDS, ProcessProtocol
from linbench.results.record import row_key
from linbench.results.store import RunStore


def test_no_rounds_is_refused_before_anything_is_made(tmp_path: Path) -> None:
    with pytest.raises(AbError, match="--rounds 0: give at least 1"):
        AbJob.prepare("HEAD", 0, tmp_path / "ab")
    assert not (tmp_path / "ab").exists()


def test_an_out_folder_that_holds_an_ab_is_refused(tmp_path: Path) -> None:
    (tmp_path / "ab" / "baseline").mkdir(parents=True)
    with pytest.raises(AbError, match="already holds baseline/"):
        ab_folder(tmp_path / "ab")
    assert ab_folder(tmp_path / "fresh") == (tmp_path / "fresh").absolute()


def test_a_suite_that_asks_for_several_processes_gets_one_per_round(tmp_path: Path) -> None:
    gate = tmp_path / "gate.toml"
    gate.write_text('command = "run"\nprocesses = 5\n')
    plain = tmp_path / "plain.toml"
    plain.write_text('command = "run"\n')
    assert one_process_per_round(gate) == ["--processes", "1", "--max-processes", "1"]
    assert one_process_per_round(plain) == []
    assert one_process_per_round(None) == []


def _round(folder: Path, time_ms: float) -> Path:
    store = RunStore.create(folder, "round")
    store.append(result_row(1024, time_ms=time_ms) | {"device_name": "Test CPU", "samples": 10})
    store.write_meta({"status": "complete"})
    return store.path


def test_the_merged_sides_record_the_rounds_as_their_protocol(tmp_path: Path) -> None:
    job = AbJob(tmp_path, "HEAD~1", "0123456789abcdef", 2, tmp_path / "ab")
    folders = {side: [_round(tmp_path / side / str(r), 10.0 + r) for r in range(2)] for side in ("baseline", "current")}
    merged = job.merge(folders, "linbench ab --baseline HEAD~1")
    meta = RunStore(merged["baseline"]).read_meta()
    assert meta["timing_protocol"] == ProcessProtocol.rounds(2).meta()
    assert meta["timing_protocol"]["order"] == AB_ROUNDS and meta["command"] == "linbench ab --baseline HEAD~1"
    assert meta["ab"]["revisions"]["baseline"] == {"revision": "HEAD~1", "sha": "0123456789abcdef"}
    assert merged["current"] == tmp_path / "ab" / "current"


def test_max_rounds_below_rounds_is_refused_and_its_default_is_the_protocols(tmp_path: Path) -> None:
    with pytest.raises(AbError, match="--max-rounds 3 is fewer than --rounds 5"):
        AbJob.prepare("HEAD", 5, tmp_path / "ab", max_rounds=3)
    assert ProcessProtocol.rounds(5, 20).meta()["max_processes"] == 20
    job = AbJob(tmp_path, "HEAD~1", "0123456789abcdef", 5, tmp_path / "ab", max_rounds=20)
    assert (job.protocol.wanted, job.protocol.most, job.protocol.order) == (5, 20, AB_ROUNDS)


def _rounds_of(
    folder: Path,
    times: list[float],
    status: str = "ok",
    p20s: list[float] | None = None,
    crowded: tuple[int, ...] = (),
    cpu_times: list[float] | None = None,
) -> list[Path]:
    paths = []
    for index, time_ms in enumerate(times):
        store = RunStore.create(folder / str(index), "round")
        row = result_row(1024, time_ms=time_ms) | {"device_name": "Test CPU", "samples": 10}
        if p20s is not None:
            row["time_ms_p20"] = p20s[index]
        if cpu_times is not None:  # one torch thread, its CPU time recorded
            row |= {"cpu_ms_p20": cpu_times[index], "threads": 1}
        if index in crowded:  # other processes took the worker's cores in this round
            row |= {"oversubscribed": True, "neighbour_cpu": 1.9}
        store.append(row | {"status": status if index == len(times) - 1 else "ok"})
        store.write_meta({"status": "complete"})
        paths.append(store.path)
    return paths


def test_a_point_whose_rounds_disagree_on_either_side_needs_another(tmp_path: Path) -> None:
    protocol = ProcessProtocol.rounds(3, 20)
    steady = _rounds_of(tmp_path / "steady", [10.0, 10.05, 9.98])  # within 2%
    spread = _rounds_of(tmp_path / "spread", [10.0, 11.0, 9.5])
    assert len(points_needing_more({"baseline": steady, "current": steady}, protocol)) == 0
    assert len(points_needing_more({"baseline": steady, "current": spread}, protocol)) == 1
    assert len(points_needing_more({"baseline": steady[:2], "current": steady[:2]}, protocol)) == 1  # fewer than asked
    # At the most, or failed in a round (broken whatever more rounds say): no more.
    assert len(points_needing_more({"baseline": steady, "current": spread}, ProcessProtocol.rounds(3, 3))) == 0
    failed = _rounds_of(tmp_path / "failed", [10.0, 11.0, 9.5], status="mismatch")
    assert len(points_needing_more({"baseline": steady, "current": failed}, protocol)) == 0


def test_rounds_that_still_disagree_at_twenty_go_on_to_the_most_asked_for(tmp_path: Path) -> None:
    """--max-rounds past the 20 at which compare trusts a spread: a noisy point gets them, as
    run's --max-processes gives a point its processes (the advice of an inconclusive A/B asks
    for such counts)."""
    spread = [10.0 * (1 + 0.1 * (index % 3)) for index in range(25)]
    twenty, more = _rounds_of(tmp_path / "twenty", spread[:20]), _rounds_of(tmp_path / "more", spread)
    assert len(points_needing_more({"baseline": twenty, "current": twenty}, ProcessProtocol.rounds(5, 25))) == 1
    assert len(points_needing_more({"baseline": twenty, "current": twenty}, ProcessProtocol.rounds(5))) == 0  # most 5
    assert len(points_needing_more({"baseline": twenty, "current": twenty}, ProcessProtocol.rounds(5, 20))) == 0
    assert len(points_needing_more({"baseline": more, "current": more}, ProcessProtocol.rounds(5, 25))) == 0
    steady = _rounds_of(tmp_path / "steady", [10.0, 10.05, 9.98] * 7)  # 21 rounds within 2%
    assert len(points_needing_more({"baseline": steady, "current": steady}, ProcessProtocol.rounds(5, 25))) == 0


def test_rounds_are_extended_on_the_p20s_compare_judges_not_on_their_medians(tmp_path: Path) -> None:
    protocol = ProcessProtocol.rounds(3, 20)
    # A busy CPU: medians on either mode of preemption (1.85 to 81 ms), p20s within 1%.
    preempted = _rounds_of(tmp_path / "preempted", [1.85, 81.0, 40.0], p20s=[1.80, 1.81, 1.805])
    assert len(points_needing_more({"baseline": preempted, "current": preempted}, protocol)) == 0
    apart = _rounds_of(tmp_path / "apart", [1.85, 1.86, 1.85], p20s=[1.80, 2.2, 1.805])
    assert len(points_needing_more({"baseline": preempted, "current": apart}, protocol)) == 1


def test_oversubscribed_rounds_are_left_out_of_the_decision_where_three_others_remain(tmp_path: Path) -> None:
    """A round slowed by the scheduler does not keep a point going when 3 clean rounds agree."""
    protocol = ProcessProtocol.rounds(3, 20)
    p20s = [19.25, 28.0, 19.27, 29.8, 19.26]
    crowded = _rounds_of(tmp_path / "crowded", p20s, p20s=p20s, crowded=(1, 3))
    assert len(points_needing_more({"baseline": crowded, "current": crowded}, protocol)) == 0
    unmarked = _rounds_of(tmp_path / "unmarked", p20s, p20s=p20s)
    assert len(points_needing_more({"baseline": unmarked, "current": unmarked}, protocol)) == 1


def test_rounds_judged_on_their_cpu_time_need_no_more_however_their_wall_clock_spreads(tmp_path: Path) -> None:
    """One-thread rounds are extended on their CPU time, as compare judges them; oversubscribed
    ones are not left out of it (preemption adds no CPU time)."""
    protocol = ProcessProtocol.rounds(3, 20)
    walls = [19.25, 28.0, 19.27, 29.8, 24.0]
    steady = _rounds_of(
        tmp_path / "steady", walls, p20s=walls, crowded=(1, 3), cpu_times=[19.0, 19.1, 19.0, 19.05, 19.1]
    )
    assert len(points_needing_more({"baseline": steady, "current": steady}, protocol)) == 0
    apart = _rounds_of(tmp_path / "apart", walls, p20s=walls, cpu_times=[19.0, 19.1, 19.0, 22.0, 19.1])
    assert len(points_needing_more({"baseline": steady, "current": apart}, protocol)) == 1


def test_the_points_needing_another_round_are_named_so_that_round_measures_only_them(tmp_path: Path) -> None:
    """Of two points in the same rounds, only the one whose rounds disagree is named."""
    protocol = ProcessProtocol.rounds(3, 20)
    paths = []
    for index, (steady, spread) in enumerate([(10.0, 10.0), (10.05, 11.0), (9.98, 9.5)]):
        store = RunStore.create(tmp_path / str(index), "round")
        store.append(result_row(1024, time_ms=steady) | {"device_name": "Test CPU", "samples": 10})
        store.append(result_row(2048, time_ms=spread) | {"device_name": "Test CPU", "samples": 10})
        store.write_meta({"status": "complete"})
        paths.append(store.path)
    (needed,) = points_needing_more({"baseline": paths, "current": paths}, protocol)
    assert needed == row_key(result_row(2048))
