"""``--against``/``--no-against``: the impls run and decode measure beside the variants. The old
spellings ``--baseline`` and ``--no-baseline`` still work on run and decode, with one warning line
naming the new one; ab's ``--baseline`` is its git revision only, and its ``--baseline-impl`` is
refused naming ``--against``."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer.main
from cli_helpers import Invoke, assert_usage_error

from linbench.cli import app

CPU = ("--device", "cpu", "--seq", "64", "--heads", "2", "--dim", "16")


@pytest.mark.parametrize(
    ("command", "old", "new", "fragment"),
    [
        (
            "run",
            ("--baseline", "softmax:sdpa"),
            "against: softmax:sdpa",
            "--baseline is deprecated: write --against softmax:sdpa",
        ),
        ("run", ("--no-baseline",), "against: none", "--no-baseline is deprecated: write --no-against"),
        ("decode", ("--baseline", "softmax:kvcache"), "against: softmax:kvcache", "write --against softmax:kvcache"),
        ("decode", ("--no-baseline",), "against: none", "--no-baseline is deprecated: write --no-against"),
    ],
)
def test_the_old_flag_still_works_warning_once_with_the_new_one(
    invoke: Invoke, command: str, old: tuple[str, ...], new: str, fragment: str
) -> None:
    args = CPU if command == "run" else ("--device", "cpu", "--context", "64")
    result = invoke(command, "--variant", "cosine", *old, *args, "--dry-run")
    assert result.exit_code == 0, result.output
    assert new in result.stdout  # taken as the new spelling: the plan measures what it names
    (line,) = [line for line in result.stderr.splitlines() if line.strip()]
    assert line.startswith("linbench: warning: ") and fragment in line


def test_the_old_and_the_new_spelling_at_once_are_refused(invoke: Invoke, tmp_path: Path) -> None:
    out = tmp_path / "out"
    both = ("--baseline", "softmax:sdpa", "--against", "softmax:naive")
    assert_usage_error(invoke("run", "--variant", "cosine", *both, *CPU, "--out", out), "give --against alone")
    assert not out.exists()


def test_ab_s_old_impl_flag_is_refused_naming_against(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke("ab", "--baseline", "HEAD", "--baseline-impl", "softmax:sdpa", *CPU, "--out", tmp_path / "ab")
    assert_usage_error(result, "--baseline-impl is now --against")
    assert not (tmp_path / "ab").exists()


@pytest.mark.parametrize("command", ["run", "decode", "ab"])
def test_help_shows_against_and_never_the_old_spellings(command: str) -> None:
    params = typer.main.get_command(app).commands[command].params  # type: ignore[attr-defined]
    shown = {opt for param in params if not getattr(param, "hidden", False) for opt in param.opts}
    assert {"--against", "--no-against"} <= shown
    assert not {"--no-baseline", "--baseline-impl"} & shown
    assert ("--baseline" in shown) == (command == "ab")  # ab's revision, and only there


def test_against_picks_the_impls_measured_beside(invoke: Invoke) -> None:
    result = invoke("run", "--variant", "cosine:chunked", "--against", "softmax:sdpa", *CPU, "--dry-run")
    assert result.exit_code == 0, result.output
    assert "against: softmax:sdpa" in result.output
    alone = invoke("run", "--variant", "cosine:chunked", "--no-against", *CPU, "--dry-run")
    assert alone.exit_code == 0 and "against: none" in alone.output, alone.output
