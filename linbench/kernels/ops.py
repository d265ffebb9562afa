"""The csrc ops seen from Python: autograd and fake (meta) registrations, and one call.

The schemas and the CPU/CUDA kernels are registered by the compiled library itself
(csrc/bindings.cpp); this module adds what torch.library needs for autograd and for
torch.compile's tracing, once the library is loaded.
"""

from __future__ import annotations

import functools
from typing import Any

import torch

from linbench.errors import ImplUnavailableError
from linbench.kernels.build import load_kernels

FORWARD = "linbench::linear_attention_forward"
BACKWARD = "linbench::linear_attention_backward"
# TO BE REMOVED after one GPU measurement of the fast CUDA pass against them: the same ops on the
# generic CUDA pass alone (csrc/bindings.cpp), for scripts/gpu/kernel_v1_v2.py.
FORWARD_V1 = "linbench::linear_attention_forward_v1"
BACKWARD_V1 = "linbench::linear_attention_backward_v1"
# What the op applies to q and k itself (csrc/bindings.cpp): the CPU kernel as it loads a chunk.
FEATURE_MAPS = {"none": 0, "l2": 1, "elu1": 2}


def _accumulate_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype == torch.float64 else torch.float32


def _den_shape(q: torch.Tensor, normalize: bool) -> tuple[int, ...]:
    return (q.shape[0], q.shape[1], q.shape[2]) if normalize else (0,)


def _fake_forward(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    decay: torch.Tensor | None,
    causal: bool,
    normalize: bool,
    eps: float,
    chunk: int,
    feature_map: int = 0,
    v_scale: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    out = v.new_empty(v.shape)
    den = q.new_empty(_den_shape(q, normalize), dtype=_accumulate_dtype(q.dtype))
    return out, den


def _fake_backward(
    grad_out: torch.Tensor,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    decay: torch.Tensor | None,
    out: torch.Tensor,
    den: torch.Tensor,
    causal: bool,
    normalize: bool,
    eps: float,
    chunk: int,
    feature_map: int = 0,
    v_scale: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)


def _setup_context(ctx: Any, inputs: tuple[Any, ...], output: tuple[torch.Tensor, torch.Tensor]) -> None:
    q, k, v, decay, causal, normalize, eps, chunk, feature_map, v_scale = inputs
    out, den = output
    ctx.save_for_backward(q, k, v, decay, out, den)
    ctx.flags = (causal, normalize, eps, chunk, feature_map, v_scale)


def _backward_with(backward_op: Any) -> Any:
    """The autograd formula of a forward op whose gradients ``backward_op`` computes."""

    def backward(ctx: Any, grad_out: torch.Tensor, grad_den: torch.Tensor | None) -> tuple[Any, ...]:
        # den is a by-product handed to the backward, not a differentiable result: its gradient is dropped.
        del grad_den
        q, k, v, decay, out, den = ctx.saved_tensors
        causal, normalize, eps, chunk, feature_map, v_scale = ctx.flags
        grads = backward_op(grad_out, q, k, v, decay, out, den, causal, normalize, eps, chunk, feature_map, v_scale)
        return (*grads, None, None, None, None, None, None, None)

    return backward


@functools.cache
def kernel_ops() -> Any:
    """torch.ops.linbench with autograd and fake kernels registered; builds csrc/ on first use."""
    status = load_kernels()
    if status.cpu_error is not None:
        raise ImplUnavailableError(status.cpu_error)
    ops = torch.ops.linbench
    for forward, backward, backward_op in (
        (FORWARD, BACKWARD, ops.linear_attention_backward),
        (FORWARD_V1, BACKWARD_V1, ops.linear_attention_backward_v1),
    ):
        torch.library.register_fake(forward)(_fake_forward)
        torch.library.register_fake(backward)(_fake_backward)
        torch.library.register_autograd(forward, _backward_with(backward_op), setup_context=_setup_context)
    return ops


def unavailable_reason(device: torch.device) -> str | None:
    """Why the kernel impls cannot run on ``device`` (builds csrc/ on first use), or None."""
    return load_kernels().reason(device.type)


def linear_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    causal: bool,
    eps: float | None,
    chunk: int,
    decay: torch.Tensor | None = None,
    feature_map: str = "none",
    v_scale: float = 1.0,
) -> torch.Tensor:
    """sum_{j in M(i)} (phi(q_i) . phi(k_j)) v_j, divided by sum_{j in M(i)} phi(q_i) . phi(k_j) + eps when
    eps is given; phi is ``feature_map`` ("none", "l2": rows divided by their L2 norm, "elu1": elu + 1).
    Unnormalised, the result is multiplied by ``v_scale`` (a plain number, applied by the kernel)."""
    if feature_map not in FEATURE_MAPS:
        raise ValueError(f"unknown feature map {feature_map!r}; maps: {', '.join(FEATURE_MAPS)}")
    normalize = eps is not None
    # Under torch.compile the library is already loaded (an eager call or the impl's
    # availability check did it) and the build step is no graph material.
    if not torch.compiler.is_compiling():
        kernel_ops()
    out, _ = torch.ops.linbench.linear_attention_forward(
        q, k, v, decay, causal, normalize, float(eps or 0.0), chunk, FEATURE_MAPS[feature_map], float(v_scale)
    )
    return out
