"""Serving capacity: how many requests at a context fit a memory budget, by decoder and for a
hybrid model's mix of linear and softmax layers (``linbench report`` on a serving decode run).

A serving decode row (docs/decode.md, "Serving") measured what one request holds between steps
(``state_bytes_per_request``: a recurrent state's pool slot, or a KV cache at its context) and
the budget it counts against (``memory_budget_bytes``); ``requests_fit`` is their quotient.

A hybrid preset (linbench/hybrids.py) stacks ``linear`` layers of a recurrent decoder and
``full`` layers of softmax's KV cache: its request holds linear × the recurrent state + full ×
the cache, and its step takes linear × the recurrent step + full × the cache's step. A model row
is made only from rows measured at the model's own shapes, as one rank of the run's tensor
parallelism holds them (the row's ``tp``; an MLA model's softmax layers in their absorbed decode
shape): a run at another shape has no model rows, however its variants are named.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd

from linbench.hybrids import HYBRIDS, HybridPreset, LayerShape
from linbench.report.load import Run
from linbench.report.model_cost import layer_matches, run_tp, softmax_words
from linbench.report.render import ReportTable
from linbench.units import format_bytes, format_size

CACHE = ("softmax", "kvcache")
# What makes two rows comparable: the same requests on the same device, at the same context and step.
_PAIRING = ("device", "dtype", "batch", "seq", "tokens_per_step")
COLUMNS = ["decoder", "context", "state/request", "budget", "requests that fit", "tokens/s (batch)"]


@dataclass(frozen=True)
class CapacityLine:
    """One line of the table: a decoder's row, a hybrid model's mix, or that model all softmax."""

    label: str
    context: int
    state_bytes_per_request: float
    memory_budget_bytes: float
    requests_fit: int
    tokens_per_s: float | None
    model: str = ""  # a model line's preset ("" for a decoder's own row)
    tp: int | None = None  # a model line's tensor parallelism: its figures are one rank's shard

    def cells(self) -> list[str]:
        return [
            self.label,
            format_size(self.context),
            format_bytes(self.state_bytes_per_request),
            format_bytes(self.memory_budget_bytes),
            f"{self.requests_fit:,}",
            _rate(self.tokens_per_s),
        ]


def capacity_lines(run: Run) -> list[CapacityLine]:
    """A serving decode run's ok rows, then the model rows its shapes make; none for other runs."""
    results = run.results
    if "requests_fit" not in results.columns:
        return []
    rows = results[(results["status"] == "ok") & results["requests_fit"].notna()]
    if rows.empty:
        return []
    records: list[dict[str, Any]] = [{str(k): v for k, v in r.items()} for r in rows.to_dict("records")]
    return [_decoder_line(row) for row in records] + list(_model_lines(records, run_tp(run)))


def capacity_tables(run: Run) -> list[ReportTable]:
    """The capacity table of a serving decode run (none for other runs)."""
    lines = capacity_lines(run)
    if not lines:
        return []
    return [ReportTable(_title(lines), COLUMNS, [line.cells() for line in lines])]


def capacity_json(run: Run) -> list[dict[str, Any]]:
    """The table's lines as numbers, for ``report --json``."""
    return [{"run": run.name, **asdict(line)} for line in capacity_lines(run)]


def _title(lines: list[CapacityLine]) -> str:
    title = "Serving capacity: requests whose state fits the memory budget"
    models = [line for line in lines if line.model]
    if not models:
        return title
    tp = models[0].tp
    words = [f"model rows at each model's shapes, one tensor-parallel rank's shard (TP{tp}: its heads / {tp})"]
    shown = dict.fromkeys(line.model for line in models)
    words += [text for name in shown if (text := _mla_words(HYBRIDS[name].sharded(tp or 1).decoding()))]
    return f"{title}; {'; '.join(words)}"


def _mla_words(model: HybridPreset) -> str:
    return f"{model.name}'s {softmax_words(model.softmax)}" if model.softmax.absorbed else ""


def _label(row: dict[str, Any]) -> str:
    state = f" state {row['state_dtype']}" if row.get("state_dtype") else ""
    state += f" {row['state_layout']}" if isinstance(row.get("state_layout"), str) and row["state_layout"] else ""
    steps = int(row.get("tokens_per_step") or 1)
    return f"{row['variant']}:{row['impl']}{state} T{steps} B{int(row['batch'])}"


def _decoder_line(row: dict[str, Any]) -> CapacityLine:
    return CapacityLine(
        _label(row),
        int(row["seq"]),
        float(row["state_bytes_per_request"]),
        float(row["memory_budget_bytes"]),
        int(row["requests_fit"]),
        None if _missing(row.get("tokens_per_s")) else float(row["tokens_per_s"]),
    )


def _model_lines(records: list[dict[str, Any]], tp: int) -> Iterator[CapacityLine]:
    """Each hybrid preset whose linear layer and KV cache this run measured at the model's
    shapes (sharded by ``tp``), each at one context, step and batch, and the same layer count
    all softmax beside it."""
    for preset in HYBRIDS.values():
        try:
            model = preset.sharded(tp).decoding()
        except ValueError:  # tp does not divide this model's heads: no rank of it was measured
            continue
        caches = {_pairing(r): r for r in records if (r["variant"], r["impl"]) == CACHE and _is(r, model.softmax)}
        for linear in (r for r in records if _is(r, model.linear)):
            cache = caches.get(_pairing(linear))
            if cache is not None:
                yield from _mix(model, tp, linear, cache)


def _mix(model: HybridPreset, tp: int, linear: dict[str, Any], cache: dict[str, Any]) -> Iterator[CapacityLine]:
    lin, full = model.linear.layers, model.softmax.layers
    held = lin * float(linear["state_bytes_per_request"]) + full * float(cache["state_bytes_per_request"])
    step = lin * float(linear["time_ms"]) + full * float(cache["time_ms"])
    label = f"{model.name} TP{tp} ({lin}:{full}) {_label(linear)}"
    yield _mix_line(label, linear, held, step, model.name, tp)
    layers = lin + full
    every, every_step = layers * float(cache["state_bytes_per_request"]), layers * float(cache["time_ms"])
    yield _mix_line(f"  all {layers} layers softmax:kvcache", cache, every, every_step, model.name, tp)


def _is(row: dict[str, Any], layer: LayerShape) -> bool:
    return row["variant"] == layer.variant and layer_matches(row, layer)


def _mix_line(label: str, row: dict[str, Any], held: float, step_ms: float, model: str, tp: int) -> CapacityLine:
    kept = float(row.get("accepted_per_step") or 1.0)
    rate = int(row["batch"]) * kept / (step_ms / 1e3) if step_ms > 0 else None
    budget = float(row["memory_budget_bytes"])
    return CapacityLine(label, int(row["seq"]), held, budget, int(budget // held), rate, model, tp)


def _pairing(row: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(None if _missing(row.get(column)) else row.get(column) for column in _PAIRING)


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or bool(pd.isna(value))


def _rate(value: Any) -> str:
    return "-" if _missing(value) else f"{float(value):,.0f}"
