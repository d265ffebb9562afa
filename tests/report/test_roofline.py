"""Achieved bandwidth and FLOP rate against a run's ceilings, on synthetic rows."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from result_rows import result_row
from synthetic_runs import write_run

from linbench.report.load import read_run
from linbench.report.roofline import minimal_bytes, roofline_json, roofline_rows, roofline_tables, run_ceilings
from linbench.results.store import RunStore
from linbench.shape import Shape

CEILINGS = {"device": "cpu", "copy_gb_per_s": 10.0, "matmul_tflops": {"fp32": 2.0}}


def frame(*rows: dict) -> pd.DataFrame:
    return pd.DataFrame(list(rows))


def row(seq: int = 1024, time_ms: float | None = 1.0, tflops: float | None = 1.0, **changes) -> dict:
    out = result_row(seq, time_ms=time_ms)  # cosine chunked fwd fp32, B1 H8 D64
    out.update(tflops=tflops, **changes)
    return out


def test_minimal_bytes_per_mode() -> None:
    # fwd: q, k, v read and out written: B·H·S·(2·Dk + 2·Dv) elements.
    assert minimal_bytes("fwd", Shape(1, 8, 1024, 64, 64), "fp32") == 8 * 1024 * 256 * 4
    # bwd: q, k, v, dO read, dq, dk, dv written: 4·Dk + 3·Dv.
    assert minimal_bytes("bwd", Shape(2, 4, 100, 32, 16), "bf16") == 2 * 4 * 100 * (4 * 32 + 3 * 16) * 2
    # fwdbwd: both passes: 6·Dk + 5·Dv.
    assert minimal_bytes("fwdbwd", Shape(1, 1, 10, 8, 4), "fp16") == 10 * (6 * 8 + 5 * 4) * 2
    one = Shape(1, 1, 10, 8, 8)
    assert minimal_bytes("fwdbwd", one, "fp32") == minimal_bytes("fwd", one, "fp32") + minimal_bytes("bwd", one, "fp32")
    assert minimal_bytes("decode", one, "fp32") is None


def test_a_grouped_row_counts_each_tensor_at_its_own_heads() -> None:
    """By hand, fp32, B1 S100 Dk = Dv = 64. Grouped-query, 16 q heads and 2 key/value heads, fwd:
    q 16 + k 2 + v 2 + out 16 heads. GVA, 16 q/k heads and 32 value heads, bwd: q and dq 16 + 16,
    k and dk 16 + 16, v and dv 32 + 32, dO 32."""
    gqa = Shape(1, 16, 100, 64, 64, kv_heads=2)
    assert minimal_bytes("fwd", gqa, "fp32") == 100 * 64 * (16 + 2 + 2 + 16) * 4
    gva = Shape(1, 16, 100, 64, 64, v_heads=32)
    assert minimal_bytes("bwd", gva, "fp32") == 100 * 64 * (32 + 32 + 64 + 32) * 4
    # The count these rows were given before: every tensor at the value heads (the output's).
    assert minimal_bytes("fwd", Shape(1, 16, 100, 64, 64), "fp32") / minimal_bytes("fwd", gqa, "fp32") == 64 / 36
    assert minimal_bytes("bwd", Shape(1, 32, 100, 64, 64), "fp32") / minimal_bytes("bwd", gva, "fp32") == 224 / 160


def test_an_older_run_s_recorded_bytes_of_a_grouped_row_are_corrected() -> None:
    """A run before schema 14 recorded q, k, v and the output of a grouped row at the value heads;
    its gates' bytes (at the value heads then as now) stay as they were recorded."""
    gates = 1234
    old = 16 * 100 * (2 * 64 + 2 * 64) * 4 + gates
    grouped = row(seq=100, heads=16, kv_heads=2, v_heads=16, dim_k=64, dim_v=64, bytes=old)
    (record,) = roofline_rows(frame(grouped), CEILINGS, schema_version=11)
    assert record["bytes"] == 100 * 64 * (16 + 2 + 2 + 16) * 4 + gates
    (current,) = roofline_rows(frame(grouped), CEILINGS, schema_version=14)
    assert current["bytes"] == old


def test_fractions_of_the_ceilings() -> None:
    (record,) = roofline_rows(frame(row()), CEILINGS)
    nbytes = 8 * 1024 * 256 * 4  # 8.39 MB in 1 ms: 8.39 GB/s
    assert record["bytes"] == nbytes
    assert record["gb_per_s"] == pytest.approx(nbytes / 1e6)
    assert record["bandwidth_fraction"] == pytest.approx(nbytes / 1e6 / 10.0)
    assert record["flops_fraction"] == pytest.approx(0.5)  # 1 of 2 TFLOP/s
    # 1e9 FLOPs over 8.39 MB: 119 FLOP/byte, below the balance of 2e12 / 1e10 = 200.
    assert record["intensity"] == pytest.approx(1e9 / nbytes)
    assert record["bound"] == "memory"
    assert record["roofline_fraction"] == pytest.approx(record["bandwidth_fraction"])
    (compute,) = roofline_rows(frame(row(time_ms=10.0, tflops=1.0)), CEILINGS)  # 1e10 FLOPs: 1192 FLOP/byte
    assert compute["bound"] == "compute" and compute["roofline_fraction"] == pytest.approx(0.5)


def test_a_point_far_under_both_ceilings_is_bound_by_neither() -> None:
    # 1e9 FLOPs in 1 s: 0.001 TFLOP/s is 0.05% of matmul; 8.39 MB/s is 0.08% of copy.
    (record,) = roofline_rows(frame(row(time_ms=1000.0, tflops=0.001)), CEILINGS)
    assert record["roof"] == "memory" and record["roofline_fraction"] < 0.01
    assert record["bound"] == "neither"
    # The memory roof here is 1e9 FLOPs / 8.39 MB x 10 GB/s = 1.19 TFLOP/s: 0.2 reaches 17% of it, 0.1 8.4%.
    (near,) = roofline_rows(frame(row(time_ms=5.0, tflops=0.2)), CEILINGS)
    (under,) = roofline_rows(frame(row(time_ms=10.0, tflops=0.1)), CEILINGS)
    assert near["roofline_fraction"] == pytest.approx(0.168, abs=1e-3) and near["bound"] == "memory"
    assert under["roofline_fraction"] == pytest.approx(0.084, abs=1e-3) and under["bound"] == "neither"


def test_the_roofline_table_says_why_a_point_is_bound_by_neither(tmp_path: Path) -> None:
    folder = write_run(tmp_path, [row(time_ms=1000.0, tflops=0.001)])
    store = RunStore(folder)
    store.write_meta(store.read_meta() | {"ceilings": CEILINGS})
    (table,) = roofline_tables(read_run(folder))
    assert table.rows[0][-1] == "neither"
    assert "bound neither: under 10% of the ceiling that would limit it" in table.title


def test_rows_without_a_model_a_time_or_a_ceiling() -> None:
    rows = frame(
        row(seq=512, status="oom", time_ms=None, tflops=None),
        row(seq=2048, mode="decode", tflops=None),
        row(seq=1024, dtype="bf16"),  # no bf16 matmul ceiling: bandwidth only
    )
    (record,) = roofline_rows(rows, CEILINGS)
    assert record["dtype"] == "bf16" and record["bytes"] == 8 * 1024 * 256 * 2
    assert record["flops_fraction"] is None and record["bound"] is None
    assert record["bandwidth_fraction"] > 0


@pytest.mark.parametrize(
    "meta",
    [{}, {"ceilings": {"error": "RuntimeError: no"}}, {"ceilings": {"copy_gb_per_s": 0}}, {"ceilings": "garbage"}],
)
def test_runs_without_usable_ceilings_have_no_roofline(meta: dict) -> None:
    assert run_ceilings(meta) is None


def test_a_run_with_ceilings_gets_a_table_of_its_longest_points(tmp_path: Path) -> None:
    rows = [row(seq=s, time_ms=s / 1024) for s in (1024, 2048, 4096)]
    rows += [row(seq=s, impl="sdpa", time_ms=(s / 1024) ** 2) | {"variant": "softmax"} for s in (1024, 2048)]
    folder = write_run(tmp_path, rows)
    bare = read_run(folder)
    assert roofline_tables(bare) == [] and roofline_json([bare]) == []
    store = RunStore(folder)
    store.write_meta(store.read_meta() | {"ceilings": CEILINGS})
    run = read_run(folder)
    (table,) = roofline_tables(run)
    assert [r[0] for r in table.rows] == ["cosine:chunked", "softmax:sdpa"]
    assert [r[3] for r in table.rows] == ["B1 H8 S4k D64", "B1 H8 S2k D64"]
    assert "of copy" in table.columns and "of matmul" in table.columns
    records = roofline_json([run])
    assert len(records) == 5 and {r["run"] for r in records} == {folder.name}


def test_a_rate_past_its_ceiling_is_marked_as_a_ceiling_measured_low(tmp_path: Path) -> None:
    """17x the matmul rate cannot be the point's speed: the ceiling was measured on a busy machine."""
    (fast,) = roofline_rows(frame(row(tflops=34.0)), CEILINGS)
    (plain,) = roofline_rows(frame(row()), CEILINGS)
    assert fast["above_ceiling"] is True and plain["above_ceiling"] is False
    folder = write_run(tmp_path, [row(tflops=34.0)])
    store = RunStore(folder)
    store.write_meta(store.read_meta() | {"ceilings": CEILINGS})
    (table,) = roofline_tables(read_run(folder))
    assert table.rows[0][8] == "1,700% *"
    assert "* past its ceiling: the ceiling was measured low" in table.title


def test_rates_within_their_ceilings_carry_no_mark(tmp_path: Path) -> None:
    folder = write_run(tmp_path, [row()])
    store = RunStore(folder)
    store.write_meta(store.read_meta() | {"ceilings": CEILINGS})
    (table,) = roofline_tables(read_run(folder))
    assert table.rows[0][8] == "50%" and "past its ceiling" not in table.title
