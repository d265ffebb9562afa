"""Each run is judged by the repeated-process protocol it recorded in meta.json (CPU, synthetic
runs): its numbers, not the defaults, decide when a side can be judged and when its spread is
trusted; two runs that recorded different numbers are held to the stricter; runs of different
protocols, or with a record that is not numbers, are refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from synthetic_processes import QUIET, write_process_run
from synthetic_runs import scaled, series

from linbench.gate.advice import judging_lines
from linbench.gate.compare import CompareError, Thresholds, compare_runs
from linbench.gate.render import advice_lines
from linbench.report.load import read_run
from linbench.results.protocol import ProcessProtocol

LINEAR = lambda s: 0.01 * s  # noqa: E731
TWO = QUIET[1:4:2]  # 2 processes that agree within 0.2%
SPREAD = (-0.04, -0.02, 0.0, 0.02, 0.04)  # 5 processes spanning 8%: σ̂ ≈ 3%, N ≈ 12.5%


def _run(folder: Path, rows: list[dict], offsets: tuple[float, ...], protocol: dict[str, Any] | None):
    path = write_process_run(folder, rows, offsets)
    if protocol is not None:
        meta_path = path / "meta.json"
        meta_path.write_text(json.dumps(json.loads(meta_path.read_text()) | {"timing_protocol": protocol}))
    return read_run(path)


def _compare(tmp_path: Path, offsets, base_protocol=None, cur_protocol=None, slower: float = 1.3):
    rows = series("cosine", "chunked", LINEAR, seqs=(1024, 2048))
    base = _run(tmp_path / "base", rows, offsets, base_protocol)
    cur = _run(tmp_path / "cur", scaled(rows, time=slower), offsets, cur_protocol)
    return compare_runs(base, cur, Thresholds())


def _verdicts(comparison) -> set[str]:
    return {p.time_verdict for p in comparison.points}


def test_two_processes_are_judged_where_the_runs_recorded_min_to_judge_2(tmp_path: Path) -> None:
    assert _verdicts(_compare(tmp_path / "default", TWO)) == {"unverified"}
    recorded = ProcessProtocol(2, 2, min_to_judge=2).meta()
    judged = _compare(tmp_path / "recorded", TWO, recorded, recorded)
    assert judged.failed and _verdicts(judged) == {"regression"} and judged.protocol.min_to_judge == 2


def test_five_spread_processes_are_trusted_where_the_runs_recorded_trust_processes_5(tmp_path: Path) -> None:
    # By the default protocol 5 processes spanning 8% are too few to trust their spread.
    assert _verdicts(_compare(tmp_path / "default", SPREAD)) == {"noisy"}
    recorded = ProcessProtocol(5, 5, trust_processes=5).meta()
    judged = _compare(tmp_path / "recorded", SPREAD, recorded, recorded)
    assert _verdicts(judged) == {"regression"} and all(p.settled for p in judged.points)
    # The recorded extension threshold is the one that says when a side agrees.
    wide = ProcessProtocol(5, 5, extend_above=0.10).meta()
    assert _verdicts(_compare(tmp_path / "wide", SPREAD, wide, wide)) == {"regression"}


def test_runs_that_recorded_different_numbers_are_held_to_the_stricter(tmp_path: Path) -> None:
    lax = ProcessProtocol(5, 5, trust_processes=5, min_to_judge=2).meta()
    assert _verdicts(_compare(tmp_path / "spread", SPREAD, lax, None)) == {"noisy"}
    assert _verdicts(_compare(tmp_path / "two", TWO, None, lax)) == {"unverified"}
    both = _compare(tmp_path / "both", TWO, lax, ProcessProtocol(2, 2, min_to_judge=3).meta())
    assert both.protocol.min_to_judge == 3


def test_the_advice_names_the_recorded_numbers(tmp_path: Path) -> None:
    recorded = ProcessProtocol(5, 5, min_to_judge=4, trust_processes=30).meta()
    unverified = _compare(tmp_path / "few", TWO, recorded, recorded)
    assert "fewer than 4 worker processes" in advice_lines(unverified, 0.05)[0]
    noisy = _compare(tmp_path / "noisy", SPREAD, recorded, recorded)
    assert "--max-processes 30" in judging_lines(noisy, Thresholds())[-1]


def test_runs_of_different_protocols_are_refused(tmp_path: Path) -> None:
    other = ProcessProtocol(5, 5).meta() | {"name": "processes-v9"}
    with pytest.raises(CompareError, match=r"different timing protocols \(processes-v1 against processes-v9\)"):
        _compare(tmp_path, QUIET, None, other)


def test_a_record_that_is_not_numbers_is_refused_naming_the_run(tmp_path: Path) -> None:
    with pytest.raises(CompareError, match=r"cur.*: meta\.json's timing_protocol has min_to_judge 'three'"):
        _compare(tmp_path, QUIET, None, {"name": "processes-v1", "min_to_judge": "three"})
