"""report's model-level cost of a hybrid preset's run, from layer costs × layer counts (no run: a table of rows)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from linbench.report.load import Run
from linbench.report.model_cost import model_cost_json, model_cost_tables
from linbench.units import format_bytes


def _row(variant: str, impl: str, seq: int, time_ms: float, **shape: int) -> dict[str, object]:
    sizes = {"heads": 16, "kv_heads": 16, "v_heads": 16, "dim_k": 128, "dim_v": 128} | shape
    common = {"mode": "fwd", "dtype": "fp32", "batch": 1, "status": "ok", "peak_bytes": 1 << 20}
    return common | sizes | {"variant": variant, "impl": impl, "seq": seq, "time_ms": time_ms}


def _run(rows: list[dict[str, object]]) -> Run:
    meta = {"sweep": {"settings": {"preset": "qwen3-next-80b", "tp": None}}}
    return Run(Path("run"), pd.DataFrame(rows), meta)


def test_the_model_cost_is_layer_costs_times_layer_counts_with_its_arithmetic() -> None:
    """qwen3-next-80b: 36 Gated DeltaNet layers (16 q/k, 32 v heads) and 12 softmax (16 q, 2 kv, 256)."""
    rows = [
        _row("gated-deltanet", "chunked", 100, 2.0, v_heads=32),
        _row("gated-deltanet", "recurrent", 100, 5.0, v_heads=32),  # slower: not the layer's cost
        _row("softmax", "sdpa", 100, 4.0, kv_heads=2, dim_k=256, dim_v=256),
        _row("softmax", "sdpa", 100, 1.0),  # another shape (not the model's softmax layer): left out
    ]
    (table,) = model_cost_tables(_run(rows))
    (row,) = table.rows
    # model: 36 × 2 + 12 × 4 = 120 ms over 100 tokens; all softmax: 48 × 4 = 192 ms
    assert row[:4] == ["100", "1.2 ms", "1.92 ms", "1.60×"]
    assert row[5] == "36×2 ms (chunked) + 12×4 ms (sdpa) = 120 ms; / 1×100 tokens"
    assert "qwen3-next-80b" in table.title and "36 gated-deltanet layers (H=16 HV=32" in table.title


def test_a_run_of_another_preset_or_without_both_layers_has_no_model_table() -> None:
    assert model_cost_tables(_run([_row("gated-deltanet", "chunked", 100, 2.0, v_heads=32)])) == []
    plain = Run(Path("run"), pd.DataFrame([_row("softmax", "sdpa", 100, 4.0)]), {})
    assert model_cost_tables(plain) == []


def _decode(variant: str, impl: str, time_ms: float, state: int, **shape: object) -> dict[str, object]:
    row = _row(variant, impl, 4096, time_ms, **shape) | {"mode": "decode", "time_per_token_ms": time_ms}
    return row | {"state_bytes": 3 * state, "state_bytes_per_request": state, "batch": 2}  # a pool of 3 slots


def test_a_served_decode_run_sums_each_layer_s_state_a_request_not_its_pool() -> None:
    """qwen3-next-80b decoding at TP1: 36 states of 2 MiB a request (32 value heads of 128 × 128
    fp32) and 12 caches of 1 MiB, each row's pool of 3 slots not counted."""
    rows = [
        _decode("gated-deltanet", "recurrent", 1.0, 2 << 20, v_heads=32),
        _decode("softmax", "kvcache", 2.0, 1 << 20, kv_heads=2, dim_k=256, dim_v=256),
    ]
    (table,) = model_cost_tables(_run(rows))
    (row,) = table.rows
    assert row[4] == "84.0 MiB (all softmax 48.0 MiB)"
    assert table.columns[4] == "state + KV cache a request (all layers)"
    assert "one tensor-parallel rank's shard (TP1)" in table.title


def test_kimi_linear_decodes_its_mla_layers_absorbed_and_says_so() -> None:
    """At TP4: KDA 8 heads of 128; MLA 8 q heads against one latent head of 512 + 64."""
    meta = {"sweep": {"settings": {"preset": "kimi-linear-48b", "tp": "4"}}}
    kda = {"heads": 8, "kv_heads": 8, "v_heads": 8, "dim_k": 128, "dim_v": 128}
    rows = [
        _decode("kda", "recurrent", 1.0, 1 << 19, **kda),
        _decode("softmax", "kvcache", 2.0, 1 << 20, heads=8, kv_heads=1, v_heads=8, dim_k=576, dim_v=512),
    ]
    (table,) = model_cost_tables(Run(Path("run"), pd.DataFrame(rows), meta))
    assert table.rows[0][4] == f"{format_bytes(20 * (1 << 19) + 7 * (1 << 20))} (all softmax 27.0 MiB)"
    assert "7 MLA layers measured absorbed" in table.title and "(H=8 KV=1 Dk=576 Dv=512)" in table.title
    assert "(TP4)" in table.title


def test_a_cpu_prefill_shows_the_memory_allocated_through_torch_not_peak_rss() -> None:
    """The CPU's memory figure in reports is alloc_peak_bytes; peak RSS counts the process's history."""
    rows = [
        _row("gated-deltanet", "chunked", 100, 2.0, v_heads=32) | {"alloc_peak_bytes": 3 << 20},
        _row("softmax", "sdpa", 100, 4.0, kv_heads=2, dim_k=256, dim_v=256) | {"alloc_peak_bytes": 2 << 20},
    ]
    (table,) = model_cost_tables(_run(rows))
    assert table.rows[0][4] == "3.0 MiB" and table.columns[4] == "peak allocated (one layer at a time)"


def test_the_json_gives_each_length_as_numbers() -> None:
    rows = [
        _row("gated-deltanet", "chunked", 100, 2.0, v_heads=32),
        _row("softmax", "sdpa", 100, 4.0, kv_heads=2, dim_k=256, dim_v=256),
    ]
    (line,) = json.loads(json.dumps(model_cost_json(_run(rows))))
    assert line["model"] == "qwen3-next-80b" and line["tp"] == 1 and line["seq"] == 100
    assert line["model_ms"] == 1.2 and line["all_softmax_ms"] == 1.92 and line["memory_bytes"] == 1 << 20
