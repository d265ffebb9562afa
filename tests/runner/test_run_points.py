"""The pipeline's narrow entry for a fleet agent: some points of a planned sweep, into a folder
made at an exact path, with hooks that may refuse a point and stamp where each row was
measured (CPU, real worker processes at tiny sizes)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from linbench import SweepRequest
from linbench.results.schema import WHERE_COLUMNS
from linbench.runner.lifecycle import RunSetupError
from linbench.runner.pipeline import prepare, prepare_recorded, run_points, start
from linbench.sweep.points import Point

TINY = SweepRequest(
    variants=("cosine:chunked",),
    against=("softmax:sdpa",),
    seq="64..128",
    heads=2,
    dim=16,
    device="cpu",
    budget_s=0.05,
    warmup_s=0.0,
)


class Hooks:
    """Refuses the points whose impl is ``busy``; stamps a shard on every row."""

    def __init__(self, busy: str = "") -> None:
        self.busy, self.asked, self.rows = busy, [], []  # type: ignore[var-annotated]

    def before_point(self, point: Point) -> str | None:
        self.asked.append(point.key)
        return "GPU busy: 1 other process" if point.impl == self.busy else None

    def row_columns(self, point: Point) -> Mapping[str, Any]:
        return {"shard": "s007", "attempt": 2, "host": "node-a"}

    def after_row(self, point: Point, row: Mapping[str, Any]) -> None:
        self.rows.append(dict(row))


def test_some_points_of_a_recorded_sweep_run_into_an_exact_folder_with_hooks(tmp_path: Path) -> None:
    planned = prepare(TINY, tmp_path / "unused")
    sweep = planned.sweep  # what a coordinator records, as meta.json's sweep section
    agent = prepare_recorded(sweep)
    assert [p.key for p in agent.plan.points] == [p.key for p in planned.plan.points]
    keys = [p.key for p in agent.plan.points if p.impl == "chunked"]  # one series: two points
    hooks = Hooks(busy="")
    store = start(agent, command="linbench run --devices cuda:0-1", at=tmp_path / "attempt-1", meta={"fleet": {}})
    outcome = run_points(agent, keys, store, hooks)
    assert store.path == tmp_path / "attempt-1" and outcome.status == "complete"
    rows = store.rows()
    assert [tuple(r[c] for c in ("impl", "seq")) for r in rows] == [("chunked", 64), ("chunked", 128)]
    assert {r["status"] for r in rows} == {"ok"}
    assert all(r["shard"] == "s007" and r["attempt"] == 2 and r["host"] == "node-a" for r in rows)
    assert all(r["gpu_uuid"] is None for r in rows)  # a column the hooks did not stamp stays empty
    assert hooks.asked == keys and [tuple(str(r[c]) for c in ("seq",)) for r in hooks.rows] == [("64",), ("128",)]
    meta = json.loads((store.path / "meta.json").read_text())
    assert meta["command"] == "linbench run --devices cuda:0-1" and meta["fleet"] == {}
    assert meta["sweep"] == sweep and meta["status"] == "complete"


def test_a_refused_point_gets_a_skipped_row_with_the_reason(tmp_path: Path) -> None:
    agent = prepare(TINY)
    keys = [p.key for p in agent.plan.points]
    store = start(agent, at=tmp_path / "run")
    run_points(agent, keys, store, Hooks(busy="sdpa"))
    rows = {r["impl"]: r for r in store.rows()}
    assert rows["sdpa"]["status"] == "skipped" and rows["sdpa"]["error"] == "GPU busy: 1 other process"
    assert rows["sdpa"]["time_ms"] is None and rows["chunked"]["status"] == "ok"
    assert not [p for p in store.process_rows() if p["impl"] == "sdpa"]  # never measured


def test_history_teaches_the_skip_rules_and_stray_keys_are_refused(tmp_path: Path) -> None:
    agent = prepare(TINY)
    short, long = [p for p in agent.plan.points if p.impl == "chunked"]
    oom = {c: "" if v is None else str(v) for c, v in short.as_row().items()} | {"status": "oom"}  # as CSV reads
    store = start(agent, at=tmp_path / "run")
    run_points(agent, [long.key], store, history=[oom])  # an earlier attempt ran out of memory shorter
    (row,) = store.rows()
    assert row["seq"] == 128 and row["status"] == "skipped" and "ran out of memory" in row["error"]
    with pytest.raises(RunSetupError, match="not in the sweep as planned here"):
        run_points(agent, [(*long.key[:5], "cuda:0", *long.key[6:])], store)


def test_the_where_columns_are_empty_in_a_run_without_hooks(tmp_path: Path) -> None:
    agent = prepare(TINY)
    store = start(agent, at=tmp_path / "run")
    run_points(agent, [agent.plan.points[0].key], store)
    (row,) = store.rows()
    assert all(row[c] is None for c in WHERE_COLUMNS)


class SecondProcessRefused(Hooks):
    """Lets each point's first process run and refuses its second."""

    def before_point(self, point: Point) -> str | None:
        self.asked.append(point.key)
        return "GPU busy: 1 other process" if self.asked.count(point.key) == 2 else None


def test_a_point_refused_before_a_later_process_ends_as_that_process_failed(tmp_path: Path) -> None:
    from dataclasses import replace

    agent = prepare(replace(TINY, processes=2, seq="64"))
    chunked = next(p for p in agent.plan.points if p.impl == "chunked")
    store = start(agent, at=tmp_path / "run")
    run_points(agent, [chunked.key], store, SecondProcessRefused())
    (row,) = store.rows()
    assert row["status"] == "skipped" and row["error"] == "process 2 of 2: GPU busy: 1 other process"
    assert [p["status"] for p in store.process_rows()] == ["ok", "skipped"]
