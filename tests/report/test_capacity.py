"""The serving capacity table: requests that fit a budget, per decoder, and for a hybrid model's
mix of linear and softmax layers only where the rows were measured at the model's shapes
(synthetic serving decode rows)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from synthetic_runs import decode_series, kimi_tp4_serving_rows, write_run

from linbench.report.capacity import capacity_json, capacity_tables
from linbench.report.load import read_run

BUDGET = 2**30


def _serving(row: dict[str, Any], each: int, **shape: int) -> dict[str, Any]:
    row.update(batch=4, tokens_per_step=2, accepted_per_step=1.5, state_bytes_per_request=each, **shape)
    row.update(memory_budget_bytes=BUDGET, requests_fit=BUDGET // each, tokens_per_s=4 * 1.5 / row["time_ms"] * 1e3)
    return row


def _rows(kda_shape: dict[str, int], cache_shape: dict[str, int], tp: int | None) -> list[dict[str, Any]]:
    (kda,) = decode_series("kda", "recurrent", lambda s: 0.5, lambda s: 65536.0, contexts=(4096,))
    (cache,) = decode_series("softmax", "kvcache", lambda s: 2.0, lambda s: 256.0 * s, contexts=(4096,))
    kda = _serving(kda, 65536, **kda_shape) | {"state_dtype": "bf16", "tp": tp}
    return [kda, _serving(cache, 1 << 20, **cache_shape) | {"tp": tp}]


def _table(tmp_path: Path, rows: list[dict[str, Any]]) -> Any:
    (table,) = capacity_tables(read_run(write_run(tmp_path / "run", rows)))
    return table


def test_the_kimi_linear_mix_at_its_tp4_shapes_gets_the_requests_its_layers_fit(tmp_path: Path) -> None:
    table = _table(tmp_path, kimi_tp4_serving_rows(BUDGET))
    by_label = {row[0]: row for row in table.rows}
    assert by_label["kda:recurrent state bf16 T2 B4"][4] == f"{BUDGET // 65536:,}"
    assert by_label["softmax:kvcache T2 B4"][4] == "1,024"
    hybrid = by_label["kimi-linear-48b TP4 (20:7) kda:recurrent state bf16 T2 B4"]
    held = 20 * 65536 + 7 * (1 << 20)  # 20 KDA layers' states and 7 layers' caches
    assert hybrid[4] == f"{BUDGET // held:,}"
    # Its step: 20 recurrent steps and 7 cache steps; the batch keeps 4 · 1.5 tokens a step.
    assert hybrid[5] == f"{4 * 1.5 / ((20 * 0.5 + 7 * 2.0) / 1e3):,.0f}"
    assert by_label["  all 27 layers softmax:kvcache"][4] == f"{BUDGET // (27 << 20):,}"
    assert "one tensor-parallel rank's shard (TP4" in table.title
    assert "MLA layers measured absorbed" in table.title and "1088 elements a token" in table.title


def test_rows_at_another_shape_make_no_model_rows(tmp_path: Path) -> None:
    """kda and the KV cache at the run's default H8 D64: no model's shape, so no model's rows
    (they once were named kimi-linear-48b (20:7) at a quarter of the model's state)."""
    h8 = {"heads": 8, "kv_heads": 8, "v_heads": 8, "dim_k": 64, "dim_v": 64}
    table = _table(tmp_path, _rows(h8, h8, tp=None))
    assert [row[0] for row in table.rows] == ["kda:recurrent state bf16 T2 B4", "softmax:kvcache T2 B4"]
    assert table.title == "Serving capacity: requests whose state fits the memory budget"


def test_a_preset_run_s_two_layer_shapes_make_its_model_rows(tmp_path: Path) -> None:
    """decode --preset qwen3-next-80b: the Gated DeltaNet rows (16 q/k, 32 v heads) and the cache
    rows (16 q, 2 kv, 256) differ in shape, and pair into the model's rows."""
    (gdn,) = decode_series("gated-deltanet", "recurrent", lambda s: 0.5, lambda s: 0.0, contexts=(4096,))
    (cache,) = decode_series("softmax", "kvcache", lambda s: 2.0, lambda s: 0.0, contexts=(4096,))
    state = 32 * 128 * 128 * 4  # 2 MiB a request: a state per value head
    rows = [
        _serving(gdn, state, heads=16, kv_heads=16, v_heads=32, dim_k=128, dim_v=128) | {"tp": 1},
        _serving(cache, 1 << 20, heads=16, kv_heads=2, v_heads=16, dim_k=256, dim_v=256) | {"tp": 1},
    ]
    by_label = {row[0]: row for row in _table(tmp_path, rows).rows}
    mix = by_label["qwen3-next-80b TP1 (36:12) gated-deltanet:recurrent T2 B4"]
    assert mix[2] == "84.0 MiB"  # 36 × 2 MiB + 12 × 1 MiB


def test_the_json_gives_every_line_as_numbers(tmp_path: Path) -> None:
    run = read_run(write_run(tmp_path / "run", kimi_tp4_serving_rows(BUDGET)))
    lines = json.loads(json.dumps(capacity_json(run)))
    model = next(line for line in lines if line["label"].startswith("kimi-linear-48b"))
    assert model["model"] == "kimi-linear-48b" and model["tp"] == 4
    assert model["state_bytes_per_request"] == 20 * 65536 + 7 * (1 << 20) and model["context"] == 4096


def test_a_run_without_serving_rows_has_no_capacity_table(tmp_path: Path) -> None:
    rows = decode_series("kda", "recurrent", lambda s: 0.5, lambda s: 65536.0, contexts=(4096,))
    assert capacity_tables(read_run(write_run(tmp_path / "run", rows))) == []
