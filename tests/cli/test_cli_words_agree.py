"""Words that must agree: the README and docs/, the CLI's messages and its help say
the same thing about the kernel's build time, ci-cpu's size, decode's untimed steps and
compare's exponent bounds."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
import torch
import typer.main
from cli_helpers import Invoke
from synthetic_runs import series, write_run

from linbench.cli import app
from linbench.cli.list_cmd import NOT_BUILT
from linbench.kernels import build
from linbench.measure.timing_policy import TimingPolicy
from linbench.runner.plan import make_plan
from linbench.sweep.request import SweepRequest
from linbench.sweep.spec import build_spec

ROOT = Path(__file__).parents[2]
README = (ROOT / "README.md").read_text()
SUITES_DOC = (ROOT / "docs" / "suites.md").read_text()
DECODE_DOC = (ROOT / "docs" / "decode.md").read_text()
KERNELS_DOC = (ROOT / "docs" / "kernels.md").read_text()


def test_the_build_time_is_the_same_in_the_docs_the_build_message_and_list() -> None:
    said = {
        "build.py": re.findall(r"about (\d+) s", inspect.getsource(build._compile_and_load_locked)),
        "list": re.findall(r"about (\d+) s", NOT_BUILT),
        "README": re.findall(r"about (\d+) s on two idle cores", " ".join(README.split())),
        "docs/kernels.md": re.findall(r"\"about (\d+) s\"", " ".join(KERNELS_DOC.split())),
    }
    assert all(said.values()), said
    assert {n for found in said.values() for n in found} == {"25"}, said
    assert "about a minute" not in inspect.getsource(build)


def test_the_suites_doc_gives_ci_cpu_s_point_count_as_its_table_and_the_planner_do() -> None:
    spec = build_spec(SweepRequest(suite=ROOT / "suites" / "ci-cpu.toml", device="cpu"))
    points = len(make_plan(spec, torch.device("cpu"), "test cpu").points)
    table = re.search(r"^\| `ci-cpu` \| run \| .* \| (\d+) \|$", SUITES_DOC, re.MULTILINE)
    assert table is not None and int(table.group(1)) == points
    text = re.search(r"`linbench run --suite suites/ci-cpu.toml[^`]*`(.*?)\n\n", SUITES_DOC, re.DOTALL)
    assert text is not None
    counts = {int(n) for n in re.findall(r"(\d+)\s+points", text.group(1))}
    assert points in counts, text.group(1)


def test_decode_s_help_and_its_doc_count_the_untimed_steps_as_the_runner_does() -> None:
    policy = TimingPolicy.for_decode(32)
    untimed = 1 + policy.warmup_calls  # the measured first step, then the warm-up calls
    assert untimed == 2 and policy.min_reps == policy.max_reps == 32
    (tokens,) = [p for p in typer.main.get_command(app).commands["decode"].params if p.name == "tokens"]
    assert "after two untimed steps (the first, whose memory is read, and one more)" in tokens.help
    doc = " ".join(DECODE_DOC.split())
    assert "two untimed steps in all: the first, whose memory is read above, and this one" in doc
    assert "timed steps per point, after two untimed ones" in doc


def test_compare_says_how_many_exponent_bounds_were_exceeded(invoke: Invoke, tmp_path: Path) -> None:
    base = write_run(tmp_path / "base", series("cosine", "chunked", lambda s: 0.01 * s))
    turned = write_run(tmp_path / "turned", series("cosine", "chunked", lambda s: 4e-6 * s * s))
    bounds = ("--max-exponent", "cosine=1.2", "--max-exponent", "cosine:chunked=3", "--max-slowdown", "1000%")
    result = invoke("compare", base, turned, *bounds)
    assert result.exit_code == 1, result.output
    assert "1 of 2 exponent bound(s) exceeded" in result.stdout
    assert "bound(s) passed" not in result.stdout


@pytest.mark.parametrize("command", ["run", "decode"])
def test_every_axis_option_s_help_gives_the_default_the_sweep_takes(command: str) -> None:
    from linbench.sweep.settings import DEFAULTS

    defaults = DEFAULTS[command]
    shown = {
        "variant": "Default: all.",
        "against": "Default: softmax",
        "batch": f"Default: {defaults['batch']}.",
        "heads": f"Default: {defaults['heads']}.",
        "dim": f"Default: {defaults['dim']}.",
        "dim_v": "Default: the same as --dim.",
        "dtype": f"Default: {defaults['dtype']}.",
        "device": f"Default: {defaults['device']}",
    }
    params = {p.name: p for p in typer.main.get_command(app).commands[command].params}
    for name, words in shown.items():
        assert words in (params[name].help or ""), (name, params[name].help)
