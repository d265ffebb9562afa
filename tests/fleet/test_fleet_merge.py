"""linbench merge over shard attempt folders made by hand: one row per point, chosen by the
rules of linbench/fleet/progress.py, and the refusals. CPU only."""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path

import pytest
from fleet_attempts import CARD_A, CARD_B, new_plan, tree_bytes, write_attempt
from fleet_helpers import sweep_keys

from linbench.fleet import merge as fleet_merge
from linbench.fleet.errors import MergeError
from linbench.fleet.merge import merge_run
from linbench.results.record import row_key
from linbench.results.rows import typed
from linbench.results.schema import KEY_COLUMNS, RESULT_COLUMNS, SCHEMA_VERSION
from linbench.results.store import RunStore, RunStoreError

KEYS = sweep_keys()


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def keys_of(table: list[dict[str, str]]) -> list[tuple[str, ...]]:
    return [tuple(r[c] for c in KEY_COLUMNS) for r in table]


def complete_run(run_dir: Path) -> None:
    shards = new_plan(run_dir, KEYS)
    for i, shard in enumerate(shards):
        write_attempt(run_dir, shard, 1, f"GPU-card{i}", shard.keys)


def test_a_complete_run_merges_into_one_run_folder_in_plan_order(tmp_path: Path) -> None:
    complete_run(tmp_path)
    summary = merge_run(tmp_path)
    assert summary.rows == len(KEYS) and not summary.missing and summary.superseded == 0
    results = rows(tmp_path / "results.csv")
    assert keys_of(results) == KEYS  # every point once, in the plan's order
    assert list(results[0]) == list(RESULT_COLUMNS)
    assert {r["status"] for r in results} == {"ok"}
    assert len(rows(tmp_path / "processes.csv")) == len(KEYS)
    assert len(rows(tmp_path / "samples.csv")) == 3 * len(KEYS)
    assert all(r["gpu_uuid"].startswith("GPU-card") and r["attempt"] == "1" for r in results)
    assert all(r["host"] == "node-a" for r in results)  # filled in from the attempt's meta.json
    meta = json.loads((tmp_path / "meta.json").read_text())
    assert meta["status"] == "complete" and len(meta["fleet"]["devices"]) == 4
    assert RunStore.open(tmp_path, repair=False).rows() == [typed(r) for r in results]  # an ordinary run folder


def test_the_merge_is_idempotent_and_reads_shards_only(tmp_path: Path) -> None:
    complete_run(tmp_path)
    shards_before = tree_bytes(tmp_path / "shards")
    merge_run(tmp_path)
    first = tree_bytes(tmp_path)
    merge_run(tmp_path)
    assert tree_bytes(tmp_path) == first
    assert tree_bytes(tmp_path / "shards") == shards_before


def test_a_shard_continued_on_its_card_unites_its_attempts(tmp_path: Path) -> None:
    shards = new_plan(tmp_path, KEYS)
    s0 = shards[0]
    write_attempt(tmp_path, s0, 1, CARD_A, s0.keys[:2], crashed=[s0.keys[2]])
    write_attempt(tmp_path, s0, 2, CARD_A, s0.keys[3:], asked=s0.keys[3:])
    for shard in shards[1:]:
        write_attempt(tmp_path, shard, 1, CARD_B, shard.keys)
    summary = merge_run(tmp_path)
    assert summary.shards["s000"] == [1, 2]
    table = rows(tmp_path / "results.csv")
    merged = dict(zip(keys_of(table), (r["status"] for r in table), strict=True))
    assert len(merged) == len(KEYS) and merged[s0.keys[2]] == "crashed"
    attempts = [p["attempt"] for p in rows(tmp_path / "results.csv") if p["shard"] == "s000"]
    assert attempts == ["1", "1", "1", "2", "2", "2"]


def test_a_shard_started_over_on_another_card_keeps_only_that_cards_rows(tmp_path: Path) -> None:
    shards = new_plan(tmp_path, KEYS)
    s0 = shards[0]
    write_attempt(tmp_path, s0, 1, CARD_A, s0.keys[:3])
    write_attempt(tmp_path, s0, 2, CARD_B, s0.keys)
    for shard in shards[1:]:
        write_attempt(tmp_path, shard, 1, CARD_B, shard.keys)
    summary = merge_run(tmp_path)
    assert summary.shards["s000"] == [2] and summary.superseded == 3
    assert {p["gpu_uuid"] for p in rows(tmp_path / "results.csv") if p["shard"] == "s000"} == {CARD_B}


def test_the_latest_complete_attempt_wins_over_a_later_partial_one(tmp_path: Path) -> None:
    shards = new_plan(tmp_path, KEYS)
    for shard in shards:
        write_attempt(tmp_path, shard, 1, CARD_A, shard.keys)
    write_attempt(tmp_path, shards[1], 2, CARD_B, shards[1].keys[:1])  # a duplicate launch, cut short
    summary = merge_run(tmp_path)
    assert summary.shards["s001"] == [1] and summary.superseded == 1
    assert summary.rows == len(KEYS)


def test_a_scenario_on_two_cards_is_refused_unless_allowed(tmp_path: Path) -> None:
    shards = new_plan(tmp_path, KEYS)
    s0 = shards[0]
    write_attempt(tmp_path, s0, 1, CARD_A, s0.keys[:3])
    write_attempt(tmp_path, s0, 2, CARD_B, s0.keys[3:], asked=s0.keys[3:])
    for shard in shards[1:]:
        write_attempt(tmp_path, shard, 1, CARD_A, shard.keys)
    with pytest.raises(MergeError) as caught:
        merge_run(tmp_path)
    assert "2 cards" in str(caught.value) and "--allow-mixed" in str(caught.value)
    assert not (tmp_path / "results.csv").exists()  # a refused merge writes nothing
    assert merge_run(tmp_path, allow_mixed=True).rows == len(KEYS)
    assert json.loads((tmp_path / "meta.json").read_text())["fleet"]["allow_mixed"] is True


def test_a_scenario_split_by_series_across_two_models_is_refused(tmp_path: Path) -> None:
    shards = new_plan(tmp_path, KEYS, split="series")
    for i, shard in enumerate(shards):
        write_attempt(tmp_path, shard, 1, f"GPU-{i}", shard.keys, model="H100" if i % 2 else "A100")
    with pytest.raises(MergeError, match="2 models"):
        merge_run(tmp_path)


def test_attempts_of_another_plan_are_refused(tmp_path: Path) -> None:
    shards = new_plan(tmp_path, KEYS)
    for shard in shards:
        write_attempt(tmp_path, shard, 1, CARD_A, shard.keys)
    write_attempt(tmp_path, shards[2], 2, CARD_A, shards[2].keys, digest="0123456789abcdef")
    with pytest.raises(MergeError, match="another plan"):
        merge_run(tmp_path)


def test_missing_points_are_refused_unless_partial_is_allowed(tmp_path: Path) -> None:
    shards = new_plan(tmp_path, KEYS)
    for shard in shards[:-1]:
        write_attempt(tmp_path, shard, 1, CARD_A, shard.keys)
    with pytest.raises(MergeError, match=r"6 of 24 points have no row yet \(shards s003\)"):
        merge_run(tmp_path)
    summary = merge_run(tmp_path, allow_partial=True)
    assert summary.rows == 18 and len(summary.missing) == 6
    assert json.loads((tmp_path / "meta.json").read_text())["status"] == "partial"


def test_a_merged_point_whose_attempt_went_away_is_never_dropped(tmp_path: Path) -> None:
    """Defect: with a shard's attempt folder removed, merge --allow-partial replaced the merged
    rows with fewer (every one, for a one-shard run), exit 0."""
    complete_run(tmp_path)
    merge_run(tmp_path)
    before = tree_bytes(tmp_path)
    shutil.rmtree(tmp_path / "shards" / "s003")
    with pytest.raises(MergeError, match=r"holds 6 point\(s\) that no shard attempt has a row for now"):
        merge_run(tmp_path, allow_partial=True)
    after = tree_bytes(tmp_path)
    assert {name: after[name] for name in after if "shards" not in name} == {
        name: before[name] for name in before if "shards" not in name
    }


def test_a_shard_started_over_and_still_partial_merges_again(tmp_path: Path) -> None:
    """The old card's rows, superseded by a chain started over on another card, are no loss:
    the end-of-run merge of a resumed, still partial run must not be refused."""
    shards = new_plan(tmp_path, KEYS)
    write_attempt(tmp_path, shards[0], 1, CARD_A, shards[0].keys[:3])
    for shard in shards[1:]:
        write_attempt(tmp_path, shard, 1, CARD_B, shard.keys)
    assert merge_run(tmp_path, allow_partial=True).rows == 21
    write_attempt(tmp_path, shards[0], 2, CARD_B, shards[0].keys[:1])
    summary = merge_run(tmp_path, allow_partial=True)
    assert summary.rows == 19 and len(summary.missing) == 5


def test_fake_and_real_gpus_or_two_torch_builds_do_not_mix(tmp_path: Path) -> None:
    shards = new_plan(tmp_path, KEYS)
    for i, shard in enumerate(shards):
        write_attempt(tmp_path, shard, 1, CARD_A, shard.keys, inventory="nvml" if i == 0 else "fake")
    with pytest.raises(MergeError, match="fake and real"):
        merge_run(tmp_path)
    other = tmp_path / "other"
    shards = new_plan(other, KEYS)
    for i, shard in enumerate(shards):
        write_attempt(other, shard, 1, CARD_A, shard.keys, meta={"torch": f"2.{i}"})
    with pytest.raises(MergeError, match="different torch"):
        merge_run(other)


def test_a_line_cut_short_by_a_kill_is_left_out(tmp_path: Path) -> None:
    shards = new_plan(tmp_path, KEYS)
    for shard in shards:
        write_attempt(tmp_path, shard, 1, CARD_A, shard.keys[:-1], asked=shard.keys)
    torn = tmp_path / "shards" / "s000" / "attempt-1" / "results.csv"
    torn.write_text(torn.read_text() + "cosine,kernel,fwd,True,fp32,cu")
    summary = merge_run(tmp_path, allow_partial=True)
    assert summary.rows == len(KEYS) - 4


# A GPU shard's size in points and processes; its repetitions cut from the field's 1,000 a
# process to a few, so that the test stays cheap: the merge keys each row it reads once, which
# is counted below, so the cost in rows is what this asserts, at any number of repetitions.
POINTS, PROCESSES, REPETITIONS = 200, 20, 5


def test_a_large_shard_merges_whole_keying_each_row_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    keys = [(*KEYS[0][:8], str(16 * (n + 1)), *KEYS[0][9:]) for n in range(POINTS)]  # one scenario: one shard
    (shard,) = new_plan(tmp_path, keys)
    write_attempt(tmp_path, shard, 1, CARD_A, (), asked=keys)
    store = RunStore(tmp_path / "shards" / shard.id / "attempt-1")
    for n, key in enumerate(keys):  # processes interleaved with their samples, as a runner writes them
        point = dict(zip(KEY_COLUMNS, key, strict=True))
        for p in range(PROCESSES):
            ms = n + 1 + p / 100
            store.append_process(point | {"process": p, "status": "ok", "time_ms": ms}, [ms] * REPETITIONS)
        store.append(point | {"device_name": "Fake H100", "status": "ok", "time_ms": n + 1.0})
    keyed = []
    monkeypatch.setattr(fleet_merge, "row_key", lambda row: keyed.append(1) or row_key(row))
    assert merge_run(tmp_path).rows == POINTS
    processes, samples = rows(tmp_path / "processes.csv"), rows(tmp_path / "samples.csv")
    assert len(processes) == POINTS * PROCESSES and len(samples) == POINTS * PROCESSES * REPETITIONS
    expected = [(key, str(p), f"{n + 1 + p / 100:.6g}") for n, key in enumerate(keys) for p in range(PROCESSES)]
    assert [(row_key(r), r["process"], r["time_ms"]) for r in processes] == expected  # plan order, whole
    assert [(row_key(r), r["process"], r["time_ms"]) for r in samples[::REPETITIONS]] == expected
    assert len(keyed) <= POINTS  # each point keyed once, not once per row per chosen point


def test_a_column_this_linbench_does_not_write_is_refused_unless_mixed_is_allowed(tmp_path: Path) -> None:
    complete_run(tmp_path)
    newer = tmp_path / "shards" / "s000" / "attempt-1" / "results.csv"
    header, *lines = newer.read_text().splitlines()
    newer.write_text("\n".join([f"{header},from_the_future", *(f"{line},1" for line in lines)]) + "\n")
    with pytest.raises(MergeError, match=r"a column this linbench does not write .*'from_the_future'"):
        merge_run(tmp_path)
    merge_run(tmp_path, allow_mixed=True)
    merged = rows(tmp_path / "results.csv")
    assert keys_of(merged) == KEYS and list(merged[0]) == list(RESULT_COLUMNS)  # every point, the column left out


def test_an_attempt_from_a_newer_schema_is_refused_naming_both_versions(tmp_path: Path) -> None:
    complete_run(tmp_path)
    meta_path = tmp_path / "shards" / "s000" / "attempt-1" / "meta.json"
    meta_path.write_text(json.dumps(json.loads(meta_path.read_text()) | {"schema_version": SCHEMA_VERSION + 89}))
    with pytest.raises(RunStoreError, match=rf"schema version {SCHEMA_VERSION + 89}; .*up to {SCHEMA_VERSION}"):
        merge_run(tmp_path)


@pytest.mark.parametrize(
    ("foreign", "named"),
    [
        ("shards/s999/attempt-1", "shards/s999"),  # a shard the plan does not have
        ("shards/other-run", "shards/other-run"),  # a run folder copied in
        ("shards/s000/attempt-1-copy", "shards/s000/attempt-1-copy"),  # an attempt renamed by hand
    ],
)
def test_a_folder_among_the_shards_that_is_no_planned_attempt_is_refused(
    tmp_path: Path, foreign: str, named: str
) -> None:
    complete_run(tmp_path)
    shutil.copytree(tmp_path / "shards" / "s001" / "attempt-1", tmp_path / foreign)  # its rows would go unread
    with pytest.raises(MergeError, match=rf"^{re.escape(named)} is not an attempt of this run's shards"):
        merge_run(tmp_path)
    assert not (tmp_path / "results.csv").exists()


@pytest.mark.parametrize(
    ("file", "content", "named"),
    [
        ("meta.json", b"{", "is not valid JSON"),
        ("results.csv", b"\x9a\x00\xff binary\n", "is not a linbench results CSV"),
        ("processes.csv", b"\x9a\x00\xff binary\n", "is not a linbench results CSV"),
        ("samples.csv", b"\x9a\x00\xff binary\n", "is not a linbench results CSV"),
    ],
)
def test_a_damaged_attempt_is_refused_naming_it_not_merged_around(
    tmp_path: Path, file: str, content: bytes, named: str
) -> None:
    """Defect: --allow-partial merged around an attempt whose meta.json or results.csv was no
    longer readable, and rewrote a good merged results.csv with its header alone, exit 0."""
    complete_run(tmp_path)
    merge_run(tmp_path)
    merged = (tmp_path / "results.csv").read_bytes()
    (tmp_path / "shards" / "s000" / "attempt-1" / file).write_bytes(content)
    for partial in (False, True):
        with pytest.raises(MergeError, match=rf"s000/attempt-1.*{named}.*; repair that attempt"):
            merge_run(tmp_path, allow_partial=partial)
    assert (tmp_path / "results.csv").read_bytes() == merged


def test_an_attempt_killed_before_its_header_is_no_damage(tmp_path: Path) -> None:
    complete_run(tmp_path)
    (tmp_path / "shards" / "s000" / "attempt-1" / "results.csv").write_bytes(b"")
    summary = merge_run(tmp_path, allow_partial=True)
    assert summary.missing and summary.rows == len(KEYS) - len(summary.missing)
