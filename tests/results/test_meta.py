"""meta.json's sweep record: its one writer and its one reader agree."""

from __future__ import annotations

import json

import pytest

from linbench.results import meta


def test_the_sweep_record_reads_back_what_it_writes() -> None:
    record = meta.SweepRecord(
        command="decode",
        name="cosine",
        suite=None,
        settings={"context": "1k", "tokens": 4},
        tables=[{"heads": 2}],
        impls=["cosine:recurrent", "softmax:kvcache"],
        baselines=["softmax:kvcache"],
        points=2,
    )
    section = record.section()
    assert list(section) == ["command", "name", "suite", "settings", "tables", "impls", "baselines", "points"]
    assert meta.SweepRecord.read({"sweep": json.loads(json.dumps(section))}) == record


@pytest.mark.parametrize(
    "written",
    [
        {},
        {"sweep": "run"},
        {"sweep": {"name": "x", "tables": []}},
        {"sweep": {"name": "x", "settings": [], "tables": []}},
    ],
)
def test_a_meta_without_a_plannable_sweep_reads_as_none(written: dict[str, object]) -> None:
    assert meta.SweepRecord.read(written) is None


def test_a_sweep_from_before_the_command_was_recorded_is_a_run() -> None:
    recorded = meta.SweepRecord.read({"sweep": {"name": "x", "settings": {}, "tables": []}})
    assert recorded is not None and recorded.command == "run"
