"""meta.json's sections: each one's writer and its reader agree (no device)."""

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


def test_the_overhead_adds_sessions_and_writes_its_seconds_to_the_millisecond() -> None:
    earlier = meta.Overhead.read({"overhead": {"wall_s": 10.0, "timed_s": 2.0, "processes": 3, "gates": 1}})
    assert earlier is not None and earlier.processes_s == 0.0  # a figure it lacks is 0
    total = earlier + meta.Overhead(wall_s=0.0004, timed_s=0.5, processes=1)
    section = total.section()
    assert section["wall_s"] == 10.0 and section["timed_s"] == 2.5 and section["processes"] == 4
    assert section["timed_fraction"] == pytest.approx(2.5 / 10.0004)
    assert meta.Overhead.read(json.loads(json.dumps({"overhead": section}))) == total.rounded()
    assert meta.Overhead.read({}) is None and meta.Overhead.read({"overhead": {}}) is None


def test_the_overhead_gives_the_timed_share_of_the_whole_command_where_it_has_one() -> None:
    command = meta.Overhead(wall_s=8.0, timed_s=6.0, command_s=10.0).section()
    assert (command["timed_fraction"], command["command_timed_fraction"]) == (0.75, 0.6)
    assert meta.Overhead(wall_s=8.0, timed_s=6.0).section()["command_timed_fraction"] is None


def test_rounds_sum_their_overheads_and_pool_their_load_samples() -> None:
    def run(wall_s: float, busy: bool) -> dict[str, object]:
        load = {"rule": "r", "cores": 2, "busy": busy, "samples": [{"busy": busy}]}
        return {"overhead": {"wall_s": wall_s, "timed_s": 1.0}, "load": load}

    rounds = [run(10.0, False), run(20.0, True), {}]
    overhead = meta.Overhead.summed(rounds)
    assert overhead is not None and (overhead.wall_s, overhead.timed_fraction) == (30.0, 2.0 / 30.0)
    load = meta.LoadSection.merged(rounds)
    assert load is not None
    assert load.section() == {"rule": "r", "cores": 2, "busy": True, "samples": [{"busy": False}, {"busy": True}]}
    assert meta.Overhead.summed([{}]) is None and meta.LoadSection.merged([{}]) is None


def test_provenance_names_what_differs_and_skips_what_either_lacks() -> None:
    there = meta.Provenance.read({"device_name": "A100", "torch": "2.1", "git_sha": None})
    here = meta.Provenance(device_name="H100", torch="2.1", git_sha="abc")
    assert there.differences(here) == ["device 'A100' there, 'H100' here"]


def test_the_timing_protocol_reads_back_what_the_run_writes() -> None:
    protocol = meta.ProcessProtocol.of(3, 8)
    section = meta.timing_protocol_section(protocol, budget_s=0.3)
    assert section["budget_s"] == 0.3
    assert meta.timing_protocol({"timing_protocol": section}) == protocol
    assert meta.timing_protocol({}) == meta.ProcessProtocol(enough_se=None)  # a run before the rule


def test_library_keys_are_the_registry_s_libraries_as_meta_json_writes_them() -> None:
    """compare refuses runs measured with other library versions only for the keys it knows."""
    from linbench.results.meta import LIBRARY_KEYS
    from linbench.variants.registry import optional_libraries

    written = {name.replace("-", "_") for name in optional_libraries()} | {"fla_backend_dispatch"}
    assert set(LIBRARY_KEYS) == written
