"""mamba-ssm's real Triton kernels as mamba2's ``mamba-ssm`` impl and decoder, proven on the CPU
against the fp64 reference under Triton's interpreter (TRITON_INTERPRET=1): the chunk scan's
outputs and gradients (every input, A_log, dt_bias and D included) with groups and value heads,
on a pack (seq_idx and cu_seqlens); the decoder served from a pool (T = 3 tokens a step, a k-last
pool, rollback).

The cases run in one process of their own (tests/variants/mamba_ssm_interpreted.py). Skipped
where mamba-ssm or triton is not installed (README: the mamba-ssm install). Marked slow: the
interpreter runs every program instance in numpy.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest
from interpreted_cases import run_interpreted

SCRIPT = Path(__file__).with_name("mamba_ssm_interpreted.py")
MISSING = [name for name in ("mamba_ssm", "triton") if importlib.util.find_spec(name) is None]
pytestmark = [pytest.mark.skipif(bool(MISSING), reason=f"not installed: {', '.join(MISSING)}"), pytest.mark.slow]
# The cheapest set that covers each call (about 20 s of CPU); the script also runs fp16, an initial
# state, the plain decoder and the other pool layouts when run by hand.
CASES = ("chunk scan", "packed", "served T3 k-last")


@pytest.fixture(scope="module")
def interpreted() -> dict[str, dict[str, Any]]:
    """The cases, then the chunk scan with half the skip, in one process (conftest.py keeps
    this module's tests in one worker)."""
    return run_interpreted(SCRIPT, *CASES, "planted")


def test_mamba_ssm_kernels_match_the_fp64_reference_interpreted(interpreted: dict[str, dict[str, Any]]) -> None:
    cases = {name: case for name, case in interpreted.items() if name != "planted"}
    assert set(cases) == set(CASES)
    failed = {name: case["failed"] for name, case in cases.items() if not case["ok"]}
    assert not failed, failed
    assert "mamba_chunk_scan_combined" in cases["chunk scan"]["backend"]
    assert "selective_state_update pooled" in cases["served T3 k-last"]["backend"]


def test_a_wrong_skip_handed_to_the_kernel_fails_the_check(interpreted: dict[str, dict[str, Any]]) -> None:
    planted = interpreted["planted"]
    assert not planted["ok"] and "out err" in planted["failed"]
