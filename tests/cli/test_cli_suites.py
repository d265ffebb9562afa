"""``linbench suites`` and the suite files themselves: each parses, says what it reproduces,
and holds the number of points the listing gives. No device: suites are planned, not run."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from cli_helpers import Invoke, assert_usage_error

from linbench.runner.plan import make_plan
from linbench.sweep.request import SweepRequest
from linbench.sweep.spec import build_spec, read_suite, suite_command

SUITES = Path(__file__).parents[2] / "suites"
SUITE_FILES = sorted(SUITES.glob("*.toml"))
EXPECTED = {
    *("paper-fig5", "paper-fig5-gpu", "paper-fig2", "heinsen-constant-cost", "cosformer"),
    *("ci-cpu", "ci-gpu", "gate-cpu"),
    *("gated", "gated-gpu", "gated-decode", "backends-gpu"),
    *("gate-decode-cpu", "gate-decode-gpu"),
}


def listed_counts(output: str) -> dict[str, tuple[str, int]]:
    """suite → (command, points) from the table ``linbench suites`` prints."""
    found = {}
    for line in output.splitlines():
        cells = [cell.strip() for cell in re.split(r"[│┃]", line)[1:-1]]
        if len(cells) == 4 and cells[3].isdigit():
            found[cells[0]] = (cells[2], int(cells[3]))
    return found


def test_the_issue_s_suites_are_all_here() -> None:
    assert {path.stem for path in SUITE_FILES} == EXPECTED


def test_suites_lists_every_suite_with_its_command_and_point_count(invoke: Invoke) -> None:
    result = invoke("suites", SUITES)
    assert result.exit_code == 0, result.output
    listed = listed_counts(result.stdout)
    assert set(listed) == EXPECTED
    assert listed["paper-fig2"][0] == "decode" and listed["paper-fig5"][0] == "run"
    assert "Cottention Figure 5" in result.stdout


@pytest.mark.parametrize("path", SUITE_FILES, ids=lambda p: p.stem)
def test_each_suite_parses_and_plans_the_points_the_listing_gives(invoke: Invoke, path: Path) -> None:
    command = suite_command(path, read_suite(path))
    # ci-gpu names cuda; count its points here
    spec = build_spec(SweepRequest(command=command, suite=path, device="cpu"))
    # ci-gpu times CUDA graphs, which a CPU plan refuses; the points are the same without.
    plan = make_plan(replace(spec, cuda_graph=False), torch.device("cpu"), "test cpu")
    listed = listed_counts(invoke("suites", SUITES).stdout)
    # The listing counts every impl a suite names; on CPU the optional kernel libraries' impls
    # (fla's, flash-qla, flash-kda, flashinfer's, cudnn, cula, mamba-ssm, fa2, fa3, fa4) are left out with a note.
    optional = re.compile(
        r":(fla(-recurrent|-dispatch)?|flash-(qla|kda)|flashinfer(-recurrent)?|cudnn|cula|mamba-ssm|fa[234]) left out"
    )
    left_out = [note for note in plan.targets.notes if optional.search(note)]
    per_impl = len(plan.points) // len(plan.targets.pairs)
    assert listed[path.stem] == (command, len(plan.points) + per_impl * len(left_out))


@pytest.mark.parametrize("path", SUITE_FILES, ids=lambda p: p.stem)
def test_each_suite_says_what_it_reproduces_and_what_to_see(path: Path) -> None:
    text = path.read_text()
    assert text.startswith("# ") and len(text.splitlines()[0]) > 40
    comments = [line for line in text.splitlines() if line.startswith("#")]
    assert len(comments) >= 4, "a suite explains what a reader should see"
    assert re.search(r"^command = \"(run|decode)\"$", text, re.MULTILINE)


def test_suites_name_their_impls_so_new_impls_do_not_change_them() -> None:
    """A suite that said "cosine" would grow when an impl is added (or fail where it is not built)."""
    for path in SUITE_FILES:
        data = read_suite(path)
        for name in [*data.get("variant", []), *data.get("against", [])]:
            assert ":" in name, f"{path.name} names {name!r} without an impl"
    assert "cosine:kernel" in read_suite(SUITES / "paper-fig5.toml")["variant"]  # the compiled op, by name


def test_a_folder_without_suites_is_a_usage_error(invoke: Invoke, tmp_path: Path) -> None:
    assert_usage_error(invoke("suites", tmp_path / "missing"), "not a folder of suites")
    assert_usage_error(invoke("suites", tmp_path), "holds no suite")


def test_a_suite_name_that_is_a_folder_is_called_a_folder(invoke: Invoke, tmp_path: Path) -> None:
    (tmp_path / "x.toml").mkdir()
    result = invoke("suites", tmp_path)
    assert "broken: is a folder, not a TOML file" in result.output and "does not exist" not in result.output


@pytest.mark.parametrize("command", ["run", "decode"])
def test_a_commands_help_names_the_processes_its_gate_suites_ask_for(command: str) -> None:
    """run's and decode's --processes help may say how many processes a gate takes only where
    every suite of that command that asks for several agrees (gate-cpu asks for 20, ci-gpu 5)."""
    from linbench.cli import decode_cmd, run_cmd

    text = (run_cmd if command == "run" else decode_cmd).HELP["processes"]
    asked = {
        read_suite(path).get("processes")
        for path in SUITE_FILES
        if suite_command(path, read_suite(path)) == command and read_suite(path).get("processes", 1) > 1
    }
    named = {int(n) for n in re.findall(r"(\d+) for a regression gate", text)}
    assert not named or named == asked, (named, asked)
