"""A point measured while other processes oversubscribed its worker's threads is kept in
results.csv but left out of fits, crossovers, speedups and the run's summary table, which names
it where it looked faster than what it names (device: cpu; synthetic rows, nothing measured)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from synthetic_runs import series, write_run

from linbench.cli.run_display import _summary_cells, summary_tables
from linbench.report.analysis import analyse
from linbench.report.load import read_run

LINEAR = lambda s: 0.01 * s  # noqa: E731 - formulas read best as one-liners
QUADRATIC = lambda s: 1e-6 * s * s  # noqa: E731


def _rows(scheduler_bound_at: int) -> list[dict]:
    """cosine:chunked linear and softmax:sdpa quadratic (they cross at 10k: chunked faster from
    16k), with chunked's point at ``scheduler_bound_at`` 50x slow and marked oversubscribed, as a
    2-thread pool beside another pool measured it."""
    chunked = series("cosine", "chunked", LINEAR)
    for row in chunked:
        row["oversubscribed"] = row["seq"] == scheduler_bound_at
        if row["oversubscribed"]:
            row.update(time_ms=row["time_ms"] * 50, neighbour_cpu=1.9)
    return chunked + series("softmax", "sdpa", QUADRATIC)


def _analysis(tmp_path: Path, rows: list[dict]) -> dict:
    return analyse(read_run(write_run(tmp_path, rows))).to_json()


def test_an_oversubscribed_point_is_left_out_of_the_fit(tmp_path: Path) -> None:
    report = _analysis(tmp_path, _rows(scheduler_bound_at=4096))
    (fit,) = [f for f in report["fits"] if (f["impl"], f["axis"], f["metric"]) == ("chunked", "seq", "time")]
    # The other four points are exactly linear; the 50x point would have bent the exponent.
    assert fit["exponent"] == pytest.approx(1.0, abs=0.01) and fit["r2"] == pytest.approx(1.0)
    assert fit["points"] == 4


def test_an_oversubscribed_point_moves_no_crossover(tmp_path: Path) -> None:
    # Chunked is faster from 16k; its 16k point measured 50x slow would have put the crossing
    # past the lengths measured and the speedup at 16k below 1.
    (crossing,) = _analysis(tmp_path, _rows(scheduler_bound_at=16384))["crossovers"]
    assert crossing["seq"] is None and crossing["speedup_seq"] == 8192
    (crossing,) = _analysis(tmp_path / "marked", _rows(scheduler_bound_at=8192))["crossovers"]
    assert crossing["seq"] == 16384
    assert crossing["speedup"] == pytest.approx(1e-6 * 16384 / 0.01, rel=1e-3)


def test_the_run_summary_never_names_an_oversubscribed_point_fastest(tmp_path: Path) -> None:
    rows = [row for row in _rows(scheduler_bound_at=16384) if row["seq"] == 16384]
    for row in rows:  # marked, but still the fastest time of the length
        if row["impl"] == "chunked":
            row["time_ms"] = 0.5
    fastest, _, baseline, _, speedup, left_out, not_ok = _summary_cells(rows, {"softmax:sdpa"})
    # No linear impl was judged: none is named fastest, and the baseline is not crowned in its place.
    assert fastest == "-" and baseline == "softmax:sdpa" and speedup == "-"
    assert left_out == "cosine:chunked 0.5 ms oversubscribed" and not_ok == "-"


def _point(impl: str, time_ms: float, oversubscribed: bool) -> dict[str, Any]:
    """A typed results row, as a run's rows read back."""
    variant = "softmax" if impl == "sdpa" else "cosine"
    return {
        "variant": variant,
        "impl": impl,
        "status": "ok",
        "time_ms": time_ms,
        "oversubscribed": oversubscribed,
    }


def test_the_run_summary_names_the_fastest_judged_impl_and_the_faster_points_left_out() -> None:
    # At 2k two linear impls looked faster than SDPA but were oversubscribed; a third was judged.
    rows = [
        _point("chunked", 7.0, True),
        _point("kernel", 6.8, True),
        _point("recurrent", 40.0, False),
        _point("naive", 900.0, True),
        _point("sdpa", 23.0, False),
    ]
    fastest, time_cell, baseline, _, speedup, left_out, not_ok = _summary_cells(rows, {"softmax:sdpa"})
    assert (fastest, time_cell, baseline, speedup) == ("cosine:recurrent", "40 ms", "softmax:sdpa", "0.57x")
    assert left_out == "cosine:chunked 7 ms oversubscribed, cosine:kernel 6.8 ms oversubscribed"
    assert not_ok == "cosine:naive oversubscribed"  # slower than what is named: nobody is misled


def test_the_run_summary_explains_the_points_it_left_out() -> None:
    rows = [
        {
            **row,
            "mode": "fwd",
            "dtype": "fp32",
            "causal": True,
            "batch": 1,
            "heads": 8,
            "dim_k": 64,
            "dim_v": 64,
            "seq": 2048,
        }
        for row in (_point("chunked", 7.0, True), _point("sdpa", 23.0, False))
    ]
    (table,) = summary_tables(rows, [("softmax", "sdpa")])
    assert "faster, left out" in [column.header for column in table.columns]
    assert "oversubscribed their worker's cores" in str(table.caption)
