"""lightning: MiniMax's lightning attention (MiniMax-01, arXiv:2501.08313), linear attention
with a fixed per-head decay that depends on the layer's depth.

S_t = e^{λ_h} S_{t−1} + k_t v_tᵀ, o_t = S_tᵀ (q_t · Dk^-1/2), λ_h = −(8/H)(1 − layer/layers)·h:
retention with fla-core's lightning schedule (``chunk_lightning_attn``) in place of RetNet's γ.
"""

from __future__ import annotations

from typing import Any

import torch

from linbench.variants.declarations import Param
from linbench.variants.gated.family import GatedFamily, register_family
from linbench.variants.gated.flops import decay_flops
from linbench.variants.gated.gates import layer_problem, layers_problem, lightning_log_decay
from linbench.variants.gated.impls import SCALE, DecayInputs
from linbench.variants.gated.numerics import resolve_scale, upcast

# MiniMax-M1 has 80 layers; layer 0, the default, decays fastest.
LAYER = Param("layer", 0, "the layer's index, counted from 0 (0 ≤ layer < layers)", check=layer_problem)
LAYERS = Param("layers", 80, "the model's number of layers (MiniMax-M1: 80)", check=layers_problem)


def prepare(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, layer: Any, layers: Any, scale: Any) -> DecayInputs:
    """Scaled q and the layer's log-decay per head, as a gate repeated over the tokens."""
    q, k, v = upcast(q, k, v)
    batch, heads, seq, dim_k = q.shape
    log_decay = lightning_log_decay(layer, layers, heads, q)
    gate = log_decay.view(1, heads, 1, 1).expand(batch, heads, seq, 1)
    return DecayInputs(q * resolve_scale(scale, dim_k), k, v, gate)


VARIANT = register_family(
    GatedFamily(
        name="lightning",
        summary="S_t = e^{λ_h} S_{t−1} + k_t v_tᵀ, o_t = S_tᵀ q_t: a fixed decay per head set by the layer's depth",
        prepare=prepare,
        forms={
            "recurrent": ("the recurrence token by token (the reference, in fp64)", "O(d²)"),
            "quadratic": ("(Q Kᵀ ⊙ D) V with D_ts = e^{λ_h (t−s)}", "O(s²)"),
            "chunked": ("the chunkwise form: decayed C×C blocks, a Dk×Dv state between chunks", "O(sd)"),
        },
        flops=decay_flops,
        source="MiniMax-01: Scaling Foundation Models with Lightning Attention (2025), arXiv:2501.08313",
        decoder_summary="chunked prefill into a Dk×Dv state, then S_t = e^{λ_h} S_{t−1} + k_t v_tᵀ",
        params=(LAYER, LAYERS, SCALE),
        # the weak end: the model's last layer, whose decays are 1/layers of layer 0's
        check_params=({"layer": 79},),
    )
)
