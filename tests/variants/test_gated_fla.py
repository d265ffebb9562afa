"""The gated variants' fla impls map linbench's arguments onto fla-core 0.6's kernels (CPU).

fla's kernels are Triton kernels and need a GPU; here each is stood in by fla's own pure-PyTorch
reference for it (its ``naive.py`` where fla is installed, else a copy written from fla's source:
tests/variants/fla_stand_ins.py), with the kernel's exact keyword names. The correctness gate
then judges the impls against the variants' fp64 recurrent reference, outputs and the
gradients of q, k, v, the gates and β: a layout, scale, gate or argument-order mistake fails it.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from fla_naive import fla_source
from fla_stand_ins import Kernels

import linbench
from linbench.check.correctness import check_impl
from linbench.shape import Shape
from linbench.variants.feature_forms import fla as fla_common
from linbench.variants.gated import fla as gated_fla
from linbench.variants.registry import ImplUnavailableError

SHAPE = Shape(2, 3, 37, 16, 24)  # Dk ≠ Dv; 37 tokens, a multiple of no chunk
GATED = ("retention", "lightning", "simple-gla", "gla", "deltanet", "gated-deltanet", "kda")
# fla has no backward for these two fused recurrent kernels.
FORWARD_ONLY = (("gated-deltanet", "fla-recurrent"), ("kda", "fla-recurrent"))
SETTINGS = (None, {"gate_regime": "strong"})


@pytest.fixture
def kernels(monkeypatch: pytest.MonkeyPatch) -> Kernels:
    """fla's kernels stood in by its references, and fla declared runnable (on CPU too)."""
    fake = Kernels()
    monkeypatch.setattr(gated_fla, "fla_kernel", fake.lookup)
    monkeypatch.setattr(fla_common, "fla_unavailable", lambda *args: None)
    return fake


def _settings(name: str) -> list[dict[str, Any]]:
    """The default and the check's other settings (strong gates, retention's γ = 0.5)."""
    return [{}, *(dict(extra) for extra in linbench.get_variant(name).check_params)]


def _dtype(name: str, kernel: str) -> torch.dtype:
    """fp32, but bf16 for chunk_delta_rule, which asserts against fp32."""
    return torch.bfloat16 if (name, kernel) == ("deltanet", "fla") else torch.float32


@pytest.mark.parametrize("name", GATED)
@pytest.mark.parametrize("kernel", ["fla", "fla-recurrent"])
def test_the_gate_passes_every_fla_impl_on_fla_references(kernels: Kernels, name: str, kernel: str) -> None:
    gradients = (name, kernel) not in FORWARD_ONLY
    for params in _settings(name):
        case = check_impl(
            linbench.get_variant(name),
            kernel,
            SHAPE,
            causal=True,
            dtype=_dtype(name, kernel),
            gradients=gradients,
            params=params,
        )
        assert case.ok, case.describe()
        if gradients and linbench.get_variant(name).extra_inputs:
            assert {f"grad {extra.name}" for extra in linbench.get_variant(name).extra_inputs} <= {
                c.name for c in case.comparisons
            }
    assert kernels.calls


def test_the_kernels_get_fla_layout_scale_and_gate_names(kernels: Kernels) -> None:
    """(B, S, H, D) views, the gates as (B, S, H[, Dk]), q's factor as ``scale``, and fused
    recurrent GLA's gate by its own name ``gk``; the delta rule normalises in the kernel."""
    q, k, v = (torch.randn(2, 3, 11, 8) for _ in range(3))
    g, g_channel, beta = torch.zeros(2, 3, 11), torch.zeros(2, 3, 11, 8), torch.full((2, 3, 11), 0.5)
    linbench.attention(q, k, v, variant="simple-gla", impl="fla", g=g, scale=0.25)
    linbench.attention(q, k, v, variant="gla", impl="fla-recurrent", g=g_channel)
    linbench.attention(q, k, v, variant="gated-deltanet", impl="fla", g=g, beta=beta)
    linbench.attention(q, k, v, variant="retention", impl="fla")
    names = [name for name, _ in kernels.calls]
    assert names == ["chunk_simple_gla", "fused_recurrent_gla", "chunk_gated_delta_rule", "chunk_retention"]
    simple, channel, gated, retention = (given for _, given in kernels.calls)
    assert simple == {"q": (2, 11, 3, 8), "g": (2, 11, 3), "g_gamma": None, "scale": 0.25}
    assert channel["gk"] == (2, 11, 3, 8) and channel["scale"] == 8**-0.5
    assert gated["g"] == gated["beta"] == (2, 11, 3) and gated["norm"] is True
    assert retention == {"q": (2, 11, 3, 8), "scale": 8**-0.5}


def test_kda_hands_fla_its_per_channel_gate_and_beta(kernels: Kernels) -> None:
    """chunk_kda and fused_recurrent_kda get g as (B, S, H, Dk), β as (B, S, H), q's factor,
    and normalise q and k in the kernel."""
    q, k, v = (torch.randn(2, 3, 11, 8) for _ in range(3))
    g, beta = torch.zeros(2, 3, 11, 8), torch.full((2, 3, 11), 0.5)
    linbench.attention(q, k, v, variant="kda", impl="fla", g=g, beta=beta, scale=0.25)
    linbench.attention(q, k, v, variant="kda", impl="fla-recurrent", g=g, beta=beta)
    (chunk, chunk_given), (fused, fused_given) = kernels.calls
    assert (chunk, fused) == ("chunk_kda", "fused_recurrent_kda")
    assert chunk_given == {"q": (2, 11, 3, 8), "g": (2, 11, 3, 8), "beta": (2, 11, 3), "scale": 0.25, "norm": True}
    assert fused_given["g"] == (2, 11, 3, 8) and fused_given["scale"] == 8**-0.5 and fused_given["norm"] is True


def test_retention_with_a_given_gamma_runs_simple_gla_with_a_constant_decay(kernels: Kernels) -> None:
    q, k, v = (torch.randn(1, 2, 9, 4) for _ in range(3))
    linbench.attention(q, k, v, variant="retention", impl="fla-recurrent", gamma=0.5)
    name, given = kernels.calls[-1]
    assert name == "fused_recurrent_simple_gla" and given["g_gamma"] == (2,) and given["g"] is None


def test_lightning_hands_fla_the_layer_and_fla_builds_the_same_decay(kernels: Kernels) -> None:
    """chunk_lightning_attn and fused_recurrent_lightning_attn get the layer's index and count
    by fla's names; the stand-ins build fla's decay from them and must match linbench's."""
    q, k, v = (torch.randn(1, 4, 9, 8) for _ in range(3))
    ours = linbench.attention(q, k, v, variant="lightning", impl="recurrent", layer=3, layers=10)
    for impl in ("fla", "fla-recurrent"):
        theirs = linbench.attention(q, k, v, variant="lightning", impl=impl, layer=3, layers=10)
        torch.testing.assert_close(theirs, ours, rtol=1e-5, atol=1e-5)
    (chunk, given), (fused, _) = kernels.calls
    assert (chunk, fused) == ("chunk_lightning_attn", "fused_recurrent_lightning_attn")
    assert given == {"q": (1, 9, 4, 8), "layer_idx": 3, "num_layers": 10, "scale": 8**-0.5}
    with pytest.raises(ValueError, match="layer must be below layers"):
        linbench.attention(q, k, v, variant="lightning", impl="fla", layer=10, layers=10)


def test_a_wrong_scale_fails_the_gate(kernels: Kernels, monkeypatch: pytest.MonkeyPatch) -> None:
    """The stand-ins are sharp: an adapter that passed no scale fails once the scale is not Dk^-1/2."""
    monkeypatch.setattr(gated_fla, "resolve_scale", lambda scale, dim_k: None)
    case = check_impl(
        linbench.get_variant("gla"), "fla", SHAPE, causal=True, dtype=torch.float32, params={"scale": 0.5}
    )
    assert not case.ok


def test_what_fla_cannot_do_is_unavailable_not_wrong(kernels: Kernels) -> None:
    """No backward for the fused recurrent gated delta rule or kda, no gradient for a constant γ, no
    fp32 chunk_delta_rule, no fp64: each is ImplUnavailableError (a point skipped with the reason)."""
    q, k, v = (torch.randn(1, 2, 9, 4, requires_grad=True) for _ in range(3))
    g, beta = torch.zeros(1, 2, 9), torch.full((1, 2, 9), 0.5)
    with pytest.raises(ImplUnavailableError, match="no backward"):
        linbench.attention(q, k, v, variant="gated-deltanet", impl="fla-recurrent", g=g, beta=beta)
    with pytest.raises(ImplUnavailableError, match="fused_recurrent_kda has no backward"):
        linbench.attention(q, k, v, variant="kda", impl="fla-recurrent", g=torch.zeros(1, 2, 9, 4), beta=beta)
    with pytest.raises(ImplUnavailableError, match="no gradient reaches it"):
        linbench.attention(q, k, v, variant="retention", impl="fla", gamma=torch.full((2,), 0.5, requires_grad=True))
    with pytest.raises(ImplUnavailableError, match="fp16 and bf16 only"):
        linbench.attention(q, k, v, variant="deltanet", impl="fla", beta=beta)
    with pytest.raises(ImplUnavailableError, match="no fp64 form"):
        linbench.attention(q.double(), k.double(), v.double(), variant="simple-gla", impl="fla", g=g.double())
    assert linbench.get_variant("deltanet").impl("fla").unsupported_reason(64, 64, "fp32") == gated_fla.FP32_REFUSED


@pytest.mark.parametrize("name", GATED)
def test_without_fla_the_impls_say_why_and_are_optional(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fla_common, "fla_version", lambda: None)
    for kernel in ("fla", "fla-recurrent"):
        impl = linbench.get_variant(name).impl(kernel)
        assert impl.optional and impl.layout == "bshd" and impl.library == "fla-core"
        assert "fla-core is not installed" in (impl.unavailable_reason(torch.device("cpu")) or "")


def test_which_references_stood_in() -> None:
    """Says which references the mapping was checked against on this machine (fla's own where
    it is installed)."""
    assert fla_source() is None or (fla_source() / "ops" / "gla" / "naive.py").is_file()


@pytest.mark.cuda
@pytest.mark.parametrize("name", GATED)
@pytest.mark.parametrize("kernel", ["fla", "fla-recurrent"])
def test_real_fla_matches_the_reference_on_cuda(name: str, kernel: str) -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    variant = linbench.get_variant(name)
    reason = variant.impl(kernel).unavailable_reason(torch.device("cuda"))
    if reason:
        pytest.skip(reason)
    gradients = (name, kernel) not in FORWARD_ONLY
    for params in _settings(name):
        case = check_impl(
            variant, kernel, Shape(2, 4, 300, 64, 64), causal=True, dtype=torch.bfloat16, device="cuda",
            gradients=gradients, params=params,
        )  # fmt: skip
        assert case.ok, case.describe()
