"""Model presets: the attention shapes of a few well-known architectures, by name.

``--preset NAME`` (``preset = "NAME"`` in a suite) fills heads, kv_heads, dim and a length
range from one row of ``PRESETS``; whatever the command line gives overrides it, as it
overrides a suite. Every row names where its numbers come from: the paper (or model card)
that publishes the architecture's configuration. A row holds one layer's attention: the
query heads, the key/value heads (fewer: grouped-query attention; one: multi-query), the
head dimension, and lengths up to the context the model was trained for.

The rows are softmax models' shapes; the linear-attention hybrids (their gated layers' heads
beside their softmax layers') are linbench/hybrids.py's, taken by the same --preset.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from linbench.sweep.settings import LENGTH_AXIS


@dataclass(frozen=True)
class Preset:
    """One architecture's attention shape."""

    name: str
    heads: int
    kv_heads: int
    dim: int
    lengths: str  # a range in linbench's grammar, up to the model's training context
    source: str  # where the numbers are published

    def settings(self, command: str) -> dict[str, Any]:
        """The sweep settings this preset fills for ``command`` (run: seq, decode: context)."""
        return {"heads": self.heads, "kv_heads": self.kv_heads, "dim": self.dim, LENGTH_AXIS[command]: self.lengths}


PRESETS: dict[str, Preset] = {
    preset.name: preset
    for preset in (
        Preset(
            "llama3-8b",
            32,
            8,
            128,
            "1k..8k",
            "Llama 3 8B: 32 heads, 8 KV heads, model dim 4096 (The Llama 3 Herd of Models, Dubey et al. 2024, Table 3)",
        ),
        Preset(
            "llama3-70b",
            64,
            8,
            128,
            "1k..8k",
            "Llama 3 70B: 64 heads, 8 KV heads, model dim 8192 (The Llama 3 Herd of Models, Dubey et al. 2024, "
            "Table 3)",
        ),
        Preset(
            "mistral-7b",
            32,
            8,
            128,
            "1k..8k",
            "Mistral 7B: n_heads 32, n_kv_heads 8, head_dim 128, context 8192 (Mistral 7B, Jiang et al. 2023, Table 1)",
        ),
        Preset(
            "qwen2-7b",
            28,
            4,
            128,
            "1k..32k",
            "Qwen2-7B: 28 query heads, 4 KV heads, head size 128 (Qwen2 Technical Report, Yang et al. 2024, Table 1)",
        ),
        Preset(
            "gemma2-9b",
            16,
            8,
            256,
            "1k..8k",
            "Gemma 2 9B: 16 heads, 8 KV heads, head size 256, context 8192 (Gemma 2: Improving Open Language Models "
            "at a Practical Size, Gemma Team 2024, Table 1)",
        ),
        Preset(
            "falcon-7b",
            71,
            1,
            64,
            "512..2k",
            "Falcon-7B: 71 heads of dim 64, multi-query (one KV head), context 2048 (The Falcon Series of Open "
            "Language Models, Almazrouei et al. 2023)",
        ),
    )
}


def get_preset(name: str) -> Preset:
    """The preset called ``name``; ValueError naming the nearest presets ("did you mean") and
    listing them all when there is none."""
    try:
        return PRESETS[name]
    except KeyError:
        from linbench.hybrids import HYBRIDS

        names = (*PRESETS, *HYBRIDS)
        near = nearest(name, names)
        guess = f"did you mean {' or '.join(near)}? " if near else ""
        raise ValueError(f"unknown preset {name!r}; {guess}presets: {', '.join(names)}") from None


def nearest(name: str, names: tuple[str, ...]) -> list[str]:
    """The names ``name`` may have meant: those it begins (a model's family without its size,
    ``qwen3.5``), else the close spellings (difflib's), at most three."""
    lowered = name.strip().lower()
    begun = [candidate for candidate in names if lowered and candidate.startswith(lowered)]
    return (begun or difflib.get_close_matches(lowered, names, n=3, cutoff=0.6))[:3]
