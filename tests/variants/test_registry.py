"""The registry's public face: names, impls, references, params, FLOPs, complexity, plugins."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

import linbench
from linbench.errors import ImplUnavailableError
from linbench.variants.extra_inputs import draw_extra_inputs
from linbench.variants.registry import Impl, Variant, exponent_in_s, register_variant, unregister_variant

EXPECTED_IMPLS = {
    "softmax": [
        *("naive", "sdpa", "sdpa-flash", "sdpa-efficient", "sdpa-cudnn", "sdpa-math", "varlen"),
        *("fa2", "fa3", "fa4", "flashinfer"),
    ],
    "cosine": ["quadratic", "naive", "chunked", "recurrent", "kernel", "compiled", "fla"],
    "cosformer": ["quadratic", "naive", "chunked", "recurrent", "kernel", "compiled"],
    "heinsen": ["quadratic", "naive", "chunked", "recurrent", "kernel"],
    "linear": ["quadratic", "chunked", "recurrent", "kernel", "compiled", "fla"],
}
GATED = ("retention", "lightning", "simple-gla", "gla", "deltanet", "gated-deltanet", "kda")
EXPECTED_IMPLS |= {name: ["recurrent", "quadratic", "chunked", "fla", "fla-recurrent"] for name in GATED}
EXPECTED_IMPLS["gated-deltanet"] = [
    *EXPECTED_IMPLS["gated-deltanet"],
    *("fla-dispatch", "flash-qla", "flashinfer", "cudnn"),
]
EXPECTED_IMPLS["kda"] = [
    *EXPECTED_IMPLS["kda"],
    *("fla-dispatch", "flash-kda", "flashinfer", "flashinfer-recurrent", "cudnn", "cula"),
]
EXPECTED_IMPLS["lightning"] = [*EXPECTED_IMPLS["lightning"], "cula"]
EXPECTED_IMPLS["mamba2"] = ["recurrent", "quadratic", "chunked", "mamba-ssm"]
EXPECTED_IMPLS["gdn2"] = ["recurrent", "quadratic", "chunked", "fla", "fla-recurrent"]
EXPECTED_IMPLS["rwkv7"] = ["recurrent", "quadratic", "chunked", "fla", "fla-recurrent"]


def test_every_variant_and_impl_is_registered() -> None:
    assert linbench.list_variants() == list(EXPECTED_IMPLS)
    for name, impls in EXPECTED_IMPLS.items():
        variant = linbench.get_variant(name)
        assert variant.name == name
        assert list(variant.impls) == impls
        assert variant.reference in variant.impls


def test_params_and_defaults() -> None:
    assert dict(linbench.get_variant("cosine").params) == {"norm_const": 0.5, "seq_len": None}
    assert dict(linbench.get_variant("cosformer").params) == {"M": None, "eps": 1e-6}
    assert dict(linbench.get_variant("linear").params) == {"eps": 1e-6}
    assert dict(linbench.get_variant("softmax").params) == {}


def test_complexity_strings() -> None:
    softmax, cosine = linbench.get_variant("softmax"), linbench.get_variant("cosine")
    assert (softmax.time_complexity, softmax.memory_complexity) == ("O(s²d)", "O(s²)")
    assert (cosine.time_complexity, cosine.memory_complexity) == ("O(sd²)", "O(sd)")
    assert cosine.impls["naive"].memory_complexity == "O(sd²)"
    assert cosine.impls["recurrent"].memory_complexity == "O(d²)"


def test_the_declared_exponents_agree_with_the_complexity_strings() -> None:
    """Planning reads the declared powers of s, a reader the strings: they must say the same."""
    for name in linbench.list_variants():
        variant = linbench.get_variant(name)
        assert variant.time_exponent == exponent_in_s(variant.time_complexity), name
        for impl in variant.impls.values():
            assert impl.time_exponent == exponent_in_s(impl.time_complexity), f"{name}:{impl.name}"
        for decoder in variant.decoders.values():
            assert decoder.state_exponent == exponent_in_s(decoder.state_memory), f"{name}:{decoder.name}"
            assert decoder.step_exponent == exponent_in_s(decoder.step_time), f"{name}:{decoder.name}"
    softmax, cosine = linbench.get_variant("softmax"), linbench.get_variant("cosine")
    assert (softmax.impl("sdpa").time_exponent, cosine.impl("quadratic").time_exponent) == (2, 2)
    assert (cosine.time_exponent, cosine.impl("chunked").time_exponent) == (1, 1)
    kvcache, recompute, recurrent = (
        softmax.decoder("kvcache"),
        softmax.decoder("recompute"),
        cosine.decoder("recurrent"),
    )
    assert (kvcache.state_grows, kvcache.step_exponent, recompute.step_exponent) == (True, 1, 2)
    assert (recurrent.state_grows, recurrent.step_exponent) == (False, 0)


def test_a_plugin_that_declares_no_exponent_gets_one_read_from_its_strings() -> None:
    impl = Impl("slow", lambda q, k, v, *, causal: v, "", "O(S^2 d)", "O(s)")
    assert impl.time_exponent == 2
    assert Impl("fast", impl.fn, "", "O(sd²)", "O(d²)").time_exponent == 1
    assert Impl("odd", impl.fn, "", "O(s²d)", "O(s²)", time_exponent=1).time_exponent == 1  # declared wins
    assert [exponent_in_s(text) for text in ("O(s²d)", "O(s^2)", "O(sd)", "O(d²)", "-")] == [2, 2, 1, 0, 0]


def test_flops_scale_as_the_complexity_says() -> None:
    softmax, cosine = linbench.get_variant("softmax"), linbench.get_variant("cosine")
    # Softmax: 2·S²·(Dk + Dv) forward; causal attends S(S+1)/2 pairs; backward 2.5x.
    assert softmax.flops(1, 1, 1024, 64, 64, False, "fwd") == 2 * 1024**2 * 128
    assert softmax.flops(1, 1, 1024, 64, 64, True, "fwd") == 1024 * 1025 / 2 * 2 * 128
    assert softmax.flops(2, 8, 1024, 64, 64, False, "fwdbwd") == 3.5 * softmax.flops(2, 8, 1024, 64, 64, False, "fwd")
    # Cosine: 4·S·Dk·Dv, linear in S and quadratic in d.
    assert cosine.flops(1, 1, 2048, 64, 64, True, "fwd") == 2 * cosine.flops(1, 1, 1024, 64, 64, True, "fwd")
    assert cosine.flops(1, 1, 1024, 128, 128, True, "fwd") == 4 * cosine.flops(1, 1, 1024, 64, 64, True, "fwd")
    assert cosine.flops(1, 1, 1024, 64, 64, True, "bwd") == 2 * cosine.flops(1, 1, 1024, 64, 64, True, "fwd")
    with pytest.raises(ValueError, match="unknown mode 'train'"):
        cosine.flops(1, 1, 1024, 64, 64, True, "train")


def test_auto_picks_chunked_and_sdpa_on_cpu() -> None:
    cpu = torch.device("cpu")
    assert linbench.get_variant("cosine").resolve_impl("auto", cpu).name == "chunked"
    assert linbench.get_variant("softmax").resolve_impl("auto", cpu).name == "sdpa"
    for name in GATED:
        assert linbench.get_variant(name).resolve_impl("auto", cpu).name == "chunked", name


def test_attention_returns_q_dtype_and_v_width() -> None:
    q, k, v = (
        torch.randn(2, 3, 10, 8, dtype=torch.bfloat16),
        torch.randn(2, 3, 10, 8, dtype=torch.bfloat16),
        torch.randn(2, 3, 10, 12, dtype=torch.bfloat16),
    )
    for name in linbench.list_variants():
        variant = linbench.get_variant(name)
        extras = draw_extra_inputs(
            variant.extra_inputs,
            (2, 3, 10, 8),
            generator=torch.Generator(),
            device="cpu",
            dtype=torch.bfloat16,
            dim_v=12,
        )
        out = linbench.attention(q, k, v, variant=name, **extras)
        assert out.shape == (2, 3, 10, 12) and out.dtype == torch.bfloat16, name


def test_the_gated_variants_are_causal_only_with_constant_state_decoders() -> None:
    """Built-in under their hyphenated names, referenced by the recurrent form, decoding with a
    Dk×Dv state beside softmax's KV cache."""
    for name in GATED:
        variant = linbench.get_variant(name)
        assert variant.masking == ("causal",) and variant.reference == "recurrent"
        assert variant.auto_order == ("chunked", "recurrent", "quadratic")
        fla = ["fla-recurrent"] if name in ("gated-deltanet", "kda") else []
        assert list(variant.decoders) == ["recurrent", *fla] and not variant.decoder("recurrent").state_grows
        assert variant.decoder("recurrent").step_exponent == 0
    extras = {name: [e.name for e in linbench.get_variant(name).extra_inputs] for name in GATED}
    assert extras == {
        "retention": [],
        "lightning": [],
        "simple-gla": ["g"],
        "gla": ["g"],
        "deltanet": ["beta"],
        "gated-deltanet": ["g", "beta"],
        "kda": ["g", "beta"],
    }
    draws = {name: [p.name for p in linbench.get_variant(name).draw_params] for name in GATED}
    assert draws["gla"] == draws["simple-gla"] == draws["gated-deltanet"] == ["gate_regime", "log_gate"]
    assert draws["kda"] == ["gate_regime", "log_gate"]
    # no gate to draw: β does not follow a regime
    assert draws["retention"] == draws["lightning"] == draws["deltanet"] == []


@pytest.fixture
def cuda_only_variant() -> Iterator[Variant]:
    def needs_cuda(device: torch.device) -> str | None:
        return None if device.type == "cuda" else "needs a CUDA device"

    variant = Variant(
        name="test-cuda-only",
        summary="O = V",
        impl_list=(
            Impl("ref", lambda q, k, v, *, causal: v, "identity", "O(s)", "O(s)"),
            Impl("gpu", lambda q, k, v, *, causal: v, "identity on GPU", "O(s)", "O(s)", availability=needs_cuda),
        ),
        reference="ref",
        param_specs=(),
        flop_formula=lambda *args: 0.0,
        time_complexity="O(s)",
        memory_complexity="O(s)",
        auto_order=("gpu", "ref"),
    )
    register_variant(variant)
    yield variant
    unregister_variant(variant.name)


def test_unavailable_impl_says_why(cuda_only_variant: Variant) -> None:
    q = torch.randn(1, 1, 4, 8)
    with pytest.raises(ImplUnavailableError, match="test-cuda-only:gpu is unavailable on cpu: needs a CUDA device"):
        linbench.attention(q, q, q, variant="test-cuda-only", impl="gpu")
    # auto falls back to what can run here
    assert torch.equal(linbench.attention(q, q, q, variant="test-cuda-only"), q)


def test_plugin_variant_is_listed_and_duplicate_names_refused(cuda_only_variant: Variant) -> None:
    assert "test-cuda-only" in linbench.list_variants()
    with pytest.raises(ValueError, match="already registered"):
        register_variant(cuda_only_variant)


def test_variant_declaration_is_checked() -> None:
    impl = Impl("a", lambda q, k, v, *, causal: v, "", "O(s)", "O(s)")
    with pytest.raises(ValueError, match="reference 'b' is not one of its impls"):
        Variant("bad", "", (impl,), "b", (), lambda *a: 0.0, "O(s)", "O(s)")


def _causal_only_variant() -> Variant:
    impl = Impl("a", lambda q, k, v, *, causal: v, "", "O(s)", "O(s)")
    return Variant("test-causal-only", "", (impl,), "a", (), lambda *a: 0.0, "O(s)", "O(s)", masking=("causal",))


def test_a_variant_declares_the_maskings_it_computes() -> None:
    causal_only = _causal_only_variant()
    assert causal_only.masking_reason(True) is None
    assert causal_only.masking_reason(False) == "test-causal-only is causal only"
    softmax = linbench.get_variant("softmax")
    assert softmax.masking == ("causal", "bidirectional")  # both, unless a variant says otherwise
    assert softmax.masking_reason(False) is None and softmax.masking_reason(True) is None
    impl = causal_only.impl("a")
    with pytest.raises(ValueError, match="masking 'sideways'; give 'causal', 'bidirectional' or both"):
        Variant("bad", "", (impl,), "a", (), lambda *a: 0.0, "O(s)", "O(s)", masking=("sideways",))
    with pytest.raises(ValueError, match="masking"):
        Variant("bad", "", (impl,), "a", (), lambda *a: 0.0, "O(s)", "O(s)", masking=())


def test_attention_refuses_a_masking_the_variant_does_not_compute() -> None:
    register_variant(_causal_only_variant())
    try:
        q = torch.randn(1, 1, 4, 8)
        with pytest.raises(ValueError, match="test-causal-only is causal only; call it with causal=True"):
            linbench.attention(q, q, q, variant="test-causal-only", causal=False)
        assert torch.equal(linbench.attention(q, q, q, variant="test-causal-only", causal=True), q)
    finally:
        unregister_variant("test-causal-only")
