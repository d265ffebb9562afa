"""The rows of points an agent died on, as the process that outlived it writes them: built by
the results record, appended through RunStore. CPU only, no agent: a run folder made here."""

from __future__ import annotations

from pathlib import Path

from fleet_helpers import sweep_keys

from linbench.fleet.crashed import died, write_crashed
from linbench.results.record import TIME_COLUMNS, row_key
from linbench.results.store import RunStore

KEYS = sweep_keys()[:2]


def test_each_point_gets_a_crashed_row_with_its_where_columns_and_device(tmp_path: Path) -> None:
    store = RunStore.create_at(tmp_path / "attempt-1")
    store.write_meta({"device_name": "NVIDIA H100 80GB HBM3"})  # what the attempt's runner recorded
    where = {"gpu_uuid": "GPU-a", "shard": "s000", "attempt": 1, "agent_pid": 4242}
    write_crashed(store, KEYS, where, "the agent (pid 4242) died (signal 9) while this point ran", "Fake H100")
    rows = store.rows()
    assert [row_key(r) for r in rows] == KEYS
    for row in rows:
        assert row["status"] == "crashed" and row["error"].endswith("died (signal 9) while this point ran")
        assert (row["gpu_uuid"], row["shard"], row["attempt"], row["agent_pid"]) == ("GPU-a", "s000", 1, 4242)
        assert row["device_name"] == "NVIDIA H100 80GB HBM3" and row["finished_at"]
        assert not any(row[c] for c in TIME_COLUMNS)  # a crashed point has no time


def test_without_a_recorded_device_the_gpu_s_model_stands_for_it(tmp_path: Path) -> None:
    store = RunStore.create_at(tmp_path / "attempt-1")
    store.write_meta({"status": "abandoned"})
    write_crashed(store, KEYS[:1], {}, "gone", "Fake H100")
    assert store.rows()[0]["device_name"] == "Fake H100"


def test_how_a_process_ended() -> None:
    assert (died(-9), died(3)) == ("signal 9", "exit status 3")
