"""gated-deltanet's ``flash-qla`` impl: FlashQLA's chunk_gated_delta_rule (CPU; the kernel stood in
by fla's reference for the same kernel, whose documented semantics FlashQLA shares).

The call is bound to the installed FlashQLA's real signature where flash-qla is installed (read
from its source: it raises on import without a Hopper or Blackwell GPU), so a renamed or dropped
argument fails here; skipped where it is not installed.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from fla_stand_ins import Kernels
from source_signature import installed_file, source_signature

import linbench
from linbench.check.correctness import check_impl
from linbench.shape import Shape
from linbench.variants import backends
from linbench.variants.gated import flash_qla

SHAPE = Shape(1, 2, 20, 16, 16)


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """FlashQLA's kernel stood in (fla's reference with its keywords); each call's arguments kept."""
    fake, seen = Kernels(), []

    def kernel(**kwargs: Any) -> Any:
        seen.append(kwargs)
        return fake.chunk_gated_delta_rule(**kwargs)

    monkeypatch.setattr(flash_qla, "flash_qla_kernel", lambda: kernel)
    monkeypatch.setattr(flash_qla, "unavailable", lambda device: None)
    return seen


def test_the_mapping_passes_the_gate_in_bf16_outputs_and_gradients(calls: list[dict[str, Any]]) -> None:
    case = check_impl(linbench.get_variant("gated-deltanet"), "flash-qla", SHAPE, causal=True, dtype=torch.bfloat16)
    assert case.ok, case.describe()
    assert calls and calls[0]["q"].shape == (1, 20, 2, 16)  # (B, T, H, K)
    assert backends.take_noted() == "flash-qla chunk_gated_delta_rule"


def test_the_call_binds_to_the_installed_flash_qla(calls: list[dict[str, Any]]) -> None:
    path = installed_file("flash_qla", "ops/gated_delta_rule/chunk/__init__.py")
    if path is None:
        pytest.skip("flash-qla is not installed (pip install flash-qla)")
    q = torch.randn(1, 2, 8, 16, dtype=torch.bfloat16)
    linbench.attention(
        q,
        q,
        q,
        variant="gated-deltanet",
        impl="flash-qla",
        g=torch.zeros(1, 2, 8),
        beta=torch.rand(1, 2, 8).to(q.dtype),
    )
    source_signature(path, flash_qla.KERNEL).bind(**calls[0])


def test_it_says_why_it_cannot_run() -> None:
    impl = linbench.get_variant("gated-deltanet").impl("flash-qla")
    reason = impl.unavailable_reason(torch.device("cpu")) or ""
    assert "flash-qla is not installed" in reason or "FlashQLA's TileLang kernels need a Hopper" in reason
    assert "K = V = 128" in (impl.unsupported_reason(64, 64, "bf16") or "")
    assert "fp16 and bf16" in (impl.unsupported_reason(128, 128, "fp32") or "")
    assert impl.unsupported_reason(128, 128, "bf16") is None
