"""gated-deltanet's ``flashinfer`` and ``cudnn`` impls: FlashInfer's Gated DeltaNet prefill and
cuDNN's engine through it (CPU; each stood in by fla's reference for the gated delta rule behind
FlashInfer's documented convention: packed (T, H, D) tokens with cu_seqlens, the forget gate in
linear space, alpha = e^g).

Each call is bound to the installed function's signature where flashinfer-python is installed
(read from its source), so a renamed argument fails on CPU.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
import torch
from fla_stand_ins import Kernels
from source_signature import installed_file, source_signature

import linbench
from linbench.check.correctness import check_impl
from linbench.shape import Shape
from linbench.variants import backends
from linbench.variants.gated import flashinfer_gdn
from linbench.variants.varlen import Segments

SOURCES = {"flashinfer": "gdn_prefill.py", "cudnn": "cudnn/linear_attention.py"}


class StandIn:
    """FlashInfer's documented GDN prefill, computed per sequence by fla's reference."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.fla = Kernels()

    def __call__(self, q: Any, k: Any, v: Any, **kwargs: Any) -> torch.Tensor:
        self.calls.append({"q": q, "k": k, "v": v, **kwargs})
        cu = kwargs["cu_seqlens"].tolist()
        outs = []
        for a, b in itertools.pairwise(cu):
            out, _ = self.fla.chunk_gated_delta_rule(
                q=q[None, a:b],
                k=k[None, a:b],
                v=v[None, a:b],
                g=kwargs["g"][None, a:b].log(),  # linear-space alpha back to fla's log-gate
                beta=kwargs["beta"][None, a:b],
                scale=kwargs["scale"],
                use_qk_l2norm_in_kernel=kwargs["use_qk_l2norm_in_kernel"],
            )
            outs.append(out[0])
        return torch.cat(outs, dim=0)


@pytest.fixture(params=flashinfer_gdn.ENGINES, ids=lambda engine: engine.impl)
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> tuple[flashinfer_gdn.Engine, StandIn]:
    fake = StandIn()
    monkeypatch.setattr(flashinfer_gdn, "kernel", lambda engine: fake)
    monkeypatch.setattr(flashinfer_gdn, "unavailable", lambda engine, device: None)
    return request.param, fake


def test_the_mapping_passes_the_gate_forward(engine: tuple[Any, StandIn]) -> None:
    chosen, fake = engine
    gdn = linbench.get_variant("gated-deltanet")
    case = check_impl(gdn, chosen.impl, Shape(2, 2, 20, 16, 16), causal=True, dtype=torch.bfloat16, gradients=False)
    assert case.ok, case.describe()
    assert fake.calls[0]["q"].shape == (40, 2, 16) and fake.calls[0]["cu_seqlens"].tolist() == [0, 20, 40]
    assert backends.take_noted() == f"flashinfer {chosen.function}"


def test_a_pack_is_one_call_with_its_boundaries_each_sequence_as_alone(engine: tuple[Any, StandIn]) -> None:
    chosen, fake = engine
    q, k, v = (torch.randn(1, 2, 20, 16).to(torch.bfloat16) for _ in range(3))
    g, beta = torch.nn.functional.logsigmoid(torch.randn(1, 2, 20)), torch.rand(1, 2, 20).to(torch.bfloat16)
    segments = Segments.from_lengths((7, 13))
    out = flashinfer_gdn.gdn_packed(chosen, q, k, v, segments=segments, causal=True, g=g, beta=beta, scale=None)
    assert fake.calls[-1]["cu_seqlens"].tolist() == [0, 7, 20]
    alone = [
        flashinfer_gdn.gdn(
            chosen, *(x[:, :, a:b] for x in (q, k, v)), causal=True, g=g[:, :, a:b], beta=beta[:, :, a:b], scale=None
        )
        for a, b in ((0, 7), (7, 20))
    ]
    torch.testing.assert_close(out, torch.cat(alone, dim=2))


def test_a_gradient_is_refused_with_the_reason(engine: tuple[Any, StandIn]) -> None:
    chosen, _ = engine
    case = check_impl(
        linbench.get_variant("gated-deltanet"), chosen.impl, Shape(1, 2, 8, 16, 16), causal=True, dtype=torch.bfloat16
    )
    assert case.unavailable is not None and "forward only" in case.unavailable


def test_each_call_binds_to_the_installed_flashinfer(engine: tuple[Any, StandIn]) -> None:
    chosen, fake = engine
    path = installed_file("flashinfer", SOURCES[chosen.impl])
    if path is None:
        pytest.skip("flashinfer-python is not installed (pip install flashinfer-python)")
    gdn = linbench.get_variant("gated-deltanet")
    check_impl(gdn, chosen.impl, Shape(1, 2, 8, 16, 16), causal=True, dtype=torch.bfloat16, gradients=False)
    source_signature(path, chosen.function).bind(**fake.calls[0])


@pytest.mark.parametrize("chosen", flashinfer_gdn.ENGINES, ids=lambda engine: engine.impl)
def test_each_says_why_it_cannot_run(chosen: flashinfer_gdn.Engine) -> None:
    impl = linbench.get_variant("gated-deltanet").impl(chosen.impl)
    reason = impl.unavailable_reason(torch.device("cpu")) or ""
    assert "not installed" in reason or "CUDA kernel" in reason
    assert "fp16 and bf16" in (impl.unsupported_reason(128, 128, "fp32") or "")
    assert impl.unsupported_reason(128, 128, "bf16") is None
