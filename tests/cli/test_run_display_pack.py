"""The closing tables of a pack run say which way each shape ran: packed (1 × T) or padded
(N × L_max); no device is needed."""

from __future__ import annotations

from typing import Any

from linbench.cli.run_display import summary_tables


def _row(batch: int, seq: int, packing: str | None) -> dict[str, Any]:
    row = {"variant": "cosine", "impl": "chunked", "mode": "fwd", "dtype": "fp32", "causal": "True"}
    row |= {"batch": batch, "heads": 2, "seq": seq, "dim_k": 8, "dim_v": 8, "status": "ok", "time_ms": "1.0"}
    return row | ({"packing": packing, "sequences": 4} if packing else {})


def test_a_pack_run_s_tables_say_packed_or_padded() -> None:
    titles = [str(table.title) for table in summary_tables([_row(1, 64, "packed"), _row(4, 32, "padded")], [])]
    assert titles[0].endswith("  packed")
    assert titles[1].endswith("  padded (4 sequences to the longest)")


def test_a_pack_of_one_sequence_keeps_its_two_ways_apart() -> None:
    """Packed and padded have the same shape there: one table each, not one for both."""
    assert len(summary_tables([_row(1, 64, "packed"), _row(1, 64, "padded")], [])) == 2


def test_another_run_s_tables_say_nothing_of_packing() -> None:
    (table,) = summary_tables([_row(1, 64, None)], [])
    assert str(table.title).endswith("Dv=8")
