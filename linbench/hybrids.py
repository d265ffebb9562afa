"""Hybrid model presets (a room of data alone, below the sweep and the reports that read them):
the two kinds of attention layer of a linear-attention hybrid, by name.

``--preset NAME`` with a hybrid's name runs both layer kinds at the model's shapes, each its own
block of the sweep: the linear mixer (its variant, q/k heads, value heads, head dims) and the
softmax layers (query heads, key/value heads, head dims). ``--tp N`` divides every head count as
N-way tensor parallelism does (one rank's shard): q/k and value heads must divide; key/value
heads divide too, or, fewer than N, are replicated to one per rank (as vLLM and SGLang
replicate them). ``report`` multiplies the measured layer costs by the layer counts
(linbench/report/model_cost.py). Shapes and sources: the configurations cited per row (the
issue's field notes, checked against each model's published config where named).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any


@dataclass(frozen=True)
class LayerShape:
    """One kind of attention layer: its variant and heads, and how many layers the model has of it."""

    variant: str
    layers: int
    heads: int  # q heads (q/k heads of a linear mixer)
    dim: int  # dim_k
    dim_v: int
    kv_heads: int | None = None  # softmax: key/value heads (None: as many as heads)
    v_heads: int | None = None  # linear mixer: value heads (None: as many as heads)
    # Softmax layers of multi-head latent attention (MLA): (kv_lora_rank, qk_rope_head_dim). The
    # prefill runs on the decompressed heads (the fields above); a served decode keeps one latent
    # of kv_lora_rank + rope elements a token, shared by every head, and attends to it as one
    # key head ("absorbed" MLA: q of kv_lora_rank + rope, values the latent's first kv_lora_rank).
    latent: tuple[int, int] | None = None

    def sharded(self, tp: int, model: str) -> LayerShape:
        """This layer on one of ``tp`` tensor-parallel ranks; ValueError when a count does not divide."""
        if tp < 1:
            raise ValueError(f"tp: must be a positive integer; got {tp}")
        for name, count in (("heads", self.heads), ("v_heads", self.v_heads)):
            if count is not None and count % tp:
                raise ValueError(f"tp: {tp} does not divide {model}'s {self.variant} {name} {count}")
        kv_heads = self.kv_heads
        if kv_heads is not None:
            if kv_heads % tp and tp % kv_heads:
                raise ValueError(f"tp: {tp} neither divides nor is a multiple of {model}'s kv_heads {kv_heads}")
            kv_heads = max(kv_heads // tp, 1)  # fewer than the ranks: replicated, one per rank
        v_heads = None if self.v_heads is None else self.v_heads // tp
        return replace(self, heads=self.heads // tp, kv_heads=kv_heads, v_heads=v_heads)

    def decode_shape(self) -> LayerShape:
        """The layer as a served decode runs it: MLA absorbed (one latent key/value head of
        kv_lora_rank + rope, values its first kv_lora_rank; the q heads as they are); any other
        layer as it is."""
        if self.latent is None:
            return self
        rank, rope = self.latent
        return replace(self, dim=rank + rope, dim_v=rank, kv_heads=1)

    @property
    def absorbed(self) -> bool:
        """An MLA layer in its absorbed decode shape (decode_shape)."""
        return self.latent is not None and self.dim == sum(self.latent) and self.kv_heads == 1

    def table(self) -> dict[str, Any]:
        """This layer's block of a sweep (its axes)."""
        table: dict[str, Any] = {"heads": self.heads, "dim": self.dim, "dim_v": self.dim_v}
        table["layer_variants"] = [self.variant]  # the block runs this layer's variant alone
        if self.kv_heads is not None and self.kv_heads != self.heads:
            table["kv_heads"] = self.kv_heads
        if self.v_heads is not None and self.v_heads != self.heads:
            table["v_heads"] = self.v_heads
        return table


@dataclass(frozen=True)
class HybridPreset:
    """A hybrid model's two layer kinds: its linear mixer and its softmax layers."""

    name: str
    linear: LayerShape
    softmax: LayerShape
    lengths: str
    source: str

    def sharded(self, tp: int) -> HybridPreset:
        return HybridPreset(
            self.name,
            self.linear.sharded(tp, self.name),
            self.softmax.sharded(tp, self.name),
            self.lengths,
            self.source,
        )

    def decoding(self) -> HybridPreset:
        """The preset's layers as decode runs them (LayerShape.decode_shape: MLA absorbed)."""
        return replace(self, linear=self.linear.decode_shape(), softmax=self.softmax.decode_shape())

    def settings(self, length_axis: str) -> dict[str, Any]:
        """The sweep settings: the linear mixer's variant against softmax, and the lengths along
        ``length_axis`` (run: seq, decode: context)."""
        return {"variant": [self.linear.variant], "against": ["softmax"], length_axis: self.lengths}

    def tables(self) -> list[dict[str, Any]]:
        """The sweep's two blocks: the linear layers' shape, then the softmax layers'."""
        return [self.linear.table(), self.softmax.table()]


def _gdn(layers: int, heads: int, v_heads: int, dim: int = 128, dim_v: int = 128) -> LayerShape:
    return LayerShape("gated-deltanet", layers, heads, dim, dim_v, v_heads=v_heads)


def _softmax(layers: int, heads: int, kv_heads: int, dim: int, dim_v: int | None = None) -> LayerShape:
    return LayerShape("softmax", layers, heads, dim, dim_v or dim, kv_heads=kv_heads)


HYBRIDS: dict[str, HybridPreset] = {
    preset.name: preset
    for preset in (
        HybridPreset(
            "qwen3-next-80b",
            _gdn(36, 16, 32),
            _softmax(12, 16, 2, 256),
            "1k..64k",
            "Qwen3-Next-80B-A3B: 48 layers, 36 Gated DeltaNet (16 q/k heads, 32 v heads, 128) : 12 gated softmax "
            "(16 q, 2 kv, 256) (transformers' configuration_qwen3_next.py, Qwen/Qwen3-Next-80B-A3B-Instruct)",
        ),
        HybridPreset(
            "qwen3.5-397b",
            _gdn(45, 16, 64),
            _softmax(15, 32, 2, 256),
            "1k..64k",
            "Qwen3.5-397B-A17B: 60 layers, 45 Gated DeltaNet (16 q/k, 64 v, 128) : 15 softmax (32 q, 2 kv, 256) "
            "(THUDM/slime scripts/models/qwen3.5-397B-A17B.sh; Megatron-LM#5564; FlashQLA's TP1..TP8 benchmark)",
        ),
        HybridPreset(
            "qwen3.5-35b",
            _gdn(30, 16, 32),
            _softmax(10, 16, 2, 256),
            "1k..64k",
            "Qwen3.5-35B-A3B: 40 layers, 30 Gated DeltaNet (16 q/k, 32 v, 128) : 10 softmax (16 q, 2 kv, 256) "
            "(Megatron-LM#5564; FlashQLA's benchmark '35B/9B/4B TP1', 16, 32)",
        ),
        HybridPreset(
            "qwen3.6-27b",
            _gdn(48, 16, 48),
            _softmax(16, 24, 4, 256),
            "1k..64k",
            "Qwen3.5-27B / Qwen3.6-27B: 64 layers, 48 Gated DeltaNet (16 q/k, 48 v, 128) : 16 softmax (24 q, 4 kv, "
            "256) (THUDM/slime scripts/models/qwen3.5-27B.sh; Qwen3.6-27B config.json; FlashQLA '27B TP1', 16, 48)",
        ),
        HybridPreset(
            "kimi-linear-48b",
            LayerShape("kda", 20, 32, 128, 128),
            replace(_softmax(7, 32, 32, 192, 128), latent=(512, 64)),
            "1k..64k",
            "Kimi Linear 48B-A3B: 27 layers, 20 KDA (32 heads, 128) : 7 MLA (32 heads, NoPE, qk 128 + rope 64 = 192, "
            "v 128, kv_lora_rank 512: run prefilling as softmax on the decompressed heads, decoding absorbed, one "
            "latent head of 512 + 64) (transformers' configuration_kimi_linear.py; "
            "moonshotai/Kimi-Linear-48B-A3B-Instruct config.json)",
        ),
        HybridPreset(
            "kimi-k3",
            LayerShape("kda", 69, 96, 128, 128),
            _softmax(24, 96, 96, 192, 128),
            "1k..64k",
            "Kimi K3: 93 layers, 69 KDA (96 heads, 128, gate lower bound -5) : 24 gated MLA (96 heads, qk 192, v 128, "
            "run as softmax on decompressed heads) (tenstorrent/tt-metal kimi_k3_config.py; llama.cpp#26185; "
            "secondary: shapes not from a model card)",
        ),
        HybridPreset(
            "glm-5.3-flash",
            LayerShape("kda", 34, 64, 128, 128),
            _softmax(11, 64, 64, 256),
            "1k..64k",
            "GLM-5.3-Flash: 45 layers, 34 KDA (64 heads, 128, lower bound -5) : 11 DeepSeek sparse attention (MLA, "
            "64 heads, qk 256, v 256; run here as dense softmax, an upper bound on its cost) (a byte copy of "
            "zai-org/GLM-5.3-Flash's config.json in tenstorrent/tt-metal)",
        ),
        HybridPreset(
            "minimax-m1",
            LayerShape("lightning", 70, 64, 128, 128),
            _softmax(10, 64, 8, 128),
            "1k..64k",
            "MiniMax-Text-01 / MiniMax-M1: 80 layers, 70 lightning attention (64 heads, 128) : 10 softmax (64 q, "
            "8 kv, 128) (MiniMax-AI/MiniMax-01 MiniMax-Text-01-Model-Card.md; M1's config.json attn_type_list)",
        ),
        HybridPreset(
            "olmo-hybrid",
            _gdn(24, 30, 30, 96, 192),
            _softmax(8, 30, 30, 128),
            "1k..64k",
            "OLMo Hybrid: 32 layers, 24 Gated DeltaNet (30 heads, dk 96, dv 192) : 8 softmax (30 heads, 128) "
            "(transformers' configuration_olmo_hybrid.py defaults, 3:1)",
        ),
        HybridPreset(
            "nemotron-3-nano",
            LayerShape("mamba2", 23, 8, 128, 64, v_heads=64),
            _softmax(6, 32, 2, 128),
            "1k..64k",
            "Nemotron-3 Nano 30B-A3B: 23 Mamba2 (64 heads x 64, state 128, 8 groups: mamba2 with 8 q/k heads "
            "of 128 and 64 value heads of 64) : 6 softmax (32 q, 2 kv, 128) (THUDM/slime "
            "scripts/models/nemotron-nano-30B-A3B.sh)",
        ),
        HybridPreset(
            "nemotron-h-8b",
            LayerShape("mamba2", 24, 8, 128, 64, v_heads=128),
            _softmax(4, 32, 8, 128),
            "1k..64k",
            "Nemotron-H-8B-Base-8K: 52 layers, 24 Mamba2 (128 heads x 64, state 128, 8 groups: mamba2 with 8 q/k "
            "heads of 128 and 128 value heads of 64) : 4 softmax (32 q, 8 kv, 128) : 24 MLP (nvidia/"
            "Nemotron-H-8B-Base-8K config.json: hybrid_override_pattern M-M-M-M*-..., mamba_num_heads 128, "
            "mamba_head_dim 64, n_groups 8, ssm_state_size 128; Nemotron-H, arXiv:2504.03624)",
        ),
        # Two models with no softmax layer: their softmax block (0 layers) is the same model's
        # attention as if every layer were softmax at the mixer's heads, what the cost table compares.
        HybridPreset(
            "gdn2-1.3b",
            LayerShape("gdn2", 24, 16, 128, 128),
            _softmax(0, 16, 16, 128),
            "1k..64k",
            "Gated DeltaNet-2 at its paper's largest scale, 1.3B: 24 GDN-2 layers (16 heads of 128, expand_v 1: "
            "16 x 128 x 128 = 262,144 state floats a layer), no softmax layer (Gated DeltaNet-2, Hatamizadeh, Choi "
            "and Kautz 2026, arXiv:2605.22791; fla-core's GDN2Config defaults hidden 2048, 16 heads x 128, 24 layers)",
        ),
        HybridPreset(
            "rwkv7-2.9b",
            LayerShape("rwkv7", 32, 40, 64, 64),
            _softmax(0, 40, 40, 64),
            "1k..64k",
            "RWKV-7 Goose 2.9B (rwkv7-g1 2.9B): 32 RWKV-7 layers, d_model 2560 in heads of 64 (40 heads), no "
            "softmax layer (RWKV-7 Goose, Peng et al. 2025, arXiv:2503.14456; n_layer 32, n_embd 2560, head_size 64 "
            "as the released checkpoints are loaded)",
        ),
    )
}


def get_hybrid(name: str) -> HybridPreset | None:
    """The hybrid preset called ``name``, or None."""
    return HYBRIDS.get(name)
