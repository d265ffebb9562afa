"""The CUDA kernel against the CPU kernel and the dense reference (run where a GPU is)."""

from __future__ import annotations

import pytest
import torch
from kernel_cases import assert_close_at_case_scale, dense_reference, random_inputs

from linbench.kernels import build
from linbench.kernels.ops import FEATURE_MAPS, kernel_ops, linear_attention

pytestmark = pytest.mark.cuda


@pytest.fixture(autouse=True)
def _cuda_half_built() -> None:
    """A GPU without the CUDA toolchain (a CPU torch, or no nvcc) has no CUDA half to test:
    skipped, saying why. Where the toolchain is, a build that fails fails these tests."""
    if (missing := build.cuda_toolchain_missing()) is not None:
        pytest.skip(f"the CUDA kernels are not built here: {missing}")


TOLERANCE = {torch.float32: 2e-4, torch.bfloat16: 3e-2, torch.float16: 4e-3}


FEATURES = {
    "none": lambda x: x,
    "l2": lambda x: torch.nn.functional.normalize(x, dim=-1),
    "elu1": lambda x: torch.nn.functional.elu(x) + 1.0,
}


def _cuda_against_fp64(
    seq: int,
    dim_k: int,
    dim_v: int,
    dtype: torch.dtype,
    causal: bool,
    eps: float | None,
    feature_map: str = "none",
    v_scale: float = 1.0,
) -> None:
    """The CUDA op (q, k mapped by the kernels, the output scaled by v_scale) against the map and
    scale applied in fp64 before a dense reference."""
    shift = 0.0 if feature_map == "none" else 0.5  # mapped inputs take both signs
    q, k, v = (t.detach().sub(shift).to(dtype) for t in random_inputs(seq, dim_k, dim_v))
    q, k, v = (t.cuda().requires_grad_() for t in (q, k, v))
    exact = [t.detach().double().requires_grad_() for t in (q, k, v)]
    phi = FEATURES[feature_map]
    expected = dense_reference(phi(exact[0]), phi(exact[1]), v_scale * exact[2], causal=causal, eps=eps)
    actual = linear_attention(q, k, v, causal=causal, eps=eps, chunk=64, feature_map=feature_map, v_scale=v_scale)
    grad_out = torch.randn_like(expected)
    want = torch.autograd.grad(expected, exact, grad_out)
    got = torch.autograd.grad(actual, (q, k, v), grad_out.to(dtype))
    case_scale = max(t.abs().max().item() for t in (expected, *want))
    for name, a, w in zip(("out", "grad q", "grad k", "grad v"), (actual, *got), (expected, *want), strict=True):
        assert_close_at_case_scale(a, w, TOLERANCE[dtype], case_scale, name)


@pytest.mark.parametrize("seq", [1, 63, 64, 65, 1000])
@pytest.mark.parametrize("causal", [True, False], ids=["causal", "bidirectional"])
@pytest.mark.parametrize("eps", [None, 1e-6], ids=["plain", "normalised"])
def test_every_length_on_cuda(seq: int, causal: bool, eps: float | None) -> None:
    _cuda_against_fp64(seq, 16, 24, torch.float32, causal, eps)


@pytest.mark.parametrize(("dim_k", "dim_v"), [(16, 16), (64, 64), (128, 128), (256, 256), (512, 64), (37, 5)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=["fp32", "bf16", "fp16"])
def test_head_dims_and_dtypes_on_cuda(dim_k: int, dim_v: int, dtype: torch.dtype) -> None:
    _cuda_against_fp64(300, dim_k, dim_v, dtype, True, 1e-6)


@pytest.mark.parametrize(
    ("feature_map", "eps", "v_scale"), [("l2", None, 0.3), ("elu1", None, 1.7), ("elu1", 1e-6, 1.0)]
)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=["fp32", "bf16", "fp16"])
@pytest.mark.parametrize("causal", [True, False], ids=["causal", "bidirectional"])
def test_fused_feature_maps_and_v_scale_on_cuda(
    feature_map: str, eps: float | None, v_scale: float, dtype: torch.dtype, causal: bool
) -> None:
    """The maps applied as the kernels load q and k (dk = 130: the L2 norm spans two slabs), and
    their backward in the last launch."""
    _cuda_against_fp64(300, 130, 24, dtype, causal, eps, feature_map, v_scale)


def test_decay_on_cuda_matches_cpu() -> None:
    q, k, v = (t.detach().float() for t in random_inputs(300, 32, 16))
    decay = 0.1 + 0.9 * torch.rand(2, 2, 5, 16)
    grad_out = torch.randn(2, 2, 300, 16)
    results = []
    for device in ("cpu", "cuda"):
        inputs = [t.to(device).requires_grad_() for t in (q, k, v)]
        out = linear_attention(*inputs, causal=True, eps=None, chunk=64, decay=decay.to(device))
        results.append([out, *torch.autograd.grad(out, inputs, grad_out.to(device))])
    for cpu, cuda in zip(*results, strict=True):
        torch.testing.assert_close(cuda.cpu(), cpu, rtol=1e-4, atol=1e-4)


def test_opcheck_on_cuda() -> None:
    q, k, v = (t.detach().float().cuda().requires_grad_() for t in random_inputs(70, 8, 5))
    torch.library.opcheck(kernel_ops().linear_attention_forward.default, (q, k, v, None, True, True, 1e-6, 64))


def test_other_chunk_sizes_are_refused_on_cuda() -> None:
    q, k, v = (t.detach().float().cuda() for t in random_inputs(70, 8, 5))
    with pytest.raises(RuntimeError, match="chunks of 64"):
        linear_attention(q, k, v, causal=True, eps=None, chunk=32)


@pytest.mark.parametrize(("dim_k", "dim_v"), [(64, 64), (128, 64), (32, 48)])
@pytest.mark.parametrize("causal", [True, False], ids=["causal", "bidirectional"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize(
    ("feature_map", "eps", "v_scale"), [("l2", None, 0.3), ("elu1", 1e-6, 1.0)], ids=["cosine", "linear"]
)
def test_fast_pass_and_generic_v1_agree_with_fp64_on_cuda(
    dim_k: int, dim_v: int, causal: bool, dtype: torch.dtype, feature_map: str, eps: float | None, v_scale: float
) -> None:
    """bf16 and fp16, normalised or not, with Dk, Dv multiples of 8 up to 128 run the fast pass;
    the _v1 op runs the generic one on the same call: both against fp64 (cosine's L2 map and v
    scale, or linear's elu + 1, normalised), at a ragged S."""
    q, k, v = (t.detach().sub(0.5).to(dtype).cuda() for t in random_inputs(1000, dim_k, dim_v))
    exact = [t.double().requires_grad_() for t in (q, k, v)]
    phi = FEATURES[feature_map]
    expected = dense_reference(phi(exact[0]), phi(exact[1]), v_scale * exact[2], causal=causal, eps=eps)
    grad_out = torch.randn_like(expected)
    want = torch.autograd.grad(expected, exact, grad_out)
    case_scale = max(t.abs().max().item() for t in (expected, *want))
    ops = kernel_ops()
    for forward in (ops.linear_attention_forward, ops.linear_attention_forward_v1):
        inputs = [t.clone().requires_grad_() for t in (q, k, v)]
        out, _ = forward(*inputs, None, causal, eps is not None, eps or 0.0, 64, FEATURE_MAPS[feature_map], v_scale)
        got = torch.autograd.grad(out, inputs, grad_out.to(dtype))
        for name, a, w in zip(("out", "grad q", "grad k", "grad v"), (out, *got), (expected, *want), strict=True):
            assert_close_at_case_scale(a, w, TOLERANCE[dtype], case_scale, name)
