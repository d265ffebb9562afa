"""The GitHub workflows are valid YAML, run where they should, and call linbench correctly.

No GitHub and no A100 here, so this is what can be checked: the structure GitHub needs,
the runner labels, and every ``linbench`` command line against the real CLI.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import typer.main
import yaml

from linbench.cli import app
from linbench.sweep.request import SweepRequest
from linbench.sweep.spec import build_spec

ROOT = Path(__file__).parents[1]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))


def _load(path: Path) -> dict:
    workflow = yaml.safe_load(path.read_text())
    # YAML 1.1 reads the key "on" as True.
    workflow["on"] = workflow.pop(True, workflow.get("on"))
    return workflow


def _commands(workflow: dict) -> list[list[str]]:
    """Every ``linbench ...`` command line of every run step, line continuations joined."""
    found = []
    for job in workflow["jobs"].values():
        for step in job["steps"]:
            script = re.sub(r"\\\n\s*", " ", step.get("run", ""))
            for line in script.splitlines():
                line = line.strip()
                if line.startswith("linbench "):
                    found.append(shlex.split(re.split(r"\s+>|\s+\|", line)[0]))  # less a redirection or pipe
    return found


def test_there_is_a_cpu_a_gpu_a_nightly_and_an_extended_workflow() -> None:
    assert {p.name for p in WORKFLOWS} == {"ci.yml", "extended.yml", "gpu-regression.yml", "nightly-gpu.yml"}


def test_the_extended_workflow_runs_ci_s_list_with_the_extended_tests_nightly() -> None:
    workflow = _load(ROOT / ".github" / "workflows" / "extended.yml")
    (job,) = workflow["jobs"].values()
    assert [s["run"] for s in job["steps"] if "run" in s] == ["bash .ci/run --extended"]
    assert "schedule" in workflow["on"] and "workflow_dispatch" in workflow["on"]
    ci_run = (ROOT / ".ci" / "run").read_text()
    assert "python -m pytest -q --extended" in ci_run


def test_the_nightly_job_adds_to_the_history_judges_it_and_keeps_it() -> None:
    workflow = _load(ROOT / ".github" / "workflows" / "nightly-gpu.yml")
    (job,) = workflow["jobs"].values()
    assert {"self-hosted", "a100"} <= set(job["runs-on"]) and "schedule" in workflow["on"]
    (history,) = [c for c in _commands(workflow) if c[1] == "history"]
    assert {"--store", "--add", "--recent", "--html"} <= set(history)
    uses = [s.get("uses", "") for s in job["steps"]]
    assert any(u.startswith("actions/cache/restore") for u in uses) and any(
        u.startswith("actions/cache/save") for u in uses
    )


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_each_workflow_has_triggers_and_steps(path: Path) -> None:
    workflow = _load(path)
    assert workflow["name"] and workflow["on"]
    for job in workflow["jobs"].values():
        assert job["runs-on"] and job["steps"]
        for step in job["steps"]:
            assert ("uses" in step) != ("run" in step), step


def test_the_gpu_gate_runs_on_self_hosted_a100_runners_and_gates_on_compare() -> None:
    workflow = _load(ROOT / ".github" / "workflows" / "gpu-regression.yml")
    (job,) = workflow["jobs"].values()
    assert {"self-hosted", "a100"} <= set(job["runs-on"])
    subcommands = [command[1] for command in _commands(workflow)]
    assert {"run", "compare", "report", "plot"} <= set(subcommands)
    compare_step = next(s for s in job["steps"] if "linbench compare" in s.get("run", ""))
    assert "exit $status" in compare_step["run"] and compare_step.get("if") is None
    upload = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/upload-artifact"))
    assert upload["if"] == "always()"


def test_the_cpu_workflow_runs_ci_s_one_list_with_the_cpu_wheel() -> None:
    """The workflow runs .ci/run, so that it and a local CI run the same checks; .ci/run runs the
    tests (tests/test_readme_commands.py), and its linbench command lines parse (below)."""
    workflow = _load(ROOT / ".github" / "workflows" / "ci.yml")
    (job,) = workflow["jobs"].values()
    assert [s["run"] for s in job["steps"] if "run" in s] == ["bash .ci/run"]
    assert job["env"]["PIP_EXTRA_INDEX_URL"] == "https://download.pytorch.org/whl/cpu"


def _ci_run() -> dict:
    """.ci/run as one step of a workflow, for its linbench command lines."""
    return {"jobs": {"ci": {"steps": [{"run": (ROOT / ".ci" / "run").read_text()}]}}}


@pytest.mark.parametrize("path", [*WORKFLOWS, ROOT / ".ci" / "run"], ids=lambda p: p.name)
def test_every_linbench_command_line_parses(path: Path) -> None:
    group = typer.main.get_command(app)
    commands = _commands(_ci_run() if path.name == "run" else _load(path))
    # ci.yml and extended.yml run .ci/run, whose command lines are checked as its own case.
    assert commands or path.name in ("ci.yml", "extended.yml"), f"{path.name} runs no linbench command"
    for command in (c for c in commands if not c[1].startswith("-")):  # `linbench --help`
        sub = group.commands.get(command[1])
        assert sub is not None, command
        known = {opt for param in sub.params for opt in getattr(param, "opts", [])}
        for word in command[2:]:
            if word.startswith("--"):
                assert word.split("=")[0] in known, f"{word} is not an option of linbench {command[1]}"
        if "--suite" in command:
            build_spec(SweepRequest(suite=ROOT / command[command.index("--suite") + 1]))  # raises on a bad suite


@pytest.mark.parametrize(("history_exit", "job_exit"), [(0, 0), (4, 0), (1, 1), (2, 2)])
def test_the_nightly_job_fails_on_a_regression_and_warns_on_an_inconclusive_night(
    tmp_path: Path, history_exit: int, job_exit: int
) -> None:
    """What its header says: exit 1 (and 2) fail the job; 4 passes it with a warning, so a slow
    night alone never fails it. The judging step's script runs with a stand-in linbench."""
    import subprocess

    workflow = _load(ROOT / ".github" / "workflows" / "nightly-gpu.yml")
    (job,) = workflow["jobs"].values()
    (step,) = [s for s in job["steps"] if "linbench history" in s.get("run", "")]
    fake = tmp_path / "bin" / "linbench"
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\necho 'REGRESSION or not: the last line'\nexit {history_exit}\n")
    fake.chmod(0o755)
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "activate").write_text("")
    script = step["run"]
    env = {"PATH": f"{fake.parent}:/usr/bin:/bin", "SLUG": "a100"}
    done = subprocess.run(
        ["bash", "-eo", "pipefail", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == job_exit, done.stdout + done.stderr
    assert ("::warning" in done.stdout) == (history_exit == 4)
