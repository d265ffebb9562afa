"""Merging one side's rounds: synthetic round folders with known times, so every figure of
the merged folder is known in advance (no device: nothing is measured)."""

from __future__ import annotations

import csv
import statistics
from pathlib import Path
from typing import Any

import pytest
from result_rows import process_row, result_row

from linbench.ab.merge import WORKER_ONLY, merge_rounds, round_worker
from linbench.report.load import read_single_run
from linbench.results.store import RunStore

FLOPS = 2e9
# Round r's time at each length: 512 moves round to round, 1024 fails its correctness
# check in round 2 only (a flaky impl).
TIMES = {512: (10.0, 13.0, 11.0), 1024: (20.0, None, 22.0)}
PROTOCOL = {"name": "processes-v1", "processes": 3, "source": "test"}


def _round(out: Path, index: int) -> Path:
    """Round ``index`` (0-based) as ``linbench run`` writes it: one process per point."""
    store = RunStore.create(out / f"round-{index}", "round")
    for seq, times in TIMES.items():
        time_ms = times[index]
        status = "ok" if time_ms is not None else "mismatch"
        row = result_row(seq, time_ms=time_ms, status=status) | {"device_name": "Test CPU", "flops": FLOPS}
        row |= {"rel_err": 1e-6, "check_seq": 256, "processes": 1, "samples": 3 if time_ms else None}
        if time_ms is None:
            row |= {"error": "rel_err 0.5 > 5e-4", "peak_bytes": None}
        store.append(row)
        samples = [time_ms * f for f in (0.9, 1.0, 1.1)] if time_ms else []
        process = process_row(seq, 0, time_ms or 1.0, status) | {"pid": 100 * index + seq}
        # processes.csv's own columns, which results.csv does not carry: a paced time among them.
        process |= {"paced_p20": 10.0 * (time_ms or 1.0), "pace_ms": 0.1, "pace_work": "matmul"}
        store.append_process(process, samples)
    load = {"cores": 2, "busy": index == 1, "samples": [{"when": f"round {index}", "busy": index == 1}]}
    overhead = {"wall_s": 10.0, "timed_s": 1.0, "processes_s": 4.0, "gates_s": 2.0, "processes": 2, "gates": 2}
    store.write_meta({"status": "complete", "git_sha": "abc", "load": load, "overhead": overhead, "round": index})
    return store.path


@pytest.fixture
def merged(tmp_path: Path) -> RunStore:
    rounds = [_round(tmp_path / "rounds", index) for index in range(3)]
    return merge_rounds(rounds, tmp_path / "side", {"timing_protocol": PROTOCOL, "ab": {"side": "current"}})


def _read(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def _point(rows: list[dict[str, Any]], seq: int) -> list[dict[str, Any]]:
    """The typed rows of length ``seq`` (the store's rows: seq a number)."""
    return [row for row in rows if row["seq"] == seq]


def test_every_round_is_a_process_of_every_point(merged: RunStore) -> None:
    processes = merged.process_rows()
    for seq in TIMES:
        assert [row["process"] for row in _point(processes, seq)] == [0, 1, 2]
    assert [float(row["time_ms"]) for row in _point(processes, 512)] == [10.0, 13.0, 11.0]
    assert [row["pid"] for row in _point(processes, 512)] == [512, 612, 712]  # the round's own worker
    # What only the round's processes.csv holds is kept: the paced time the gate judges.
    assert [row["paced_p20"] for row in _point(processes, 512)] == [100.0, 130.0, 110.0]
    assert {row["pace_work"] for row in processes} == {"matmul"}


def test_an_ok_point_is_the_median_of_its_round_medians_with_the_spread_between_them(merged: RunStore) -> None:
    (row,) = _point(merged.rows(), 512)
    assert row["status"] == "ok" and row["processes"] == 3
    assert float(row["time_ms"]) == 11.0
    assert (float(row["time_ms_proc_lo"]), float(row["time_ms_proc_hi"])) == (10.0, 13.0)
    assert float(row["between_spread"]) > 0
    assert int(row["samples"]) == 9
    # The rates follow the merged time, and the point's own columns come from its rounds.
    assert float(row["tflops"]) == pytest.approx(FLOPS / 11e-3 / 1e12, rel=1e-5)
    assert float(row["tokens_per_s"]) == pytest.approx(512 / 11e-3, rel=1e-5)
    assert (row["device_name"], row["check_seq"], float(row["rel_err"])) == ("Test CPU", 256, 1e-6)


def test_a_point_that_failed_in_any_round_takes_that_failure(merged: RunStore) -> None:
    (row,) = _point(merged.rows(), 1024)
    assert row["status"] == "mismatch"
    assert row["error"] == "round 2 of 3: rel_err 0.5 > 5e-4"
    assert row["time_ms"] is None and row["tflops"] is None and row["processes"] == 3
    assert [p["status"] for p in _point(merged.process_rows(), 1024)] == ["ok", "mismatch", "ok"]


def test_the_samples_of_each_round_go_under_its_process(merged: RunStore) -> None:
    samples = [row for row in _read(merged.samples_path) if row["seq"] == "512"]
    by_process: dict[str, list[float]] = {}
    for sample in samples:
        by_process.setdefault(sample["process"], []).append(float(sample["time_ms"]))
    assert {p: statistics.median(t) for p, t in by_process.items()} == {"0": 10.0, "1": 13.0, "2": 11.0}


def test_meta_is_round_ones_with_the_protocol_every_load_sample_and_the_summed_harness_time(merged: RunStore) -> None:
    meta: dict[str, Any] = merged.read_meta()
    assert meta["round"] == 0 and meta["timing_protocol"] == PROTOCOL and meta["ab"] == {"side": "current"}
    assert [s["when"] for s in meta["load"]["samples"]] == ["round 0", "round 1", "round 2"]
    assert meta["load"]["busy"] is True  # round 2 was busy
    assert meta["overhead"]["wall_s"] == 30.0 and meta["overhead"]["processes"] == 6
    assert meta["overhead"]["timed_fraction"] == pytest.approx(0.1)


def test_the_merged_meta_keeps_the_oldest_schema_its_rounds_were_measured_under() -> None:
    """A baseline revision's rounds by an older linbench counted less (host syncs before 16):
    the merged file is today's schema, its figures theirs, and the gate must know which."""
    from linbench.ab.merge import merged_meta
    from linbench.results.schema import MEASURED_SCHEMA, SCHEMA_VERSION

    meta = merged_meta([{"schema_version": 15}, {"schema_version": 15}], {})
    assert meta["schema_version"] == SCHEMA_VERSION and meta[MEASURED_SCHEMA] == 15
    assert merged_meta([{}], {})[MEASURED_SCHEMA] == SCHEMA_VERSION  # none recorded: today's


def test_the_merged_folder_is_a_run_the_reports_read(merged: RunStore) -> None:
    run = read_single_run(merged.path)
    assert len(run.results) == 2


def test_a_folder_that_holds_a_run_is_not_merged_into(tmp_path: Path) -> None:
    RunStore.create_at(tmp_path / "side")
    with pytest.raises(FileExistsError, match="already holds a run"):
        RunStore.create_at(tmp_path / "side")


def _late_round(out: Path, times: list[float], failed: int | None = None) -> Path:
    """A narrowed later round that measured length 512 in several processes, as ``linbench run
    --processes K`` writes it: a summary row, and a processes.csv row and samples per process
    (process ``failed`` crashed)."""
    store = RunStore.create(out, "round")
    statuses = ["crashed" if index == failed else "ok" for index in range(len(times))]
    status = "crashed" if failed is not None else "ok"
    store.append(result_row(512, time_ms=statistics.median(times), status=status) | {"device_name": "Test CPU"})
    for index, (time_ms, state) in enumerate(zip(times, statuses, strict=True)):
        process = process_row(512, index, time_ms, state) | {"pid": 900 + index, "paced_p20": 10.0 * time_ms}
        store.append_process(process, [time_ms * f for f in (0.9, 1.0, 1.1)])
    store.write_meta({"status": "complete"})
    return store.path


def test_a_round_of_several_processes_a_point_is_one_process_their_median(tmp_path: Path) -> None:
    rounds = [_round(tmp_path / "rounds", index) for index in range(3)]
    rounds.append(_late_round(tmp_path / "rounds" / "late", [12.0, 14.0, 16.0]))
    merged = merge_rounds(rounds, tmp_path / "side", {"timing_protocol": PROTOCOL})
    processes = _point(merged.process_rows(), 512)
    # The round's processes share its minutes: the round is one process of the point, not three.
    assert [row["process"] for row in processes] == [0, 1, 2, 3]
    assert float(processes[3]["time_ms"]) == 14.0  # the round's results row: the median of its medians
    assert processes[3]["paced_p20"] == 140.0 and processes[3]["pid"] == 900
    assert processes[3]["timed_s"] == pytest.approx(3 * 3 * 14.0 / 1e3)  # their timed seconds summed
    (row,) = _point(merged.rows(), 512)
    assert row["processes"] == 4 and float(row["time_ms"]) == 12.0  # 10, 13, 11 and the round's 14
    samples = [row for row in _read(merged.samples_path) if row["seq"] == "512" and row["process"] == "3"]
    assert len(samples) == 9  # every repetition of the round's three processes


def test_a_failure_in_a_round_of_several_processes_names_that_round(tmp_path: Path) -> None:
    rounds = [_round(tmp_path / "rounds", 0), _late_round(tmp_path / "rounds" / "late", [12.0, 14.0], failed=1)]
    merged = merge_rounds(rounds, tmp_path / "side", {"timing_protocol": PROTOCOL})
    (row,) = _point(merged.rows(), 512)
    assert row["status"] == "crashed" and row["processes"] == 2
    assert row["error"].startswith("round 2 of 2: ")


def test_a_round_s_processes_are_summed_up_in_every_column_only_processes_csv_has() -> None:
    rows = [process_row(512, index, 10.0 + index) | {"wall_s": 0.25, "paced_p20": 100.0 + index} for index in range(3)]
    assert set(round_worker(rows)) == set(WORKER_ONLY)
    assert round_worker(rows)["paced_p20"] == 101.0 and round_worker(rows)["wall_s"] == 0.75
