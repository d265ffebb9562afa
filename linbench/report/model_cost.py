"""A hybrid model's attention cost from its measured layer costs (``report`` on a hybrid preset's run).

A run of ``--preset NAME`` for a linear-attention hybrid (linbench/hybrids.py) measures one
layer of each kind at the model's shapes; with ``--tp N`` one tensor-parallel rank's shard (its
heads / N), so every figure here is one rank's. At each length s the model's attention costs
what its layers cost in sequence: L_lin × t_lin(s) + L_soft × t_soft(s), each t the fastest
impl's median time of that layer (ok points only), against the same model with every layer
softmax, (L_lin + L_soft) × t_soft(s). A run's call is a prefill of batch × s tokens, so per token
is that over batch × s; a decode run's point is one generated token, and its state (the linear
state plus the KV cache) adds up over the layers the same way, per request (a sequence of the
batch). An MLA model's softmax layers decode in their absorbed shape (LayerShape.decode_shape).
Memory is not summed in a prefill: the layers run one after another, so one layer's peak (the
larger kind's) is shown.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd

from linbench.hybrids import HybridPreset, LayerShape, get_hybrid
from linbench.report.load import Run
from linbench.report.render import ReportTable
from linbench.report.series import ALLOC_COLUMN, memory_column
from linbench.results.rows import is_set
from linbench.results.schema import DECODE_MODE
from linbench.units import format_bytes, format_size


def run_tp(run: Run) -> int:
    """The tensor parallelism a run's rows are one rank's shard of: the rows' ``tp``, else the
    run's --tp in meta.json (runs before the column), else 1."""
    if "tp" in run.results.columns:
        recorded = run.results["tp"].dropna()
        if not recorded.empty:
            return int(recorded.iloc[0])
    tp = ((run.meta.get("sweep") or {}).get("settings") or {}).get("tp")
    return 1 if tp in (None, "") else int(tp)


def run_hybrid(run: Run) -> HybridPreset | None:
    """The hybrid preset a run measured (its shapes sharded by its --tp), or None."""
    settings = (run.meta.get("sweep") or {}).get("settings") or {}
    hybrid = get_hybrid(str(settings.get("preset") or ""))
    return None if hybrid is None else hybrid.sharded(run_tp(run))


def layer_matches(row: Any, layer: LayerShape) -> bool:
    """Whether a row (a mapping or a Series) was measured at ``layer``'s heads and head dims."""
    sizes = {"heads": layer.heads, "dim_k": layer.dim, "dim_v": layer.dim_v}
    sizes |= {"v_heads": layer.v_heads or layer.heads, "kv_heads": layer.kv_heads or layer.heads}
    return all(not pd.isna(row.get(name)) and int(row.get(name)) == value for name, value in sizes.items())


def softmax_words(layer: LayerShape) -> str:
    """What a softmax layer's rows measured, for a title: plain, or MLA absorbed."""
    shape = f"H={layer.heads} KV={layer.kv_heads or layer.heads} Dk={layer.dim} Dv={layer.dim_v}"
    if layer.latent is None:
        return f"softmax ({shape})"
    if not layer.absorbed:
        return f"MLA layers run decompressed, as softmax ({shape})"
    rank, rope = layer.latent
    return (
        f"MLA layers measured absorbed, as softmax:kvcache with one latent key head (H={layer.heads} KV=1 "
        f"Dk={rank + rope} Dv={rank}); that cache keeps K ({rank + rope}) and V ({rank}) apart, {2 * rank + rope} "
        f"elements a token where MLA keeps its latent's {rank + rope} once ({(2 * rank + rope) / (rank + rope):.2f}x)"
    )


@dataclass(frozen=True)
class ModelCostLine:
    """One length of a hybrid model's table, its times in ms (per token or per decode step)."""

    model: str
    tp: int
    mode: str
    dtype: str
    batch: int
    seq: int
    model_ms: float
    all_softmax_ms: float
    linear_impl: str
    softmax_impl: str
    linear_ms: float  # one layer's time (the fastest impl's)
    softmax_ms: float
    # Measured oversubscribed (other processes took its cores): slower than the machine's.
    linear_oversubscribed: bool
    softmax_oversubscribed: bool
    memory_bytes: float | None  # decode: the model's state and caches a request; else one layer's peak
    all_softmax_memory_bytes: float | None  # decode: all softmax's caches a request
    # The column memory_bytes is read from: state_bytes (decode), alloc_peak_bytes (a CPU run's
    # memory figure, where recorded) or peak_bytes.
    memory_column: str


def _layer_rows(results: pd.DataFrame, layer: LayerShape) -> pd.DataFrame:
    ok = results[(results["status"] == "ok") & (results["variant"] == layer.variant)]
    return ok[[layer_matches(row, layer) for _, row in ok.iterrows()]]


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


def model_cost_lines(run: Run) -> list[ModelCostLine]:
    """Every length of every mode, dtype and batch of a hybrid preset's run (none for another run)."""
    hybrid = run_hybrid(run)
    if hybrid is None or run.results.empty:
        return []
    lines = []
    for key, results in run.results.groupby(["mode", "dtype", "batch"], sort=False):
        mode, dtype, batch = (str(part) for part in key)
        lines += _lines(hybrid, run_tp(run), mode, dtype, int(batch), results)
    return lines


def _lines(
    preset: HybridPreset, tp: int, mode: str, dtype: str, batch: int, results: pd.DataFrame
) -> list[ModelCostLine]:
    decode = mode == DECODE_MODE
    hybrid = preset.decoding() if decode else preset
    column = "time_per_token_ms" if decode else "time_ms"
    linear, softmax = hybrid.linear, hybrid.softmax
    lin = _fastest(_layer_rows(results, linear), column)
    soft = _fastest(_layer_rows(results, softmax), column)
    memory = "state_bytes" if decode else memory_column(results)
    lines = []
    for seq in sorted(set(lin) & set(soft)):
        (t_lin, impl_lin, row_lin), (t_soft, impl_soft, row_soft) = lin[seq], soft[seq]
        tokens = 1 if decode else batch * seq  # a decode point makes one token per sequence
        model = (linear.layers * t_lin + softmax.layers * t_soft) / tokens
        every = (linear.layers + softmax.layers) * t_soft / tokens
        held, held_every = _memory(row_lin, row_soft, linear, softmax, memory)
        line = ModelCostLine(
            model=preset.name, tp=tp, mode=mode, dtype=dtype, batch=batch, seq=seq, model_ms=model,
            all_softmax_ms=every, linear_impl=impl_lin, softmax_impl=impl_soft, linear_ms=t_lin, softmax_ms=t_soft,
            linear_oversubscribed=_busy(row_lin), softmax_oversubscribed=_busy(row_soft), memory_bytes=held,
            all_softmax_memory_bytes=held_every, memory_column=memory,
        )  # fmt: skip
        lines.append(line)
    return lines


def model_cost_tables(run: Run) -> list[ReportTable]:
    """The model-level tables of a hybrid preset's run, one per mode, dtype and batch."""
    hybrid = run_hybrid(run)
    groups: dict[tuple[str, str, int], list[ModelCostLine]] = {}
    for line in model_cost_lines(run):
        groups.setdefault((line.mode, line.dtype, line.batch), []).append(line)
    return [_table(hybrid, lines) for lines in groups.values() if hybrid is not None]


def model_cost_json(run: Run) -> list[dict[str, Any]]:
    """The tables' lines as numbers, for ``report --json``."""
    return [{"run": run.name, **asdict(line)} for line in model_cost_lines(run)]


def _table(preset: HybridPreset, lines: list[ModelCostLine]) -> ReportTable:
    first = lines[0]
    decode = first.mode == DECODE_MODE
    hybrid = preset.decoding() if decode else preset
    linear, softmax = hybrid.linear, hybrid.softmax
    layers = linear.layers + softmax.layers
    rows = [_cells(line, linear, softmax, decode) for line in lines]
    what = "per decode step" if decode else "per token (prefill)"
    title = (
        f"{preset.name} model attention cost {what}, one tensor-parallel rank's shard (TP{first.tp}) — "
        f"{first.dtype} {first.mode} B={first.batch}: {linear.layers} {linear.variant} layers (H={linear.heads}"
        f"{_v(linear)} Dk={linear.dim} Dv={linear.dim_v}) + {softmax.layers} {softmax_words(softmax)}, against all "
        f"{layers} softmax; the fastest ok impl of each layer kind at each length (* measured oversubscribed: other "
        "processes took its cores, so the figure is slower than the machine's)"
    )
    peak = "peak allocated" if first.memory_column == ALLOC_COLUMN else "peak"
    memory = "state + KV cache a request (all layers)" if decode else f"{peak} (one layer at a time)"
    columns = ["seq" if not decode else "context", "model", "all softmax", "all softmax / model", memory, "arithmetic"]
    return ReportTable(title, columns, rows)


def _cells(line: ModelCostLine, linear: LayerShape, softmax: LayerShape, decode: bool) -> list[str]:
    total = linear.layers * line.linear_ms + softmax.layers * line.softmax_ms
    impl_lin = line.linear_impl + ("*" if line.linear_oversubscribed else "")
    impl_soft = line.softmax_impl + ("*" if line.softmax_oversubscribed else "")
    arithmetic = (
        f"{linear.layers}×{_ms(line.linear_ms)} ({impl_lin}) + {softmax.layers}×{_ms(line.softmax_ms)} "
        f"({impl_soft}) = {_ms(total)}" + ("" if decode else f"; / {line.batch}×{line.seq} tokens")
    )
    if line.memory_bytes is None:
        memory = "-"
    elif decode:
        memory = f"{format_bytes(int(line.memory_bytes))} (all softmax {format_bytes(line.all_softmax_memory_bytes)})"
    else:
        memory = format_bytes(int(line.memory_bytes))
    ratio = f"{line.all_softmax_ms / line.model_ms:.2f}×"
    return [format_size(line.seq), _ms(line.model_ms), _ms(line.all_softmax_ms), ratio, memory, arithmetic]


def _busy(row: Any) -> bool:
    return bool(is_set(row.get("oversubscribed")))


def _v(layer: LayerShape) -> str:
    return f" HV={layer.v_heads}" if layer.v_heads and layer.v_heads != layer.heads else ""


def _per_request(row: Any) -> float | None:
    """What one request (a sequence of the batch) holds: a serving row's own figure, else the
    batch's state over the batch."""
    each = row.get("state_bytes_per_request")
    if each is not None and not pd.isna(each):
        return float(each)
    state = row.get("state_bytes")
    return None if state is None or pd.isna(state) else float(state) / int(row["batch"])


def _memory(
    row_lin: Any, row_soft: Any, linear: LayerShape, softmax: LayerShape, column: str
) -> tuple[float | None, float | None]:
    """Decode (``column`` state_bytes): the model's state and caches a request, summed over the
    layers, and all softmax's; else one layer's peak by ``column``."""
    if column == "state_bytes":
        state_lin, state_soft = _per_request(row_lin), _per_request(row_soft)
        if state_lin is None or state_soft is None:
            return None, None
        total = linear.layers * state_lin + softmax.layers * state_soft
        return total, (linear.layers + softmax.layers) * state_soft
    peaks = [row.get(column) for row in (row_lin, row_soft)]
    if any(peak is None or pd.isna(peak) for peak in peaks):
        return None, None
    return max(float(peak) for peak in peaks), None
