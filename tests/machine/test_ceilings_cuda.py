"""The machine's ceilings on a GPU (device: cuda:0); skipped without CUDA."""

from __future__ import annotations

import pytest
import torch

from linbench.machine.ceilings import run_ceilings

pytestmark = pytest.mark.cuda


def test_run_ceilings_come_from_a_child_process() -> None:
    before = torch.cuda.memory_reserved(0)
    ceilings = run_ceilings(torch.device("cuda", 0), ["bf16"])
    assert "error" not in ceilings, ceilings
    assert ceilings["device"] == "cuda:0" and ceilings["copy_gb_per_s"] > 50
    assert ceilings["matmul_tflops"]["bf16"] > 1 and ceilings["copy_bytes"] > 0
    assert torch.cuda.memory_reserved(0) == before  # nothing was allocated here
