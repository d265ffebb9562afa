"""deltanet: linear attention with the delta rule (Schlag, Irie and Schmidhuber 2021,
arXiv:2102.11174), parallelised over the sequence by Yang et al. 2024 (arXiv:2406.06484).

S_t = (I − β_t k_t k_tᵀ) S_{t−1} + β_t k_t v_tᵀ, o_t = S_tᵀ (q_t · Dk^-1/2), with q and k
L2-normalised (so that I − β k kᵀ never expands the state) and β_t ∈ [0, 1].
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from linbench.variants.gated.family import GatedFamily, register_family
from linbench.variants.gated.flops import delta_flops
from linbench.variants.gated.gates import BETA
from linbench.variants.gated.impls import DeltaInputs
from linbench.variants.gated.numerics import resolve_scale, upcast


def prepare(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, beta: torch.Tensor, scale: Any) -> DeltaInputs:
    """q and k L2-normalised (q then scaled) and β, in the compute dtype."""
    q, k, v = upcast(q, k, v)
    q = F.normalize(q, dim=-1) * resolve_scale(scale, q.shape[-1])
    return DeltaInputs(q, F.normalize(k, dim=-1), v, beta.to(q.dtype), None)


VARIANT = register_family(
    GatedFamily(
        name="deltanet",
        summary="S_t = (I − β_t k_t k_tᵀ) S_{t−1} + β_t k_t v_tᵀ, o_t = S_tᵀ q_t; q, k L2-normalised",
        prepare=prepare,
        forms={
            "recurrent": ("the delta rule token by token (the reference, in fp64)", "O(d²)"),
            "quadratic": ("the UT transform over the whole sequence: one S×S triangular solve", "O(s²)"),
            "chunked": ("the WY/UT form in chunks (one C×C triangular solve each), a Dk×Dv state", "O(sd)"),
        },
        flops=delta_flops,
        source="DeltaNet (Schlag et al., 2021), arXiv:2102.11174; chunked by Yang et al. (2024), arXiv:2406.06484",
        decoder_summary="chunked prefill into a Dk×Dv state, then one delta-rule step per token",
        extra_inputs=(BETA,),
        working_copies={"quadratic": 4},  # 4.3 tensors of B·H·S² measured at 512 and 1k (fp32, fwd)
    )
)
