"""The A/B job without the CLI (CPU, no rounds run): what it refuses before making anything,
the run options a gate suite needs per round, and the merged sides' record of the protocol
(which points get another round: test_ab_sequential.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from result_rows import result_row

from linbench.ab.job import AbError, AbJob, ab_folder, one_process_per_round
from linbench.results.protocol import AB_ROUNDS, ProcessProtocol
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
