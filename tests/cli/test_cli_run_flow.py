"""run's and decode's options become one typed request, every option either a request field
or declared apart from the sweep (CPU; nothing runs)."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

import pytest
import typer.main

from linbench.cli import app
from linbench.cli.run_flow import NOT_SWEEP_OPTIONS, sweep_request
from linbench.sweep.request import SETTING_KEYS, SweepRequest
from linbench.sweep.spec import SpecError


def test_options_fill_the_request_by_name_and_what_was_not_given_stays_unset() -> None:
    options = {
        "variant": ["cosine", "linear:chunked"],
        "against": None,
        "no_against": False,
        "seq": "1k..4k",
        "dtype": [],
        "plugin": [Path("p.py")],
        "param": ["cosine.norm_const=0.3"],
        "threads": "2",
        "warmup_s": "0",
        "timeout_s": 30.0,
        "cuda_graph": True,
        "quiet": True,
        "out": Path("runs"),
    }
    request = sweep_request("run", options, causal=False)
    assert request == SweepRequest(
        variants=("cosine", "linear:chunked"),
        seq="1k..4k",
        plugins=(Path("p.py"),),
        params=("cosine.norm_const=0.3",),
        threads=2,
        warmup_s=0.0,
        timeout_s=30.0,
        cuda_graph=True,
        causal=False,
    )
    assert sweep_request("decode", {"context": "64", "quiet": False}) == SweepRequest(command="decode", context="64")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"threads": "two"}, "threads: 'two' is not a positive whole number"),
        ({"processes": "0"}, "processes: '0' is not a positive whole number"),
        ({"warmup_s": "-2"}, "warmup_s: '-2' must be zero or more"),
    ],
)
def test_a_bad_count_is_refused_in_a_suite_s_words(options: dict[str, str], message: str) -> None:
    with pytest.raises(SpecError) as caught:
        sweep_request("run", options)
    assert str(caught.value) == message


def test_the_resume_hint_keeps_its_path_on_its_line_at_any_width(tmp_path: Path) -> None:
    """A narrow terminal once wrapped the hint so that the path began a line of its own."""
    from types import SimpleNamespace

    import typer
    from rich.console import Console

    from linbench.cli.run_flow import end_run
    from linbench.runner.pipeline import Outcome

    path = tmp_path / "results" / "20260101T000000Z-a-rather-long-run-name-[x]"
    console = Console(width=40, record=True, file=io.StringIO())
    prepared = SimpleNamespace(spec=SimpleNamespace(command="run"))
    with pytest.raises(typer.Exit):
        end_run(prepared, Outcome("interrupted", path, {}, []), console, quiet=True, allow_failures=False)  # type: ignore[arg-type]
    text = console.export_text()
    assert f"finish with linbench run --resume {path}\n" in text


def _options(command: str) -> list[str]:
    """The parameter names of a command's options as Typer registers them."""
    return [param.name for param in typer.main.get_command(app).commands[command].params if param.name]  # type: ignore[attr-defined]


@pytest.mark.parametrize("command", ["run", "decode"])
def test_every_option_is_a_request_field_or_declared_apart_from_the_sweep(command: str) -> None:
    plural = {key: name for name, key in SETTING_KEYS.items()}
    fields = {f.name for f in dataclasses.fields(SweepRequest)}
    stray = [o for o in _options(command) if plural.get(o, o) not in fields and o not in NOT_SWEEP_OPTIONS]
    assert not stray, f"{command}'s options {stray} reach no SweepRequest field: rename them, or declare them"


def test_each_option_declared_apart_from_the_sweep_is_an_option_and_no_field() -> None:
    every = set(_options("run")) | set(_options("decode"))
    assert every >= NOT_SWEEP_OPTIONS
    assert not NOT_SWEEP_OPTIONS & {f.name for f in dataclasses.fields(SweepRequest)}


def test_an_option_that_names_no_field_fails_instead_of_vanishing() -> None:
    with pytest.raises(TypeError, match="'sequence' is no SweepRequest field"):
        sweep_request("run", {"seq": "64", "sequence": "128"})
