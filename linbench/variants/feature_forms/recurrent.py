"""The recurrent form (Cottention §5): H_t = H_{t-1} + k_t v_t^T, O_t = q_t H_t.

Token by token with a Dk x Dv state, so memory is constant in S (forward, without
autograd). The state can be carried from one call to the next, which is how a model
decodes, and how the tests check that two halves equal the whole.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from linbench.variants.heads import per_kv_head


@dataclass
class LinearState:
    """What a linear attention remembers of the tokens it has seen."""

    kv: torch.Tensor  # (B, H_kv, Dk, Dv): sum of fk_j fv_j^T, one per key/value head
    key_sum: torch.Tensor | None  # (B, H_kv, Dk): sum of fk_j, when normalised
    position: int  # tokens consumed so far (the offset of the next token)

    @classmethod
    def empty(cls, fk: torch.Tensor, fv: torch.Tensor, normalised: bool) -> LinearState:
        """Nothing absorbed: a state for keys ``fk`` (..., S, Dk) and values ``fv`` (..., S, Dv)."""
        lead, dim_k = fk.shape[:-2], fk.shape[-1]
        kv = fk.new_zeros(*lead, dim_k, fv.shape[-1])
        key_sum = fk.new_zeros(*lead, dim_k) if normalised else None
        return cls(kv=kv, key_sum=key_sum, position=0)


def _read(q_t: torch.Tensor, state: LinearState, eps: float | None) -> torch.Tensor:
    """O_t = q_t H (divided by q_t . z + eps when normalised) for one token, (B, H, Dv)."""
    num = (q_t.unsqueeze(-2) @ state.kv).squeeze(-2)
    if state.key_sum is None or eps is None:
        return num
    den = (q_t * state.key_sum).sum(-1, keepdim=True)
    return num / (den + eps)


def _absorb(state: LinearState, k_t: torch.Tensor, v_t: torch.Tensor) -> LinearState:
    # Out of place, so autograd can differentiate through every step.
    kv = state.kv + k_t.unsqueeze(-1) * v_t.unsqueeze(-2)
    key_sum = state.key_sum + k_t if state.key_sum is not None else None
    return LinearState(kv=kv, key_sum=key_sum, position=state.position + 1)


@per_kv_head
def recurrent_scan(
    fq: torch.Tensor, fk: torch.Tensor, fv: torch.Tensor, *, eps: float | None, state: LinearState | None = None
) -> tuple[torch.Tensor, LinearState]:
    """Causal outputs for the given tokens, continuing from ``state``, and the new state."""
    if state is None:
        state = LinearState.empty(fk, fv, normalised=eps is not None)
    if fq.shape[-2] == 0:
        return fq.new_empty(*fq.shape[:-1], fv.shape[-1]), state
    # Tokens by unbind and outputs joined by stack, never indexed or written in place: under
    # autograd each index or slice write costs a full-size gradient, which made the backward
    # quadratic in S (1.3 s at 1k tokens, 4.5 s at 2k).
    outs = []
    for q_t, k_t, v_t in zip(fq.unbind(-2), fk.unbind(-2), fv.unbind(-2), strict=True):
        state = _absorb(state, k_t, v_t)
        outs.append(_read(q_t, state, eps))
    return torch.stack(outs, dim=-2), state


@per_kv_head
def recurrent_bidirectional(fq: torch.Tensor, fk: torch.Tensor, fv: torch.Tensor, *, eps: float | None) -> torch.Tensor:
    """Absorb the whole sequence into the state first, then read it out for every query."""
    state = LinearState.empty(fk, fv, normalised=eps is not None)
    if fq.shape[-2] == 0:
        return fq.new_empty(*fq.shape[:-1], fv.shape[-1])
    for k_t, v_t in zip(fk.unbind(-2), fv.unbind(-2), strict=True):
        state = _absorb(state, k_t, v_t)
    return torch.stack([_read(q_t, state, eps) for q_t in fq.unbind(-2)], dim=-2)
