"""The rounds of an A/B, run against stand-in trees whose ``python -m linbench`` writes a tiny
run folder (or refuses, as an older revision does an unknown flag): the order, the
environment each side gets and the errors, in well under a second per round (no device:
the stand-ins measure nothing)."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from linbench.ab.job import rounds_command
from linbench.ab.rounds import RoundError, Side, can_narrow, round_order, run_rounds, side_env

# A stand-in for `linbench run`: it notes which tree ran it and with what, then makes a run
# folder under --out the way the real one does (results.csv, samples.csv, meta.json).
FAKE_RUN = """
import json, os, sys, pathlib
args = sys.argv[1:]
if "--help" in args:  # a tree with a NARROWS file takes --only-points, as today's linbench does
    print("--only-points FILE" if pathlib.Path("NARROWS").exists() else "--seq R")
    sys.exit(0)
if "--refuse" in args:
    print("linbench: error: No such option: --refuse; see linbench run --help", file=sys.stderr)
    sys.exit(2)
if "--crash" in args:
    raise SystemExit("Traceback: something broke")
out = pathlib.Path(args[args.index("--out") + 1])
with open(os.environ["AB_TEST_LOG"], "a") as log:
    log.write(pathlib.Path.cwd().name + " " + " ".join(args) + "\\n")
folder = out / f"run-{len(list(out.glob('run-*')))}"
folder.mkdir()
for name in ("results.csv", "samples.csv"):
    (folder / name).write_text("variant,status\\n")
(folder / "meta.json").write_text(json.dumps({"status": "complete"}))
"""


SUITES = Path(__file__).parents[2] / "suites"


def _tree(root: Path, name: str) -> Path:
    package = root / name / "linbench"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "__main__.py").write_text(FAKE_RUN)
    return root / name


@pytest.fixture
def sides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Side]:
    monkeypatch.setenv("AB_TEST_LOG", str(tmp_path / "calls.log"))
    return {name: Side(name, _tree(tmp_path / "trees", name)) for name in ("baseline", "current")}


def test_rounds_alternate_abba() -> None:
    assert [round_order(index) for index in range(1, 5)] == [
        ("baseline", "current"),
        ("current", "baseline"),
        ("baseline", "current"),
        ("current", "baseline"),
    ]


def test_each_side_runs_its_own_tree_with_the_given_flags_quiet_into_its_rounds(
    sides: dict[str, Side], tmp_path: Path
) -> None:
    heard: list[int] = []
    folders = run_rounds(sides, 3, ["--seq", "256"], tmp_path / "ab", lambda index, results: heard.append(index))
    calls = (tmp_path / "calls.log").read_text().splitlines()
    assert [call.split()[0] for call in calls] == ["baseline", "current", "current", "baseline", "baseline", "current"]
    assert calls[0].split()[1:] == [
        "run",
        "--seq",
        "256",
        "--quiet",
        "--yes",
        "--out",
        str(tmp_path / "ab/baseline/rounds"),
    ]
    assert heard == [1, 2, 3]
    assert [p.name for p in folders["baseline"]] == ["run-0", "run-1", "run-2"]
    assert all(p.parent == tmp_path / "ab" / "current" / "rounds" for p in folders["current"])
    assert (tmp_path / "ab" / "baseline" / "rounds" / "round-2.log").is_file()


def test_a_round_the_revision_refuses_stops_with_its_message(sides: dict[str, Side], tmp_path: Path) -> None:
    with pytest.raises(RoundError, match=r"the baseline side's round 1 refused the run: No such option: --refuse"):
        run_rounds(sides, 3, ["--refuse"], tmp_path / "ab")
    assert not (tmp_path / "calls.log").exists()  # the current side never ran


def test_a_round_that_crashes_stops_with_its_last_line(sides: dict[str, Side], tmp_path: Path) -> None:
    with pytest.raises(RoundError, match=r"round 1 failed \(exit 1\): Traceback: something broke"):
        run_rounds(sides, 1, ["--crash"], tmp_path / "ab")


def test_a_side_finds_its_own_package_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    assert side_env(tmp_path)["PYTHONPATH"] == os.pathsep.join([str(tmp_path), "/elsewhere"])
    monkeypatch.delenv("PYTHONPATH")
    assert side_env(tmp_path)["PYTHONPATH"] == str(tmp_path)


def test_more_rounds_follow_while_asked_for_up_to_the_most(sides: dict[str, Side], tmp_path: Path) -> None:
    asked: list[int] = []

    def another(folders: dict[str, list[Path]]) -> list[tuple[str, ...]]:
        asked.append(len(folders["baseline"]))
        return [("cosine", "kernel")] if len(folders["current"]) < 4 else []

    folders = run_rounds(sides, 2, [], tmp_path / "ab", most=6, another=another)
    assert [len(folders[side]) for side in ("baseline", "current")] == [4, 4]
    assert asked == [2, 3, 4]  # asked after the rounds given, never before
    calls = (tmp_path / "calls.log").read_text().splitlines()
    assert [call.split()[0] for call in calls][4:] == ["baseline", "current", "current", "baseline"]  # still ABBA
    assert "--only-points" not in (tmp_path / "calls.log").read_text()  # not asked to narrow
    capped = run_rounds(sides, 1, [], tmp_path / "capped", most=3, another=lambda folders: [("cosine", "kernel")])
    assert len(capped["baseline"]) == 3


def test_narrowed_rounds_past_those_asked_for_measure_only_the_points_named(
    sides: dict[str, Side], tmp_path: Path
) -> None:
    needed = [("cosine", "kernel", "2048"), ("softmax", "sdpa", "1024")]
    run_rounds(sides, 1, ["--seq", "1k"], tmp_path / "ab", most=2, another=lambda folders: needed, narrow=True)
    first, _, third, _ = (tmp_path / "calls.log").read_text().splitlines()
    assert "--only-points" not in first  # a round asked for measures every point
    args = third.split()[1:]
    points = Path(args[args.index("--only-points") + 1])
    assert points == tmp_path / "ab" / "round-2-points.csv" and args[1:3] == ["--seq", "1k"]
    assert points.read_text().splitlines()[1:] == ["cosine,kernel,2048", "softmax,sdpa,1024"]


def test_a_side_can_narrow_where_its_run_names_the_flag(sides: dict[str, Side]) -> None:
    assert not can_narrow(sides["baseline"])  # a revision from before --only-points
    (sides["current"].tree / "NARROWS").touch()
    assert can_narrow(sides["current"])


def test_a_decode_suite_s_rounds_run_linbench_decode(sides: dict[str, Side], tmp_path: Path) -> None:
    decode = {name: replace(side, command="decode") for name, side in sides.items()}
    run_rounds(decode, 1, ["--suite", "gate-decode-cpu.toml"], tmp_path / "ab")
    calls = (tmp_path / "calls.log").read_text().splitlines()
    assert [call.split()[1] for call in calls] == ["decode", "decode"]
    assert rounds_command(SUITES / "gate-decode-cpu.toml") == "decode"
    assert rounds_command(SUITES / "gate-cpu.toml") == rounds_command(None) == "run"
