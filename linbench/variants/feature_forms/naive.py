"""The cumsum-of-outer-products form (Cottention, eq. 7 and Appendix A).

It materialises the running state for every position, B·H·S·Dk·Dv values, which is why
the papers call it naive: O(s·d²) memory, slower than softmax at practical lengths.
"""

from __future__ import annotations

import torch

from linbench.variants.heads import per_kv_head


def _prefix(x: torch.Tensor, causal: bool) -> torch.Tensor:
    """Sum over positions j <= i (causal) or over all j, along dim -3."""
    return x.cumsum(-3) if causal else x.sum(-3, keepdim=True).expand_as(x)


def _suffix(x: torch.Tensor, causal: bool) -> torch.Tensor:
    """Sum over positions j >= i (causal) or over all j, along dim -3."""
    return x.flip(-3).cumsum(-3).flip(-3) if causal else x.sum(-3, keepdim=True).expand_as(x)


class CumsumOuterProduct(torch.autograd.Function):
    """The paper's AttnMul: ((V ⊗ K).cumsum(S) * Q).sum(-1), with its hand-written backward.

    Gradients (Appendix A): dQ reads the same prefix states with dO; dK and dV read the
    suffix sums of dO ⊗ Q, accumulated backwards in time.
    """

    @staticmethod
    def forward(ctx, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
        ctx.save_for_backward(q, k, v)
        ctx.causal = causal
        states = _prefix(v.unsqueeze(-1) * k.unsqueeze(-2), causal)  # (B, H, S, Dv, Dk)
        return (states * q.unsqueeze(-2)).sum(-1)

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, None]:
        q, k, v = ctx.saved_tensors
        causal = ctx.causal
        states = _prefix(v.unsqueeze(-1) * k.unsqueeze(-2), causal)
        grad_q = (states * grad_out.unsqueeze(-1)).sum(-2)
        reverse = _suffix(grad_out.unsqueeze(-1) * q.unsqueeze(-2), causal)  # (B, H, S, Dv, Dk)
        # Keys and values shared by a group of query heads (per_kv_head) sum their gradients over it.
        grad_k = (reverse * v.unsqueeze(-1)).sum(-2).sum_to_size(k.shape)
        grad_v = (reverse * k.unsqueeze(-2)).sum(-1).sum_to_size(v.shape)
        return grad_q, grad_k, grad_v, None


@per_kv_head
def naive_linear_attention(
    fq: torch.Tensor, fk: torch.Tensor, fv: torch.Tensor, *, causal: bool, eps: float | None
) -> torch.Tensor:
    """sum_j (fq_i . fk_j) fv_j by cumsum of outer products; normalised when eps is given."""
    num = CumsumOuterProduct.apply(fq, fk, fv, causal)
    if eps is None:
        return num
    k_sums = fk.cumsum(-2) if causal else fk.sum(-2, keepdim=True)
    den = (fq * k_sums).sum(-1, keepdim=True)
    return num / (den + eps)
