"""The csrc op itself: outputs and all gradients against a dense fp64 reference."""

from __future__ import annotations

import pytest
import torch
from kernel_cases import assert_close_at_case_scale, dense_reference, random_inputs

from linbench.kernels.ops import kernel_ops, linear_attention
from linbench.measure.memory import PeakRSS

OPS = kernel_ops()


def _assert_forward_and_gradients_match(q, k, v, *, causal, eps, decay=None, chunk=64, tol=1e-10):
    expected = dense_reference(q, k, v, causal=causal, eps=eps, decay=decay, chunk=chunk)
    actual = linear_attention(q, k, v, causal=causal, eps=eps, chunk=chunk, decay=decay)
    grad_out = torch.randn_like(expected)
    want = torch.autograd.grad(expected, (q, k, v), grad_out)
    got = torch.autograd.grad(actual, (q, k, v), grad_out)
    torch.testing.assert_close(actual, expected, rtol=tol, atol=tol)
    for name, g, w in zip("qkv", got, want, strict=True):
        torch.testing.assert_close(g, w, rtol=tol, atol=tol, msg=lambda m, name=name: f"grad {name}: {m}")


@pytest.mark.parametrize("seq", [1, 63, 64, 65, 1000])
@pytest.mark.parametrize("causal", [True, False], ids=["causal", "bidirectional"])
@pytest.mark.parametrize("eps", [None, 1e-6], ids=["plain", "normalised"])
def test_every_length_matches_dense_reference(seq: int, causal: bool, eps: float | None) -> None:
    _assert_forward_and_gradients_match(*random_inputs(seq, 16, 24), causal=causal, eps=eps)


@pytest.mark.parametrize(("dim_k", "dim_v"), [(16, 16), (64, 64), (128, 96), (256, 256), (37, 5)])
@pytest.mark.parametrize("causal", [True, False], ids=["causal", "bidirectional"])
def test_head_dims_up_to_256_and_unequal(dim_k: int, dim_v: int, causal: bool) -> None:
    _assert_forward_and_gradients_match(*random_inputs(130, dim_k, dim_v, batch=1), causal=causal, eps=1e-6)


@pytest.mark.parametrize("chunk", [1, 7, 64, 300])
def test_any_chunk_size_gives_the_same_answer(chunk: int) -> None:
    _assert_forward_and_gradients_match(*random_inputs(150, 8, 8), causal=True, eps=1e-6, chunk=chunk)


@pytest.mark.parametrize("seq", [1, 64, 65, 300])
def test_decay_rescales_the_state_between_chunks(seq: int) -> None:
    q, k, v = random_inputs(seq, 16, 8)
    n_chunks = -(-seq // 64)
    decay = 0.1 + 0.9 * torch.rand(2, 2, n_chunks, 8, dtype=torch.float64)
    _assert_forward_and_gradients_match(q, k, v, causal=True, eps=None, decay=decay)


@pytest.mark.parametrize("seq", [1, 65])
@pytest.mark.parametrize("causal", [True, False], ids=["causal", "bidirectional"])
@pytest.mark.parametrize("eps", [None, 1e-6], ids=["plain", "normalised"])
def test_fp32_outputs_and_gradients_against_fp64(seq: int, causal: bool, eps: float | None) -> None:
    """What tests/kernels/test_cuda_ops.py asks of the CUDA op, asked of the CPU op: at S = 1
    the normalised gradients of q and k are zero up to eps and judged at the case's scale."""
    q, k, v = (t.detach().float().requires_grad_() for t in random_inputs(seq, 16, 24))
    exact = [t.detach().double().requires_grad_() for t in (q, k, v)]
    expected = dense_reference(*exact, causal=causal, eps=eps)
    actual = linear_attention(q, k, v, causal=causal, eps=eps, chunk=64)
    grad_out = torch.randn_like(expected)
    want = torch.autograd.grad(expected, exact, grad_out)
    got = torch.autograd.grad(actual, (q, k, v), grad_out.float())
    case_scale = max(t.abs().max().item() for t in (expected, *want))
    for name, a, w in zip(("out", "grad q", "grad k", "grad v"), (actual, *got), (expected, *want), strict=True):
        assert_close_at_case_scale(a, w, 2e-4, case_scale, name)


@pytest.mark.parametrize(
    ("dtype", "tol"),
    [(torch.float32, 2e-5), (torch.bfloat16, 3e-2), (torch.float16, 4e-3)],
    ids=["fp32", "bf16", "fp16"],
)
def test_low_precision_inputs_accumulate_in_fp32(dtype: torch.dtype, tol: float) -> None:
    """Inputs rounded to ``dtype`` against fp64 on those same rounded values: the only error
    left is the output's rounding, which a state kept in the input dtype would far exceed."""
    q, k, v = (t.detach().to(dtype) for t in random_inputs(1000, 64, 64))
    expected = dense_reference(q.double(), k.double(), v.double(), causal=True, eps=1e-6)
    actual = linear_attention(q, k, v, causal=True, eps=1e-6, chunk=64)
    assert actual.dtype == dtype
    torch.testing.assert_close(actual.double(), expected, rtol=tol, atol=tol)


@pytest.mark.parametrize("causal", [True, False], ids=["causal", "bidirectional"])
@pytest.mark.parametrize("normalize", [True, False], ids=["normalised", "plain"])
def test_opcheck(causal: bool, normalize: bool) -> None:
    q, k, v = random_inputs(70, 8, 5)
    torch.library.opcheck(OPS.linear_attention_forward.default, (q, k, v, None, causal, normalize, 1e-6, 64))


def test_opcheck_with_decay() -> None:
    q, k, v = random_inputs(70, 8, 5)
    decay = torch.rand(2, 2, 2, 5, dtype=torch.float64) + 0.5
    torch.library.opcheck(OPS.linear_attention_forward.default, (q, k, v, decay, True, False, 0.0, 64))


def test_gradcheck() -> None:
    q, k, v = random_inputs(40, 4, 3)
    assert torch.autograd.gradcheck(lambda *t: linear_attention(*t, causal=True, eps=1e-6, chunk=16), (q, k, v))


def test_torch_compile_fullgraph_forward_and_backward() -> None:
    q, k, v = random_inputs(70, 8, 5)
    eager = linear_attention(q, k, v, causal=True, eps=1e-6, chunk=16)
    compiled = torch.compile(lambda *t: linear_attention(*t, causal=True, eps=1e-6, chunk=16), fullgraph=True)
    out = compiled(q, k, v)
    torch.testing.assert_close(out, eager)
    grads = torch.autograd.grad(out.sum(), (q, k, v))
    assert all(torch.isfinite(g).all() for g in grads)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda q, k, v, d: (q[..., :5, :], k, v, d), "q and k must have one shape"),
        (lambda q, k, v, d: (q, k, v.float(), d), "share one dtype"),
        (lambda q, k, v, d: (q, k, v, torch.ones(2, 2, 9, 5, dtype=torch.float64)), "decay must have shape"),
    ],
)
def test_bad_arguments_are_refused_with_a_reason(change, message: str) -> None:
    q, k, v = (t.detach() for t in random_inputs(70, 8, 5))
    q, k, v, decay = change(q, k, v, None)
    with pytest.raises(RuntimeError, match=message):
        OPS.linear_attention_forward(q, k, v, decay, True, False, 0.0, 64)


def test_decay_needs_causal_unnormalised() -> None:
    q, k, v = (t.detach() for t in random_inputs(70, 8, 5))
    decay = torch.ones(2, 2, 2, 5, dtype=torch.float64)
    with pytest.raises(RuntimeError, match="decay needs causal=True and normalize=False"):
        OPS.linear_attention_forward(q, k, v, decay, True, True, 1e-6, 64)


def test_forward_holds_nothing_beyond_its_output() -> None:
    """At S = 64k an S x Dk x Dv cumsum would take 32x the output and an S x S matrix 16 GiB:
    the peak resident memory of the call stays within 1.5x the output it returns."""
    q, k, v = (torch.rand(1, 2, 65536, 32) for _ in range(3))
    linear_attention(q[..., :64, :], k[..., :64, :], v[..., :64, :], causal=True, eps=1e-6, chunk=64)  # warm
    with PeakRSS() as peak:
        out = linear_attention(q, k, v, causal=True, eps=1e-6, chunk=64)
    assert peak.peak_bytes <= 1.5 * out.numel() * out.element_size()


FEATURES = {
    "l2": lambda x: torch.nn.functional.normalize(x, dim=-1),
    "elu1": lambda x: torch.nn.functional.elu(x) + 1.0,
}


@pytest.mark.parametrize("feature_map", list(FEATURES))
@pytest.mark.parametrize("causal", [True, False], ids=["causal", "bidirectional"])
@pytest.mark.parametrize("eps", [None, 1e-6], ids=["plain", "normalised"])
def test_fused_feature_maps_equal_the_maps_applied_first(feature_map: str, causal: bool, eps: float | None) -> None:
    """phi applied by the op as it loads q and k: outputs and gradients equal phi applied in PyTorch."""
    q, k, v = (t.detach().sub(0.5).requires_grad_() for t in random_inputs(130, 16, 8))
    phi = FEATURES[feature_map]
    expected = dense_reference(phi(q), phi(k), v, causal=causal, eps=eps)
    actual = linear_attention(q, k, v, causal=causal, eps=eps, chunk=64, feature_map=feature_map)
    grad_out = torch.randn_like(expected)
    want = torch.autograd.grad(expected, (q, k, v), grad_out)
    got = torch.autograd.grad(actual, (q, k, v), grad_out)
    torch.testing.assert_close(actual, expected, rtol=1e-10, atol=1e-10)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, rtol=1e-10, atol=1e-10)


def test_l2_feature_map_of_a_zero_row_is_finite() -> None:
    """F.normalize divides a zero row by eps instead of by 0; so does the fused map, and its gradient."""
    q, k, v = (t.detach().requires_grad_() for t in random_inputs(70, 8, 4))
    with torch.no_grad():
        q[..., 3, :] = 0.0
        k[..., 5, :] = 0.0
    out = linear_attention(q, k, v, causal=True, eps=None, chunk=64, feature_map="l2")
    grads = torch.autograd.grad(out.sum(), (q, k, v))
    assert torch.isfinite(out).all() and all(torch.isfinite(g).all() for g in grads)


def test_unknown_feature_map_is_refused() -> None:
    q, k, v = (t.detach() for t in random_inputs(8, 4, 4))
    with pytest.raises(ValueError, match="unknown feature map 'relu'"):
        linear_attention(q, k, v, causal=True, eps=None, chunk=64, feature_map="relu")
    with pytest.raises(RuntimeError, match="feature_map must be 0"):
        OPS.linear_attention_forward(q, k, v, None, True, False, 0.0, 64, 7)


@pytest.mark.parametrize("causal", [True, False], ids=["causal", "bidirectional"])
def test_v_scale_scales_the_output_and_every_gradient(causal: bool) -> None:
    """v_scale, a plain number the op applies itself: the same as scaling v first (cosine's fused scale)."""
    q, k, v = random_inputs(130, 16, 8)
    actual = linear_attention(q, k, v, causal=causal, eps=None, chunk=64, feature_map="l2", v_scale=0.3)
    expected = dense_reference(*(FEATURES["l2"](t) for t in (q, k)), 0.3 * v, causal=causal, eps=None)
    grad_out = torch.randn_like(expected)
    want = torch.autograd.grad(expected, (q, k, v), grad_out)
    got = torch.autograd.grad(actual, (q, k, v), grad_out)
    torch.testing.assert_close(actual, expected, rtol=1e-10, atol=1e-10)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, rtol=1e-10, atol=1e-10)


def test_v_scale_is_refused_when_normalised() -> None:
    q, k, v = (t.detach() for t in random_inputs(8, 4, 4))
    with pytest.raises(RuntimeError, match="v_scale needs normalize=False"):
        OPS.linear_attention_forward(q, k, v, None, True, True, 1e-6, 64, 0, 2.0)


@pytest.mark.parametrize("causal", [True, False], ids=["causal", "bidirectional"])
def test_the_v1_ops_to_compare_on_a_gpu_are_registered_with_autograd(causal: bool) -> None:
    """linear_attention_forward_v1 (the generic CUDA pass alone, kept for one GPU comparison)
    runs the CPU kernel on the CPU: the same outputs and gradients as the main op, through its
    own autograd formula (linear_attention_backward_v1)."""
    q, k, v = random_inputs(70, 8, 5)
    flags = (None, causal, False, 0.0, 64, 1, 0.5)  # decay, causal, normalize, eps, chunk, L2 map, v scale
    main, _ = OPS.linear_attention_forward(q, k, v, *flags)
    v1, _ = OPS.linear_attention_forward_v1(q, k, v, *flags)
    grad_out = torch.randn_like(main)
    torch.testing.assert_close(v1, main, rtol=0, atol=0)
    grads_v1 = torch.autograd.grad(v1, (q, k, v), grad_out)
    grads_main = torch.autograd.grad(main, (q, k, v), grad_out)
    for a, b in zip(grads_v1, grads_main, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    torch.library.opcheck(OPS.linear_attention_forward_v1.default, (q, k, v, *flags))
