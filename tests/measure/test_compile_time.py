"""The torch.compile tally, read from dynamo's metrics (device: none; dynamo stood in)."""

from __future__ import annotations

import sys
import types

import pytest

from linbench.measure.compile_time import compile_seconds


def test_a_process_that_never_compiled_spent_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "torch._dynamo.utils", raising=False)
    assert compile_seconds() == 0.0


def test_the_compile_calls_are_summed(monkeypatch: pytest.MonkeyPatch) -> None:
    utils = types.ModuleType("torch._dynamo.utils")
    utils.compilation_time_metrics = {"_compile.compile_inner": [1.25, 0.5], "other": [9.0]}  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch._dynamo.utils", utils)
    assert compile_seconds() == 1.75


def test_a_torch_without_the_tally_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch._dynamo.utils", types.ModuleType("torch._dynamo.utils"))
    assert compile_seconds() is None
