"""``--against``/``--no-against``: the impls run and decode measure beside the variants. The old
spellings (``--baseline``, ``--no-baseline``; ab's ``--baseline-impl``) are refused in one line
naming the new one, before any folder is made: ``--baseline`` is ab's git revision only."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer.main
from cli_helpers import Invoke, assert_usage_error

from linbench.cli import app

CPU = ("--device", "cpu", "--seq", "64", "--heads", "2", "--dim", "16")


@pytest.mark.parametrize(
    ("command", "old", "fragment"),
    [
        ("run", ("--baseline", "softmax:sdpa"), "--baseline is now --against (--against softmax:sdpa)"),
        ("run", ("--no-baseline",), "--no-baseline is now --no-against"),
        ("decode", ("--baseline", "softmax:kvcache"), "--baseline is now --against (--against softmax:kvcache)"),
        ("decode", ("--no-baseline",), "--no-baseline is now --no-against"),
    ],
)
def test_the_old_flag_is_refused_naming_the_new_one(
    invoke: Invoke, tmp_path: Path, command: str, old: tuple[str, ...], fragment: str
) -> None:
    out = tmp_path / "out"
    args = CPU if command == "run" else ("--device", "cpu", "--context", "64")
    assert_usage_error(invoke(command, "--variant", "cosine", *old, *args, "--out", out), fragment)
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
