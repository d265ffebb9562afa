"""What an inconclusive comparison tells its reader (CPU, synthetic runs): the points it could
not judge, by name, and the command that would judge them: the run's own command line with
``--processes``/``--max-processes`` for runs, ``--rounds``/``--max-rounds`` for an A/B."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from synthetic_processes import NOISY, QUIET, write_process_run
from synthetic_runs import scaled, series, write_run

from linbench.gate.advice import Rerun, judging_lines, rerun_command, rerun_commands
from linbench.gate.compare import Thresholds, compare_runs
from linbench.report.load import read_run
from linbench.results.protocol import ProcessProtocol

LINEAR = lambda s: 0.01 * s  # noqa: E731


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (
            "linbench run --suite suites/ci-cpu.toml --out results/ci -q",
            "linbench run --suite suites/ci-cpu.toml --out results/ci -q --processes 5 --max-processes 46",
        ),
        (
            "linbench run --variant cosine --processes 3 --max-processes=3 --resume results/x --device cpu",
            "linbench run --variant cosine --device cpu --processes 5 --max-processes 46",
        ),
        (
            "linbench ab --baseline HEAD~1 --rounds 5 --out results/ab --device cpu --seq '1k..4k'",
            "linbench ab --baseline 'HEAD~1' --device cpu --seq 1k..4k --rounds 5 --max-rounds 46",
        ),
        ("linbench run --dry-run --device cpu", "linbench run --device cpu --processes 5 --max-processes 46"),
        ("python sweep.py", None),  # a run made by the Python API: no command line to give again
        (None, None),
    ],
)
def test_the_rerun_command_is_the_recorded_one_with_more_processes(command: str | None, expected: str | None) -> None:
    assert rerun_command(command, Rerun(5, 46)) == expected


def _with_command(path: Path, command: str, ab: bool = False) -> Path:
    meta = json.loads((path / "meta.json").read_text()) | {"command": command}
    if ab:
        meta["ab"] = {"side": path.name}
    (path / "meta.json").write_text(json.dumps(meta))
    return path


def test_unverified_runs_are_told_to_measure_both_sides_with_five_processes(tmp_path: Path) -> None:
    rows = series("cosine", "chunked", LINEAR, seqs=(1024, 2048))
    command = "linbench run --variant cosine:chunked --device cpu"
    base = _with_command(write_run(tmp_path / "base", rows), command)
    cur = _with_command(write_run(tmp_path / "cur", scaled(rows, time=1.3)), command)
    lines = judging_lines(compare_runs(read_run(base), read_run(cur), Thresholds()), Thresholds())
    assert lines[0].startswith("2 point(s) whose time was not judged: cosine:chunked fwd fp32 causal cpu B=1")
    assert "S=1k D=64 (unverified); cosine:chunked" in lines[0]
    assert lines[1].startswith("to judge them, measure both runs again with more processes")
    again = "linbench run --variant cosine:chunked --device cpu --processes 5 --max-processes 20"
    assert lines[2:4] == [f"  the baseline, at its own commit: {again}", f"  the current run: {again}"]


def test_a_sharded_run_is_measured_again_in_every_part_into_a_new_folder_then_merged(tmp_path: Path) -> None:
    (tmp_path / "runs").mkdir()
    command = f"linbench run --device cpu --shard 0/2 --devices cpu --out {tmp_path / 'runs'}"
    commands = rerun_commands(command, Rerun(5, 20), str(tmp_path / "runs" / "cosine-chunked"))
    fresh = tmp_path / "runs-again"
    counts = "--processes 5 --max-processes 20"
    assert commands == [
        f"linbench run --device cpu --devices cpu {counts} --shard 0/2 --out {fresh}",
        f"linbench run --device cpu --devices cpu {counts} --shard 1/2 --out {fresh}",
        f"linbench merge {fresh / 'cosine-chunked'}",
    ]


def test_a_noisy_ab_is_told_its_own_flags_with_the_rounds_its_spread_needs(tmp_path: Path) -> None:
    rows = series("cosine", "chunked", LINEAR, seqs=(1024,))
    command = "linbench ab --baseline HEAD --rounds 5 --out results/ab --device cpu"
    base = _with_command(write_process_run(tmp_path / "baseline", rows, NOISY), command, ab=True)
    cur = _with_command(write_process_run(tmp_path / "current", rows, NOISY), command, ab=True)
    comparison = compare_runs(read_run(base), read_run(cur), Thresholds())
    (point,) = comparison.unjudged
    lines = judging_lines(comparison, Thresholds())
    # σ̂ ≈ 0.22: 2·(5·1.2533·σ̂ / log 1.3)² ≈ 56 rounds bring the noise threshold to 30%.
    assert point.spread == pytest.approx(0.22, abs=0.01)
    assert lines[-1] == (
        "to judge them, run the A/B again with more rounds: "
        "linbench ab --baseline HEAD --device cpu --rounds 5 --max-rounds 56"
    )
    assert "--processes" not in " ".join(lines)


def test_a_comparison_that_judged_everything_has_nothing_to_say(tmp_path: Path) -> None:
    rows = series("cosine", "chunked", LINEAR, seqs=(1024,))
    base, cur = write_process_run(tmp_path / "b", rows, QUIET), write_process_run(tmp_path / "c", rows, QUIET)
    assert judging_lines(compare_runs(read_run(base), read_run(cur), Thresholds()), Thresholds()) == []


def test_points_too_noisy_for_any_practical_count_are_told_to_quieten_the_machine(tmp_path: Path) -> None:
    rows = series("cosine", "chunked", LINEAR, seqs=(1024,))
    wild = tuple(3 * o for o in NOISY)  # σ̂ ≈ 0.66: about 500 processes a side would be needed
    base, cur = write_process_run(tmp_path / "b", rows, wild), write_process_run(tmp_path / "c", rows, wild)
    lines = judging_lines(compare_runs(read_run(base), read_run(cur), Thresholds()), Thresholds())
    assert "--processes 5 --max-processes 60" in lines[-2]
    assert lines[-1].startswith("1 of them spread so widely that more than 60 processes per point would be needed")
    assert "--threads 1" in lines[-1]


def test_runs_that_already_allowed_more_than_sixty_are_not_told_to_ask_for_fewer(tmp_path: Path) -> None:
    """The gate suite extends up to 100: a point still too spread there is told so at 100."""
    rows = series("cosine", "chunked", LINEAR, seqs=(1024,))
    wild = tuple(3 * o for o in NOISY)
    runs = [_with_protocol(write_process_run(tmp_path / side, rows, wild), most=100) for side in ("b", "c")]
    lines = judging_lines(compare_runs(read_run(runs[0]), read_run(runs[1]), Thresholds()), Thresholds())
    assert "--processes 5 --max-processes 100" in lines[-2]
    assert lines[-1].startswith("1 of them spread so widely that more than 100 processes per point would be needed")


def _with_protocol(run: Path, most: int) -> Path:
    meta_path = run / "meta.json"
    data = json.loads(meta_path.read_text())
    data["timing_protocol"] = ProcessProtocol.of(5, most).meta()
    meta_path.write_text(json.dumps(data))
    return run
