"""``linbench run`` warns in its summary when the machine was busy, and says why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import Invoke

from linbench.machine import load

TINY = ("--variant", "cosine:chunked", "--no-against", "--seq", "64", "--heads", "2", "--dim", "16")
FAST = ("--budget-s", "0.05", "--warmup-s", "0", "--device", "cpu")


def _machine(monkeypatch: pytest.MonkeyPatch, load_1m: float) -> None:
    monkeypatch.setattr(load, "load_average", lambda: [load_1m, load_1m, load_1m])
    monkeypatch.setattr(load, "busy_processes", lambda *args: [])
    monkeypatch.setattr(load, "cpu_cores", lambda: 2)


def test_a_busy_machine_is_named_in_the_summary_and_meta(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _machine(monkeypatch, load_1m=7.5)
    result = invoke("run", *TINY, *FAST, "--out", tmp_path)
    assert result.exit_code == 0, result.output
    assert "warning: the machine was busy during this run" in result.stdout
    assert "load average up to 7.5 on 2 cores" in result.stdout
    (folder,) = tmp_path.iterdir()
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["status"] == "complete" and meta["load"]["busy"] is True


def test_quiet_keeps_one_summary_line_with_the_warning_on_it(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _machine(monkeypatch, load_1m=7.5)
    result = invoke("run", *TINY, *FAST, "--out", tmp_path, "--quiet")
    assert result.exit_code == 0, result.output
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 2 and "1 ok" in lines[1] and "warning: the machine was busy" in lines[1]


def test_an_idle_machine_gets_no_warning(invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _machine(monkeypatch, load_1m=0.1)
    result = invoke("run", *TINY, *FAST, "--out", tmp_path)
    assert result.exit_code == 0, result.output
    assert "busy" not in result.stdout
    (folder,) = tmp_path.iterdir()
    assert json.loads((folder / "meta.json").read_text())["load"]["busy"] is False
