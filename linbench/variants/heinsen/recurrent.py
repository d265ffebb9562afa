"""Heinsen's sequential form: constant time and memory per token (Heinsen, 2024, §1.4)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from linbench.variants.heads import per_kv_head
from linbench.variants.impl_helpers import upcast


@dataclass
class LogState:
    """log Σ_j exp(k_jd + log v_je) and log Σ_j exp(k_jd) over the tokens seen so far."""

    log_kv: torch.Tensor  # (B, H_kv, Dk, Dv): one per key/value head
    log_z: torch.Tensor  # (B, H_kv, Dk)
    position: int

    @classmethod
    def empty(cls, k: torch.Tensor, log_v: torch.Tensor) -> LogState:
        """Nothing absorbed: a state for keys ``k`` (..., S, Dk) and values ``log_v`` (..., S, Dv)."""
        lead, dim_k = k.shape[:-2], k.shape[-1]
        log_kv = k.new_full((*lead, dim_k, log_v.shape[-1]), float("-inf"))
        return cls(log_kv=log_kv, log_z=k.new_full((*lead, dim_k), float("-inf")), position=0)


def _absorb(state: LogState, k_t: torch.Tensor, log_v_t: torch.Tensor) -> LogState:
    log_kv = torch.logaddexp(state.log_kv, k_t.unsqueeze(-1) + log_v_t.unsqueeze(-2))
    return LogState(log_kv, torch.logaddexp(state.log_z, k_t), state.position + 1)


def _read(q_t: torch.Tensor, state: LogState) -> torch.Tensor:
    log_s = torch.logsumexp(q_t.unsqueeze(-1) + state.log_kv, dim=-2)  # (B, H, Dv)
    log_z = torch.logsumexp(q_t + state.log_z, dim=-1, keepdim=True)  # (B, H, 1)
    return log_s - log_z


@per_kv_head
def stream(
    q: torch.Tensor, k: torch.Tensor, log_v: torch.Tensor, *, state: LogState | None = None
) -> tuple[torch.Tensor, LogState]:
    """Causal log Y for the given tokens, continuing from ``state``, and the new state."""
    q, k, log_v = upcast(q, k, log_v)
    state = LogState.empty(k, log_v) if state is None else state
    if q.shape[-2] == 0:
        return q.new_empty(*q.shape[:-1], log_v.shape[-1]), state
    # Tokens by unbind and outputs joined by stack, never indexed or written in place: under
    # autograd each index or slice write costs a full-size gradient (a backward quadratic in S).
    outs = []
    for q_t, k_t, v_t in zip(q.unbind(-2), k.unbind(-2), log_v.unbind(-2), strict=True):
        state = _absorb(state, k_t, v_t)
        outs.append(_read(q_t, state))
    return torch.stack(outs, dim=-2), state


@per_kv_head
def recurrent(q: torch.Tensor, k: torch.Tensor, log_v: torch.Tensor, *, causal: bool) -> torch.Tensor:
    """Token by token; bidirectional absorbs every token first, then reads out (§1.4)."""
    if causal:
        return stream(q, k, log_v)[0]
    q, k, log_v = upcast(q, k, log_v)
    state = LogState.empty(k, log_v)
    if q.shape[-2] == 0:
        return q.new_empty(*q.shape[:-1], log_v.shape[-1])
    for k_t, v_t in zip(k.unbind(-2), log_v.unbind(-2), strict=True):
        state = _absorb(state, k_t, v_t)
    return torch.stack([_read(q_t, state) for q_t in q.unbind(-2)], dim=-2)
