"""Gated DeltaNet-2's inputs (Hatamizadeh, Choi and Kautz 2026, arXiv:2605.22791) and their
reduction to the DPLR recurrence (dplr_recurrent.py).

    S_t = (I − k_t (b_t ⊙ k_t)ᵀ) diag(e^{g_t}) S_{t−1} + k_t (w_t ⊙ v_t)ᵀ,   o_t = S_tᵀ (q_t · Dk^-1/2)

with q and k L2-normalised, g_t ≤ 0 a log-decay per key channel (KDA's gate), b_t ∈ [0, 1]^{Dk}
the erase gate on the key axis and w_t ∈ [0, 1]^{Dv} the write gate on the value axis (both
sigmoids of projections in fla's GDN-2 layer; b up to 2 with ``allow_neg_eigval``, so [0, 2] is
accepted). b = w = β (one scalar) is KDA. Reduced: a_t = −e^{g_t} ⊙ b_t ⊙ k_t (the erase read
after the decay, moved before it), b_t^{DPLR} = k_t, v ← w_t ⊙ v_t.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch
import torch.nn.functional as F

from linbench.variants.extra_inputs import ExtraInput
from linbench.variants.gated.dplr_recurrent import DplrInputs
from linbench.variants.gated.gates import KDA_GATE
from linbench.variants.gated.numerics import resolve_scale, upcast
from linbench.variants.heads import repeat_qk


def _draw_sigmoid(sizes: tuple[int, ...], generator: torch.Generator, regime: str) -> torch.Tensor:
    del regime  # how much a token erases or writes does not depend on how fast the state forgets
    return torch.randn(*sizes, generator=generator, dtype=torch.float64).sigmoid()


def _range_problem(low: float, high: float) -> Any:
    def problem(value: torch.Tensor) -> str | None:
        if not bool(torch.isfinite(value).all()):
            return f"must lie in [{low:g}, {high:g}]; it has inf or nan values"
        small, large = (float(value.min()), float(value.max())) if value.numel() else (low, high)
        return (
            None
            if small >= low and large <= high
            else f"must lie in [{low:g}, {high:g}]; its values run from {small:g} to {large:g}"
        )

    return problem


GATE = replace(KDA_GATE, summary="log-decay ≤ 0 per head, token and key channel (row c of the state decays by e^g_c)")
ERASE = ExtraInput(
    "b",
    "per_token_channel",
    "erase gate in [0, 2] per head, token and key channel (fla's b; 2 with allow_neg_eigval)",
    _draw_sigmoid,
    _range_problem(0.0, 2.0),
    distribution="σ(x), x ~ N(0, 1), in every regime",
    follows_regime=False,
)
WRITE = ExtraInput(
    "w",
    "per_token_value",
    "write gate in [0, 1] per head, token and value channel (fla's w)",
    _draw_sigmoid,
    _range_problem(0.0, 1.0),
    distribution="σ(x), x ~ N(0, 1), in every regime",
    follows_regime=False,
)


def prepare(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, g: torch.Tensor, b: torch.Tensor, w: torch.Tensor, scale: Any
) -> DplrInputs:
    """q and k repeated to v's heads and L2-normalised (q then scaled); the DPLR inputs in the
    compute dtype."""
    q, k = repeat_qk(q, k, v)
    q, k, v = upcast(q, k, v)
    q = F.normalize(q, dim=-1) * resolve_scale(scale, q.shape[-1])
    k = F.normalize(k, dim=-1)
    g, b, w = (t.to(q.dtype) for t in (g, b, w))
    return DplrInputs(q, k, w * v, -(g.exp() * b * k), k, g)
