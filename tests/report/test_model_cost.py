"""report's model-level cost of a hybrid preset's run, from layer costs × layer counts (no run: a table of rows)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from linbench.report.load import Run
from linbench.report.model_cost import model_cost_tables


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
