"""RWKV-7's time-mixing core (Peng et al. 2025, "RWKV-7 'Goose' with Expressive Dynamic State
Evolution", arXiv:2503.14456) with its own inputs, and their reduction to the DPLR recurrence.

    S_t = (diag(e^{w_t}) − κ̂_t (a_t ⊙ κ̂_t)ᵀ) S_{t−1} + k_t v_tᵀ,      o_t = S_tᵀ (r_t · scale)

in linbench's Dk×Dv layout (RWKV writes the transpose): r (receptance) is q, w_t ≤ 0 the
log-decay per key channel (RWKV-7 bounds it: w = −e^{−0.5}·σ(·), so e^{w} ∈ (0.545, 1)), κ̂_t the
L2-normalised "removal key" (fla's ``kk``), a_t ∈ [0, 1] the in-context learning rate per
channel, and k_t the key already updated by the layer (k·(1 + (a − 1)·k_a), outside the core,
as the token shift, the LoRAs, the value residual and the output gate are). No scale on r by
default (1.0, fla's ``chunk_rwkv7`` default). Reduced as fla's ``chunk_rwkv7`` hands it to
``chunk_dplr_delta_rule``: a^{DPLR} = −κ̂, b^{DPLR} = κ̂ ⊙ a, g = w.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F

from linbench.variants.declarations import Param
from linbench.variants.extra_inputs import ExtraInput
from linbench.variants.gated.dplr_recurrent import DplrInputs
from linbench.variants.gated.numerics import scale_problem, upcast
from linbench.variants.heads import repeat_qk

DECAY_BOUND = math.exp(-0.5)  # RWKV-7's w = −e^{−0.5}·σ(·) (fla's RWKV7Attention)


def _draw_decay(sizes: tuple[int, ...], generator: torch.Generator, regime: str) -> torch.Tensor:
    del regime  # RWKV-7 bounds its own decay: one profile
    return -DECAY_BOUND * torch.randn(*sizes, generator=generator, dtype=torch.float64).sigmoid()


def _draw_removal_key(sizes: tuple[int, ...], generator: torch.Generator, regime: str) -> torch.Tensor:
    del regime
    return F.normalize(torch.randn(*sizes, generator=generator, dtype=torch.float64), dim=-1)


def _draw_rate(sizes: tuple[int, ...], generator: torch.Generator, regime: str) -> torch.Tensor:
    del regime
    return torch.randn(*sizes, generator=generator, dtype=torch.float64).sigmoid()


def _decay_problem(w: torch.Tensor) -> str | None:
    if not bool(torch.isfinite(w).all()):
        return "must be finite (a log-decay); it has inf or nan values"
    top = float(w.max()) if w.numel() else 0.0
    return None if top <= 0 else f"must be ≤ 0 (a log-decay); its largest value is {top:g}"


def _finite_problem(x: torch.Tensor) -> str | None:
    return None if bool(torch.isfinite(x).all()) else "must be finite; it has inf or nan values"


def _rate_problem(a: torch.Tensor) -> str | None:
    if not bool(torch.isfinite(a).all()):
        return "must lie in [0, 1]; it has inf or nan values"
    low, high = (float(a.min()), float(a.max())) if a.numel() else (0.0, 1.0)
    return None if low >= 0 and high <= 1 else f"must lie in [0, 1]; its values run from {low:g} to {high:g}"


DECAY = ExtraInput(
    "w",
    "per_token_channel",
    "log-decay ≤ 0 per head, token and key channel (fla's w; RWKV-7's lies in (−e^−0.5, 0))",
    _draw_decay,
    _decay_problem,
    dtype_rule="fp32_or_wider",
    distribution="−e^{−0.5}·σ(x), x ~ N(0, 1): RWKV-7's bounded decay",
    follows_regime=False,
)
REMOVAL_KEY = ExtraInput(
    "kk",
    "per_token_channel",
    "the removal key κ̂ per head, token and key channel, L2-normalised by the layer (fla's kk)",
    _draw_removal_key,
    _finite_problem,
    distribution="x/|x|, x ~ N(0, I)",
    follows_regime=False,
)
RATE = ExtraInput(
    "a",
    "per_token_channel",
    "in-context learning rate in [0, 1] per head, token and key channel (fla's a)",
    _draw_rate,
    _rate_problem,
    distribution="σ(x), x ~ N(0, 1)",
    follows_regime=False,
)
SCALE = Param("scale", 1.0, "the factor on r (RWKV-7 reads unscaled: 1.0)", check=scale_problem)


def prepare(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, w: torch.Tensor, kk: torch.Tensor, a: torch.Tensor, scale: Any
) -> DplrInputs:
    """r scaled and the DPLR inputs (a = −κ̂, b = κ̂ ⊙ a, g = w) in the compute dtype; r and k
    repeated to v's heads when v has more (RWKV-7 has as many; linbench's forms take more, as
    every gated family does, with w, κ̂ and a per value head)."""
    q, k = repeat_qk(q, k, v)
    q, k, v = upcast(q, k, v)
    problem = scale_problem(scale)
    if problem or scale is None:
        raise ValueError(f"parameter scale {problem or 'must be a positive number; got None'}")
    w, kk, a = (t.to(q.dtype) for t in (w, kk, a))
    return DplrInputs(q * float(scale), k, v, -kk, kk * a, w)
