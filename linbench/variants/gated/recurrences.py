"""The inputs of the two shapes of recurrence the gated forms share (impls.py): decaying and
the delta rule. Apart from the forms, so that code that only builds them (a library impl's
input preparation: mamba2/inputs.py) does not import every form's module with them, which
would tie it to every form's code (linbench/impl_code.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class DecayInputs:
    """S_t = diag(e^{g_t}) S_{t−1} + k_t v_tᵀ, o_t = S_tᵀ q_t; q already scaled."""

    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    g: torch.Tensor  # (B, H, S, 1): one gate per head; (B, H, S, Dk): one per key channel


@dataclass(frozen=True)
class DeltaInputs:
    """S_t = (I − β_t k_t k_tᵀ) diag(e^{g_t}) S_{t−1} + β_t k_t v_tᵀ; q, k normalised, q scaled."""

    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    beta: torch.Tensor  # (B, H, S)
    # (B, H, S): one gate per head (gated-deltanet); (B, H, S, Dk): one per key channel (kda);
    # None: no decay (deltanet).
    g: torch.Tensor | None
