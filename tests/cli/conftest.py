"""Fixtures for the CLI tests: an in-process runner, a planted variant with a wrong impl, and an
A/B's temporary folder of the test's own."""

from __future__ import annotations

import copy
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from cli_helpers import PLANTED, Invoke, assert_device_stated, planted_variant
from typer.testing import CliRunner, Result

from linbench.cli import app
from linbench.machine import ceilings
from linbench.variants.registry import register_variant, unregister_variant

# The ceilings a `linbench run` measures at its start (copy bandwidth, matmul rate: a third of a
# second on a CPU), measured once per test process for the runs the CLI tests start in it, and
# each later run given a copy of them (its measured_at and seconds the first run's).
# tests/machine/test_ceilings.py measures them every time.
_MEASURED: dict[tuple[str, tuple[str, ...], bool | None], dict[str, Any]] = {}


def _measured_once(real: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    def run_ceilings(device: torch.device, dtypes: list[str], *, isolate: bool | None = None) -> dict[str, Any]:
        key = (str(device), tuple(dtypes), isolate)
        if key in _MEASURED:
            return copy.deepcopy(_MEASURED[key])
        measured = real(device, dtypes, isolate=isolate)
        if "error" not in measured:  # a failed measurement is tried again by the next run
            _MEASURED[key] = measured
        return measured

    return run_ceilings


_RUN_CEILINGS = _measured_once(ceilings.run_ceilings)


@pytest.fixture
def invoke(monkeypatch: pytest.MonkeyPatch) -> Invoke:
    """Run the app in this process (so planted variants are seen); stderr kept apart.
    A run, decode, check or list must say its device (see assert_device_stated). A run's
    ceilings are measured once per test process (above)."""
    monkeypatch.setattr(ceilings, "run_ceilings", _RUN_CEILINGS)
    runner = CliRunner()

    def run(*args: object) -> Result:
        assert_device_stated(args)
        return runner.invoke(app, [str(arg) for arg in args])

    return run


@pytest.fixture
def planted() -> Iterator[str]:
    """Register the planted variant for one test, and remove it after."""
    register_variant(planted_variant())
    yield PLANTED
    unregister_variant(PLANTED)


@pytest.fixture
def ab_temp(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The temporary folder an A/B makes its baseline's worktree in, for this test alone: the
    machine-wide one (and the checkout's other worktrees) hold whatever other work on the
    machine made there. In this process (tempfile's cached folder) and in the subprocesses
    it starts (TMPDIR). A folder of its own in the temporary folder, not under tmp_path: the runs'
    worker sockets go under TMPDIR, and a socket's path must fit in 107 bytes, which
    tmp_path's depth (deeper still in a parallel worker's) can leave too little room for."""
    temp = Path(tempfile.mkdtemp(prefix="lb-ab-"))
    monkeypatch.setenv("TMPDIR", str(temp))
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    yield temp
    shutil.rmtree(temp, ignore_errors=True)  # made by this fixture, removed by it
