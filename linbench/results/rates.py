"""The rates a results row derives from its time: TFLOP/s, tokens per second, time per token.

Shared by whatever writes results rows from a time (the sweep runner; ``linbench ab``, which
merges rounds into one row), so the formulas live once.
"""

from __future__ import annotations

from typing import Any


def rate_columns(time_ms: float, flops: float | None, batch: int, seq: int, decode: bool) -> dict[str, Any]:
    """``tflops`` (when the variant counts FLOPs) and, for a run row, ``tokens_per_s`` (every
    position of every sequence of the batch per second) or, for a decode row,
    ``time_per_token_ms`` (a decode repetition is one step: one token per sequence)."""
    seconds = time_ms / 1e3
    rates: dict[str, Any] = {}
    if flops:
        rates["tflops"] = flops / seconds / 1e12
    if decode:
        rates["time_per_token_ms"] = time_ms
    else:
        rates["tokens_per_s"] = batch * seq / seconds
    return rates
