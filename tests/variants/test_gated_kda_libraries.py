"""kda's ``flash-kda``, ``flashinfer``, ``cudnn`` and ``cula`` impls and lightning's ``cula``
(CPU; each library stood in by kda_library_stand_ins.py, which computes what the library
documents from the arguments it receives, so the mapping is proven against linbench's fp64
reference: the gate's space, the layout, the scale, the head grouping, the packs).

Each call is bound to the library function's signature read from its source where the package
is found (without importing it: they need their GPU), so a renamed or reordered argument fails
on CPU; skipped, with the reason, where it is not.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from kda_library_stand_ins import CuDNNKDA, CuLA, FlashInferKDA, FlashKDA
from source_signature import installed_file, source_signature

import linbench
from linbench.check.correctness import check_impl
from linbench.check.matrix import SHAPES, VALUE_HEADS_SHAPE, run_cell, shapes_for
from linbench.errors import ImplUnavailableError
from linbench.shape import Shape
from linbench.variants import backends
from linbench.variants.gated import cudnn_kda, cula, flash_kda, flashinfer_kda
from linbench.variants.varlen import Segments

SHAPE = Shape(1, 2, 20, 16, 16)
VALUE_HEADS = Shape(1, 2, 12, 16, 16, v_heads=4)
KDA = ("flash-kda", "flashinfer", "cudnn", "cula")


@pytest.fixture
def libraries(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Every library stood in and available; the stand-ins, by impl name."""
    fakes = {"flash-kda": FlashKDA(), "flashinfer": FlashInferKDA(), "cudnn": CuDNNKDA(), "cula": CuLA()}
    monkeypatch.setattr(flash_kda, "flash_kda_kernel", lambda: fakes["flash-kda"].fwd)
    monkeypatch.setattr(flashinfer_kda, "flashinfer_kda_kernel", lambda: fakes["flashinfer"].recurrent_kda)
    monkeypatch.setattr(cudnn_kda, "cudnn_kda_kernel", lambda: fakes["cudnn"].kimi_delta_attention)
    monkeypatch.setattr(cula, "cula_function", fakes["cula"].lookup)
    for module in (flash_kda, flashinfer_kda, cudnn_kda):
        monkeypatch.setattr(module, "unavailable", lambda device: None)
    monkeypatch.setattr(cula, "unavailable", lambda device, arches, module: None)
    return fakes


@pytest.mark.parametrize("impl", KDA)
def test_each_kda_mapping_passes_the_check_in_bf16(libraries: dict[str, Any], impl: str) -> None:
    kda = linbench.get_variant("kda")
    case = check_impl(kda, impl, SHAPE, causal=True, dtype=torch.bfloat16, gradients=False)
    assert case.ok, case.describe()
    assert backends.take_noted() is not None


def test_the_backend_names_the_library_and_function(libraries: dict[str, Any]) -> None:
    kda = linbench.get_variant("kda")
    expected = {
        "flash-kda": "flash-kda fwd",
        "flashinfer": "flashinfer recurrent_kda (auto)",
        "cudnn": "cudnn kimi_delta_attention",
        "cula": "cula chunk_kda",
    }
    for impl, backend in expected.items():
        check_impl(kda, impl, Shape(1, 1, 4, 16, 16), causal=True, dtype=torch.bfloat16, gradients=False)
        assert backends.take_noted() == backend


@pytest.mark.parametrize("impl", ("cudnn", "cula"))
def test_the_kernels_with_a_backward_pass_the_gradients_too(libraries: dict[str, Any], impl: str) -> None:
    case = check_impl(linbench.get_variant("kda"), impl, SHAPE, causal=True, dtype=torch.bfloat16)
    assert case.ok, case.describe()


@pytest.mark.parametrize("impl", KDA)
def test_more_value_heads_natively_or_q_and_k_repeated(libraries: dict[str, Any], impl: str) -> None:
    case = check_impl(
        linbench.get_variant("kda"), impl, VALUE_HEADS, causal=True, dtype=torch.bfloat16, gradients=False
    )
    assert case.ok, case.describe()


def test_flash_kda_gets_the_gate_before_activation(libraries: dict[str, Any]) -> None:
    """FlashKDA recomputes −5·σ(e^{A_log}(g + dt_bias)): it is handed logit(g/−5), A_log 0 and
    dt_bias 0 (bf16, (B, T, H, K)); handing it the log-gate itself fails the check."""
    kda = linbench.get_variant("kda")
    assert check_impl(kda, "flash-kda", SHAPE, causal=True, dtype=torch.bfloat16, gradients=False).ok
    call = libraries["flash-kda"].calls[-1]
    assert call["g"].shape == (1, 20, 2, 16) and call["lower_bound"] == -5.0
    assert not call["A_log"].any() and not call["dt_bias"].any() and call["dt_bias"].shape == (2, 16)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(flash_kda, "gate_logits", lambda g: g.to(torch.bfloat16))  # the log-gate, unmapped
        broken = check_impl(kda, "flash-kda", SHAPE, causal=True, dtype=torch.bfloat16, gradients=False)
    assert not broken.ok


MODULES = {"flash-kda": flash_kda, "flashinfer": flashinfer_kda, "cudnn": cudnn_kda, "cula": cula}


@pytest.mark.parametrize(("variant", "impl"), [*(("kda", name) for name in KDA), ("lightning", "cula")])
def test_a_planted_wrong_scale_fails_the_check(libraries: dict[str, Any], variant: str, impl: str) -> None:
    """The stand-ins compute with the scale they are given: a mapping that passes a wrong one fails."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(MODULES[impl], "resolve_scale", lambda scale, dim_k: 2 * dim_k**-0.5)
        chosen = linbench.get_variant(variant)
        case = check_impl(chosen, impl, SHAPE, causal=True, dtype=torch.bfloat16, gradients=False)
    assert not case.ok and case.unavailable is None


def test_a_gate_below_the_floor_is_refused_with_its_value(libraries: dict[str, Any]) -> None:
    q = torch.randn(1, 2, 8, 16, dtype=torch.bfloat16)
    g = torch.full((1, 2, 8, 16), -0.5)
    g[0, 1, 3, 2] = -6.25
    for impl in ("flash-kda", "cula"):
        with pytest.raises(ImplUnavailableError, match=r"bounded below at -5; these gates go down to -6.25"):
            linbench.attention(q, q, q, variant="kda", impl=impl, g=g, beta=torch.rand(1, 2, 8).to(q.dtype))


@pytest.mark.parametrize("impl", ("flash-kda", "flashinfer"))
def test_a_forward_only_kernel_refuses_gradients_with_the_reason(libraries: dict[str, Any], impl: str) -> None:
    case = check_impl(linbench.get_variant("kda"), impl, Shape(1, 2, 8, 16, 16), causal=True, dtype=torch.bfloat16)
    assert case.unavailable is not None and "forward-only" in case.unavailable


@pytest.mark.parametrize("impl", KDA)
def test_a_pack_is_one_call_with_its_boundaries_each_sequence_as_alone(libraries: dict[str, Any], impl: str) -> None:
    kda = linbench.get_variant("kda").impl(impl)
    q, k, v = (torch.randn(1, 2, 20, 16).to(torch.bfloat16) for _ in range(3))
    g = torch.nn.functional.logsigmoid(torch.randn(1, 2, 20, 16))
    beta = torch.rand(1, 2, 20).to(torch.bfloat16)
    assert kda.packed is not None
    out = kda.packed(q, k, v, segments=Segments.from_lengths((7, 13)), causal=True, g=g, beta=beta, scale=None)
    alone = [
        kda.fn(*(x[:, :, a:b] for x in (q, k, v)), causal=True, g=g[:, :, a:b], beta=beta[:, :, a:b], scale=None)
        for a, b in ((0, 7), (7, 20))
    ]
    torch.testing.assert_close(out, torch.cat(alone, dim=2))


def test_cula_lightning_passes_the_check_whole_and_packed(libraries: dict[str, Any]) -> None:
    lightning = linbench.get_variant("lightning")
    for shape, params in ((SHAPE, {}), (SHAPE, {"layer": 40}), (VALUE_HEADS, {})):
        case = check_impl(lightning, "cula", shape, causal=True, dtype=torch.bfloat16, gradients=False, params=params)
        assert case.ok, case.describe()
    assert backends.take_noted() == "cula lightning_attn_fwd"
    impl = lightning.impl("cula")
    q = torch.randn(1, 2, 12, 16).to(torch.bfloat16)
    assert impl.packed is not None
    out = impl.packed(q, q, q, segments=Segments.from_lengths((5, 7)), causal=True, layer=0, layers=80, scale=None)
    alone = [impl.fn(*(q[:, :, a:b],) * 3, causal=True, layer=0, layers=80, scale=None) for a, b in ((0, 5), (5, 12))]
    torch.testing.assert_close(out, torch.cat(alone, dim=2))
    assert libraries["cula"].calls[-3][1]["cu_seqlens"].tolist() == [0, 5, 12]


def test_each_says_why_it_cannot_run_here() -> None:
    kda, lightning = linbench.get_variant("kda"), linbench.get_variant("lightning")
    cpu = torch.device("cpu")
    for impl in (*(kda.impl(name) for name in KDA), lightning.impl("cula")):
        reason = impl.unavailable_reason(cpu) or ""
        assert "is not installed (" in reason or "is a CUDA kernel, not for cpu" in reason, impl.name
        assert impl.unsupported_reason(128, 128, "bf16") is None, impl.name
        assert impl.unsupported_reason(128, 128, "fp32") is not None, impl.name
    assert "K = V = 128" in (kda.impl("flash-kda").unsupported_reason(64, 64, "bf16") or "")
    assert kda.impl("cudnn").unsupported_reason(64, 64, "bf16") is None
    assert "fp16" in (kda.impl("flash-kda").unsupported_reason(128, 128, "fp16") or "")


# Where each library's function is defined, inside its package.
SOURCES = {
    "flash-kda": ("flash_kda", "__init__.py", "fwd"),
    "flashinfer": ("flashinfer", "kda.py", "recurrent_kda"),
    "cudnn": ("cudnn", "linear_attention/ops/kda.py", "kimi_delta_attention"),
    "cula": ("cula", "kda/chunk.py", "chunk_kda"),
}


@pytest.mark.parametrize("impl", KDA)
def test_each_kda_call_binds_to_the_library_source(libraries: dict[str, Any], impl: str) -> None:
    package, relative, function = SOURCES[impl]
    path = installed_file(package, relative)
    if path is None:
        pytest.skip(f"{package} is not found (its kda impl's library is not installed)")
    check_impl(
        linbench.get_variant("kda"), impl, Shape(1, 1, 4, 16, 16), causal=True, dtype=torch.bfloat16, gradients=False
    )
    fake = libraries[impl]
    arguments = fake.calls[-1][1] if impl == "cula" else fake.calls[-1]
    source_signature(path, function).bind(**arguments)


def test_cula_lightning_binds_to_the_library_source(libraries: dict[str, Any]) -> None:
    path = installed_file("cula", "ops/lightning_attn.py")
    if path is None:
        pytest.skip("cula is not found (pip install cuda-linear-attention)")
    check_impl(
        linbench.get_variant("lightning"),
        "cula",
        Shape(1, 1, 4, 16, 16),
        causal=True,
        dtype=torch.bfloat16,
        gradients=False,
    )
    name, arguments = libraries["cula"].calls[-1]
    source_signature(path, name).bind(**arguments)


def test_cula_hopper_prefill_takes_the_same_call(libraries: dict[str, Any]) -> None:
    """On SM90 the same arguments go to kda_prefill_hopper (cula_kda_prefill)."""
    path = installed_file("cula", "kda/hopper_fused_fwd.py")
    if path is None:
        pytest.skip("cula is not found (pip install cuda-linear-attention)")
    check_impl(
        linbench.get_variant("kda"), "cula", Shape(1, 1, 4, 16, 16), causal=True, dtype=torch.bfloat16, gradients=False
    )
    source_signature(path, "cula_kda_prefill").bind(**libraries["cula"].calls[-1][1])


@pytest.mark.parametrize("regime", ("strong", "lower-bound"))
@pytest.mark.parametrize("impl", ("flash-kda", "cula"))
def test_the_bounded_gate_kernels_pass_at_kimi_s_gates(libraries: dict[str, Any], impl: str, regime: str) -> None:
    """KDA's lower-bound profile puts many gates near −5, where FlashKDA's logit is large."""
    kda = linbench.get_variant("kda")
    params = {"gate_regime": regime}
    case = check_impl(kda, impl, SHAPE, causal=True, dtype=torch.bfloat16, gradients=False, params=params)
    assert case.ok, case.describe()


def test_a_gate_of_minus_six_passes_the_log_gate_kernels_and_is_refused_by_the_bounded_ones(
    libraries: dict[str, Any],
) -> None:
    """cuDNN and FlashInfer take any log-gate; FlashKDA and cuLA's safe gate stop at −5."""
    kda, params = linbench.get_variant("kda"), {"log_gate": -6.0}
    for impl in ("flashinfer", "cudnn"):
        case = check_impl(kda, impl, SHAPE, causal=True, dtype=torch.bfloat16, gradients=False, params=params)
        assert case.ok, case.describe()
    for impl in ("flash-kda", "cula"):
        case = check_impl(kda, impl, SHAPE, causal=True, dtype=torch.bfloat16, gradients=False, params=params)
        assert "bounded below at -5; these gates go down to -6" in (case.unavailable or "")


def test_linbench_check_proves_a_kernel_of_head_size_128_alone_at_that_size(libraries: dict[str, Any]) -> None:
    """The check matrix's shapes have head sizes 8 to 32, which FlashKDA refuses: it is checked
    at the libraries' 128 instead, at every gate setting, and the other impls are not."""
    kda = linbench.get_variant("kda")
    cell = run_cell(kda, "flash-kda", "bf16", True, torch.device("cpu"))
    proven = [case for case in cell.cases if not case.unavailable]
    assert len(proven) == 1 + len(kda.check_params) and not cell.failures
    assert all(case.ok and (case.shape.dim_k, case.shape.seq) == (128, 70) for case in proven)
    assert "forward-only" in (cell.outputs_only or "")  # its outputs proven, its gradients said not to be
    assert shapes_for(kda, "chunked", "bf16", "cpu") == (*SHAPES, VALUE_HEADS_SHAPE)  # kda takes value heads
    with_backward = run_cell(kda, "cudnn", "bf16", True, torch.device("cpu"))
    assert with_backward.outputs_only is None and not with_backward.failures
    assert all(len(case.comparisons) > 1 for case in with_backward.cases if not case.unavailable)
