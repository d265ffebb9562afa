"""A hybrid model's attention cost from its measured layer costs (``report`` on a hybrid preset's run).

A run of ``--preset NAME`` for a linear-attention hybrid (linbench/hybrids.py) measures one
layer of each kind at the model's shapes (with ``--tp N``, one rank's shard). At each length s
the model's attention costs what its layers cost in sequence: L_lin × t_lin(s) + L_soft ×
t_soft(s), each t the fastest impl's median time of that layer (ok points only), against the same
model with every layer softmax, (L_lin + L_soft) × t_soft(s). A run's call is a prefill of batch
× s tokens, so per token is that over batch × s; a decode run's point is one generated token, and
its state (the linear state plus the KV cache) adds up over the layers the same way. Memory is
not summed: the layers run one after another, so one layer's peak (the larger kind's) is shown.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from linbench.hybrids import HybridPreset, LayerShape, get_hybrid
from linbench.report.load import Run
from linbench.report.render import ReportTable
from linbench.results.rows import is_set
from linbench.results.schema import DECODE_MODE
from linbench.units import format_bytes, format_size


def run_hybrid(run: Run) -> HybridPreset | None:
    """The hybrid preset a run measured (its shapes sharded by its --tp), or None."""
    settings = (run.meta.get("sweep") or {}).get("settings") or {}
    hybrid = get_hybrid(str(settings.get("preset") or ""))
    if hybrid is None:
        return None
    tp = settings.get("tp")
    return hybrid if tp in (None, "") else hybrid.sharded(int(tp))


def _layer_rows(results: pd.DataFrame, layer: LayerShape) -> pd.DataFrame:
    ok = results[(results["status"] == "ok") & (results["variant"] == layer.variant)]
    v_heads = layer.v_heads or layer.heads
    kv_heads = layer.kv_heads or layer.heads
    match = (ok["heads"] == layer.heads) & (ok["dim_k"] == layer.dim) & (ok["dim_v"] == layer.dim_v)
    match &= (ok["v_heads"] == v_heads) & (ok["kv_heads"] == kv_heads)
    return ok[match]


def _fastest(rows: pd.DataFrame, column: str) -> dict[int, tuple[float, str, pd.Series]]:
    """Per length: the smallest ``column`` and the impl that gave it, with its row."""
    best: dict[int, tuple[float, str, pd.Series]] = {}
    for _, row in rows.iterrows():
        value = row.get(column)
        if value is None or pd.isna(value):
            continue
        seq = int(row["seq"])
        if seq not in best or float(value) < best[seq][0]:
            best[seq] = (float(value), str(row["impl"]), row)
    return best


def _ms(value: float) -> str:
    return f"{value:.3g} ms"


def model_cost_tables(run: Run) -> list[ReportTable]:
    """The model-level table of a hybrid preset's run (none for another run)."""
    hybrid = run_hybrid(run)
    if hybrid is None or run.results.empty:
        return []
    tables = []
    for key, results in run.results.groupby(["mode", "dtype", "batch"], sort=False):
        mode, dtype, batch = (str(part) for part in key)
        table = _table(hybrid, mode, dtype, int(batch), results)
        if table is not None:
            tables.append(table)
    return tables


def _table(hybrid: HybridPreset, mode: str, dtype: str, batch: int, results: pd.DataFrame) -> ReportTable | None:
    decode = mode == DECODE_MODE
    column = "time_per_token_ms" if decode else "time_ms"
    linear, softmax = hybrid.linear, hybrid.softmax
    lin = _fastest(_layer_rows(results, linear), column)
    soft = _fastest(_layer_rows(results, softmax), column)
    lengths = sorted(set(lin) & set(soft))
    if not lengths:
        return None
    layers = linear.layers + softmax.layers
    rows = []
    for seq in lengths:
        (t_lin, impl_lin, row_lin), (t_soft, impl_soft, row_soft) = lin[seq], soft[seq]
        model = linear.layers * t_lin + softmax.layers * t_soft
        every = layers * t_soft
        tokens = 1 if decode else batch * seq  # a decode point makes one token per sequence
        impl_lin += _busy(row_lin)
        impl_soft += _busy(row_soft)
        arithmetic = (
            f"{linear.layers}×{_ms(t_lin)} ({impl_lin}) + {softmax.layers}×{_ms(t_soft)} ({impl_soft}) = {_ms(model)}"
            + ("" if decode else f"; / {batch}×{seq} tokens")
        )
        cells = [format_size(seq), _ms(model / tokens), _ms(every / tokens), f"{every / model:.2f}×"]
        cells += [_memory(row_lin, row_soft, linear, softmax, decode), arithmetic]
        rows.append(cells)
    what = "per decode step" if decode else "per token (prefill)"
    title = (
        f"{hybrid.name} model attention cost {what} — {dtype} {mode} B={batch}: {linear.layers} {linear.variant} "
        f"layers (H={linear.heads}{_v(linear)} Dk={linear.dim} Dv={linear.dim_v}) + {softmax.layers} softmax "
        f"(H={softmax.heads} KV={softmax.kv_heads} Dk={softmax.dim} Dv={softmax.dim_v}), against all {layers} "
        "softmax; the fastest ok impl of each layer kind at each length (* measured oversubscribed: other "
        "processes took its cores, so the figure is slower than the machine's)"
    )
    memory = "state + KV cache (all layers)" if decode else "peak (one layer at a time)"
    columns = ["seq" if not decode else "context", "model", "all softmax", "all softmax / model", memory, "arithmetic"]
    return ReportTable(title, columns, rows)


def _busy(row: Any) -> str:
    return "*" if is_set(row.get("oversubscribed")) else ""


def _v(layer: LayerShape) -> str:
    return f" HV={layer.v_heads}" if layer.v_heads and layer.v_heads != layer.heads else ""


def _memory(row_lin: Any, row_soft: Any, linear: LayerShape, softmax: LayerShape, decode: bool) -> str:
    """Decode: the model's state and caches, summed over the layers; else one layer's peak."""
    if decode:
        state_lin, state_soft = row_lin.get("state_bytes"), row_soft.get("state_bytes")
        if pd.isna(state_lin) or pd.isna(state_soft):
            return "-"
        total = linear.layers * float(state_lin) + softmax.layers * float(state_soft)
        every = (linear.layers + softmax.layers) * float(state_soft)
        return f"{format_bytes(int(total))} (all softmax {format_bytes(int(every))})"
    peaks = [row.get("peak_bytes") for row in (row_lin, row_soft)]
    if any(pd.isna(peak) for peak in peaks):
        return "-"
    return format_bytes(int(max(float(peak) for peak in peaks)))
