"""The serving capacity table: requests that fit a budget, per decoder and for a hybrid's mix
of linear and softmax layers (synthetic serving decode rows)."""

from __future__ import annotations

from pathlib import Path

from synthetic_runs import decode_series, write_run

from linbench.report.capacity import capacity_tables
from linbench.report.load import read_run

BUDGET = 2**30


def _rows() -> list[dict]:
    kda = decode_series("kda", "recurrent", lambda s: 0.5, lambda s: 65536.0, contexts=(4096,))
    cache = decode_series("softmax", "kvcache", lambda s: 2.0, lambda s: 256.0 * s, contexts=(4096,))
    for row, each in ((kda[0], 65536), (cache[0], 1 << 20)):
        row.update(batch=4, tokens_per_step=2, accepted_per_step=1.5, state_bytes_per_request=each)
        row.update(memory_budget_bytes=BUDGET, requests_fit=BUDGET // each, tokens_per_s=4 * 1.5 / row["time_ms"] * 1e3)
    kda[0]["state_dtype"] = "bf16"
    return kda + cache


def test_each_decoder_and_the_kimi_linear_mix_get_the_requests_their_state_fits(tmp_path: Path) -> None:
    (table,) = capacity_tables(read_run(write_run(tmp_path / "run", _rows())).results)
    by_label = {row[0]: row for row in table.rows}
    assert by_label["kda:recurrent state bf16 T2 B4"][4] == f"{BUDGET // 65536:,}"
    assert by_label["softmax:kvcache T2 B4"][4] == "1,024"
    hybrid = by_label["kimi-linear-48b (20:7) kda:recurrent state bf16 T2 B4"]
    held = 20 * 65536 + 7 * (1 << 20)  # 20 KDA layers' states and 7 layers' caches
    assert hybrid[4] == f"{BUDGET // held:,}"
    # Its step: 20 recurrent steps and 7 cache steps; the batch keeps 4 · 1.5 tokens a step.
    assert hybrid[5] == f"{4 * 1.5 / ((20 * 0.5 + 7 * 2.0) / 1e3):,.0f}"
    softmax = by_label["  all 27 layers softmax:kvcache"]
    assert softmax[4] == f"{BUDGET // (27 << 20):,}"


def test_a_run_without_serving_rows_has_no_capacity_table(tmp_path: Path) -> None:
    rows = decode_series("kda", "recurrent", lambda s: 0.5, lambda s: 65536.0, contexts=(4096,))
    assert capacity_tables(read_run(write_run(tmp_path / "run", rows)).results) == []
