"""Serving capacity: how many requests at a context fit a memory budget, by decoder and for a
hybrid model's mix of linear and softmax layers (``linbench report`` on a serving decode run).

A serving decode row (docs/decode.md, "Serving") measured what one request holds between steps
(``state_bytes_per_request``: a recurrent state's pool slot, or a KV cache at its context) and
the budget it counts against (``memory_budget_bytes``); ``requests_fit`` is their quotient. A
hybrid stacks ``linear`` layers of a recurrent decoder and ``full`` layers of softmax's KV
cache: its request holds linear × the recurrent state + full × the cache, and its step takes
linear × the recurrent step + full × the cache's step, both as this run measured them at its
own shape (the model's layer mix, not its head counts).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from linbench.report.render import ReportTable
from linbench.units import format_bytes, format_size


@dataclass(frozen=True)
class Hybrid:
    """A production model's mix of linear and full-attention layers."""

    name: str
    variant: str  # the linear layers' variant
    linear: int
    full: int
    source: str


HYBRIDS = (
    Hybrid(
        "qwen3-next-80b",
        "gated-deltanet",
        36,
        12,
        "Qwen3-Next-80B-A3B: 48 layers, 36 Gated DeltaNet : 12 gated attention (full_attention_interval 4; "
        "transformers' configuration_qwen3_next.py)",
    ),
    Hybrid(
        "kimi-linear-48b",
        "kda",
        20,
        7,
        "Kimi Linear 48B-A3B: 27 layers, 20 KDA : 7 MLA (transformers' configuration_kimi_linear.py)",
    ),
)
CACHE = ("softmax", "kvcache")
# What makes two rows comparable: the same requests at the same shape and step.
_SHAPE = ("device", "dtype", "batch", "heads", "kv_heads", "dim_k", "dim_v", "seq", "tokens_per_step")
COLUMNS = ["decoder", "context", "state/request", "budget", "requests that fit", "tokens/s (batch)"]


def capacity_tables(results: pd.DataFrame) -> list[ReportTable]:
    """The table of a serving decode run's ok rows, then its hybrids; none for other runs."""
    if "requests_fit" not in results.columns:
        return []
    rows = results[(results["status"] == "ok") & results["requests_fit"].notna()]
    if rows.empty:
        return []
    lines = [_decoder_line(row) for row in rows.to_dict("records")] + _hybrid_lines(rows)
    return [ReportTable("Serving capacity: requests whose state fits the memory budget", COLUMNS, lines)]


def _label(row: dict[str, Any]) -> str:
    state = f" state {row['state_dtype']}" if row.get("state_dtype") else ""
    state += f" {row['state_layout']}" if isinstance(row.get("state_layout"), str) and row["state_layout"] else ""
    steps = int(row.get("tokens_per_step") or 1)
    return f"{row['variant']}:{row['impl']}{state} T{steps} B{int(row['batch'])}"


def _decoder_line(row: dict[str, Any]) -> list[str]:
    return [
        _label(row),
        format_size(int(row["seq"])),
        format_bytes(row["state_bytes_per_request"]),
        format_bytes(row["memory_budget_bytes"]),
        f"{int(row['requests_fit']):,}",
        _rate(row.get("tokens_per_s")),
    ]


def _hybrid_lines(rows: pd.DataFrame) -> list[list[str]]:
    """Each hybrid whose linear variant and the KV cache this run measured at one shape, and
    the same layer count all softmax beside it."""
    lines = []
    records: list[dict[str, Any]] = [{str(k): v for k, v in r.items()} for r in rows.to_dict("records")]
    caches = {_shape(r): r for r in records if (r["variant"], r["impl"]) == CACHE}
    for hybrid in HYBRIDS:
        for linear in (r for r in records if r["variant"] == hybrid.variant):
            cache = caches.get(_shape(linear))
            if cache is None:
                continue
            held = hybrid.linear * linear["state_bytes_per_request"] + hybrid.full * cache["state_bytes_per_request"]
            step = hybrid.linear * linear["time_ms"] + hybrid.full * cache["time_ms"]
            layers = hybrid.linear + hybrid.full
            mix = f"{hybrid.name} ({hybrid.linear}:{hybrid.full}) {_label(linear)}"
            lines.append(_mix_line(mix, linear, held, step))
            every = layers * cache["state_bytes_per_request"]
            lines.append(_mix_line(f"  all {layers} layers softmax:kvcache", cache, every, layers * cache["time_ms"]))
    return lines


def _mix_line(label: str, row: dict[str, Any], held: float, step_ms: float) -> list[str]:
    kept = float(row.get("accepted_per_step") or 1.0)
    rate = int(row["batch"]) * kept / (step_ms / 1e3) if step_ms > 0 else math.nan
    budget = float(row["memory_budget_bytes"])
    fits = f"{int(budget // held):,}"
    return [label, format_size(int(row["seq"])), format_bytes(held), format_bytes(budget), fits, _rate(rate)]


def _shape(row: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(row.get(column) for column in _SHAPE)


def _rate(value: Any) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{float(value):,.0f}"
