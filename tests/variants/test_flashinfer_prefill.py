"""softmax's ``flashinfer`` impl: FlashInfer's single prefill (CPU; stood in by SDPA behind its
documented signature: one request's (S, H, D) NHD tensors, ``causal``, ``sm_scale``).

The call is bound to the installed function's signature where flashinfer-python is installed
(read from its source: flashinfer wants a GPU), so a renamed argument fails on CPU.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.nn.functional as F
from source_signature import installed_file, source_signature

import linbench
from linbench.check.correctness import check_impl
from linbench.check.packed import check_packed
from linbench.shape import Shape
from linbench.variants import backends
from linbench.variants.softmax import flashinfer_prefill


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []

    def single_prefill(q: Any, k: Any, v: Any, **kwargs: Any) -> torch.Tensor:
        seen.append({"q": q, "k": k, "v": v, **kwargs})
        grouped = k.shape[1] != q.shape[1]
        heads_first = (t.transpose(0, 1) for t in (q, k, v))
        out = F.scaled_dot_product_attention(*heads_first, is_causal=kwargs["causal"], enable_gqa=grouped)
        return out.transpose(0, 1)

    monkeypatch.setattr(flashinfer_prefill, "kernel", lambda: single_prefill)
    monkeypatch.setattr(flashinfer_prefill, "unavailable", lambda device: None)
    return seen


def test_the_mapping_passes_the_gate_with_gqa_and_on_a_pack(calls: list[dict[str, Any]]) -> None:
    softmax = linbench.get_variant("softmax")
    for shape in (Shape(2, 2, 24, 16, 16), Shape(1, 4, 20, 16, 16, kv_heads=2)):
        case = check_impl(softmax, "flashinfer", shape, causal=True, dtype=torch.bfloat16)
        assert case.ok, case.describe()
    assert calls[0]["q"].shape == (24, 2, 16) and calls[0]["kv_layout"] == "NHD"
    assert backends.take_noted() == "flashinfer single_prefill_with_kv_cache"
    case = check_packed(softmax, "flashinfer", (7, 13), 2, 16, 16, packing="packed", causal=True, dtype=torch.bfloat16)
    assert case.ok, case.describe()


def test_the_call_binds_to_the_installed_flashinfer(calls: list[dict[str, Any]]) -> None:
    path = installed_file("flashinfer", "prefill.py")
    if path is None:
        pytest.skip("flashinfer-python is not installed (pip install flashinfer-python)")
    q = torch.randn(1, 2, 8, 16, dtype=torch.bfloat16)
    linbench.attention(q, q, q, variant="softmax", impl="flashinfer")
    source_signature(path, flashinfer_prefill.FUNCTION).bind(**calls[0])


def test_it_says_why_it_cannot_run() -> None:
    impl = linbench.get_variant("softmax").impl("flashinfer")
    reason = impl.unavailable_reason(torch.device("cpu")) or ""
    assert "not installed" in reason or "CUDA kernel" in reason
    assert "fp16 and bf16" in (impl.unsupported_reason(128, 128, "fp32") or "")
    assert "Dk = Dv" in (impl.unsupported_reason(96, 96, "bf16") or "")
    assert impl.unsupported_reason(128, 128, "bf16") is None
