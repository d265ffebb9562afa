"""What a worker reports for a gate whose impl cannot take the point."""

from __future__ import annotations

import torch

from linbench.correctness import CaseResult, Shape
from linbench.runner.execute import _gate_columns


def test_an_impl_that_cannot_take_a_point_is_skipped_with_its_reason() -> None:
    """An SDPA backend refusing a shape is where the impl stops, not a failure of the run."""
    case = CaseResult("softmax", "sdpa-flash", Shape(1, 2, 16, 8, 16), True, torch.float32)
    case.unavailable = "SDPA's flash backend cannot run: Flash attention requires the same last dimension"
    columns = _gate_columns(case)
    assert columns["status"] == "skipped"
    assert "same last dimension" in columns["error"]
