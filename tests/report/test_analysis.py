"""Exponents, crossovers, speedups and reach, computed from runs with known answers."""

from __future__ import annotations

from pathlib import Path

import pytest
from synthetic_runs import failed, series, write_run

from linbench.report.analysis import analyse
from linbench.report.load import read_run

LINEAR = lambda s: 0.01 * s  # noqa: E731 - formulas read best as one-liners
QUADRATIC = lambda s: 1e-6 * s * s  # noqa: E731


def _analysis(tmp_path: Path, rows: list[dict]) -> dict:
    return analyse(read_run(write_run(tmp_path, rows, baselines=["softmax:naive", "softmax:sdpa"]))).to_json()


def _fit(report: dict, impl: str, axis: str = "seq", metric: str = "time") -> dict:
    (found,) = [f for f in report["fits"] if (f["impl"], f["axis"], f["metric"]) == (impl, axis, metric)]
    return found


def test_fits_recover_the_exponents_of_time_and_memory_in_length(tmp_path: Path) -> None:
    rows = series("cosine", "chunked", LINEAR, peak_bytes=lambda s: 4096.0 * s)
    rows += series("softmax", "sdpa", QUADRATIC, peak_bytes=lambda s: 8.0 * s * s)
    report = _analysis(tmp_path, rows)
    assert _fit(report, "chunked")["exponent"] == pytest.approx(1.0, abs=0.05)
    assert _fit(report, "sdpa")["exponent"] == pytest.approx(2.0, abs=0.05)
    assert _fit(report, "chunked", metric="memory")["exponent"] == pytest.approx(1.0, abs=0.05)
    assert _fit(report, "sdpa", metric="memory")["exponent"] == pytest.approx(2.0, abs=0.05)
    assert _fit(report, "sdpa")["r2"] == pytest.approx(1.0)
    assert {"variant", "impl", "mode", "axis", "metric", "exponent", "r2"} <= set(_fit(report, "sdpa"))


def test_fits_in_head_dim_are_made_where_the_run_swept_it(tmp_path: Path) -> None:
    rows = []
    for dim in (32, 64, 128):
        rows += series("cosine", "chunked", lambda s, d=dim: 1e-5 * s * d * d, seqs=(4096,), dim_k=dim, dim_v=dim)
    report = _analysis(tmp_path, rows)
    fit = _fit(report, "chunked", axis="dim")
    assert fit["exponent"] == pytest.approx(2.0, abs=0.05)
    assert fit["seq"] == 4096 and fit["x_min"] == 32 and fit["x_max"] == 128


def test_the_crossover_is_where_the_linear_impl_starts_to_stay_faster(tmp_path: Path) -> None:
    # 0.01·s against 1e-6·s²: equal at s = 10k, so faster from 16k of these lengths on.
    rows = series("cosine", "chunked", LINEAR) + series("softmax", "sdpa", QUADRATIC)
    rows += series("softmax", "naive", lambda s: 3e-6 * s * s)
    (crossing,) = _analysis(tmp_path, rows)["crossovers"]
    assert crossing["seq"] == 16384 and not crossing["at_shortest"]
    assert crossing["baseline"] == "softmax:sdpa"  # the faster of the two softmax impls
    assert crossing["speedup"] == pytest.approx(1e-6 * 16384 / 0.01, rel=1e-3)
    assert crossing["speedup_seq"] == 16384


def test_an_impl_that_never_overtakes_has_no_crossover(tmp_path: Path) -> None:
    rows = series("cosine", "quadratic", lambda s: 2e-6 * s * s) + series("softmax", "sdpa", QUADRATIC)
    (crossing,) = _analysis(tmp_path, rows)["crossovers"]
    assert crossing["seq"] is None and crossing["speedup"] == pytest.approx(0.5, rel=1e-3)


def test_reach_names_the_longest_ok_length_and_what_stopped_the_impl(tmp_path: Path) -> None:
    rows = series("softmax", "naive", QUADRATIC, seqs=(1024, 2048, 4096))
    rows += [failed("softmax", "naive", 8192, "oom"), failed("softmax", "naive", 16384, "skipped")]
    rows += series("cosine", "chunked", LINEAR)
    reach = {r["impl"]: r for r in _analysis(tmp_path, rows)["max_seq"]}
    assert (reach["naive"]["max_seq"], reach["naive"]["stopped_by"], reach["naive"]["stopped_at"]) == (
        4096,
        "oom",
        8192,
    )
    assert (reach["chunked"]["max_seq"], reach["chunked"]["stopped_by"]) == (16384, None)


def test_non_ok_points_never_enter_a_fit(tmp_path: Path) -> None:
    rows = series("cosine", "chunked", LINEAR, seqs=(1024, 2048, 4096))
    rows.append({**failed("cosine", "chunked", 8192, "mismatch"), "time_ms": 1e-3})
    fit = _fit(_analysis(tmp_path, rows), "chunked")
    assert fit["x_max"] == 4096 and fit["exponent"] == pytest.approx(1.0, abs=0.05)


def test_without_a_recorded_baseline_list_every_softmax_impl_is_a_baseline(tmp_path: Path) -> None:
    from linbench.report.series import baseline_names

    rows = series("cosine", "chunked", LINEAR) + series("softmax", "sdpa", QUADRATIC)
    run = read_run(write_run(tmp_path, rows))
    assert baseline_names(run.results, {}) == {"softmax:sdpa"}


def test_decode_runs_fit_time_per_token_state_and_step_peak_in_context(tmp_path: Path) -> None:
    from synthetic_runs import decode_series

    rows = decode_series("cosine", "recurrent", lambda c: 0.05, lambda c: 131072.0)
    rows += decode_series("softmax", "kvcache", lambda c: 1e-4 * c, lambda c: 4096.0 * c)
    rows += decode_series("softmax", "recompute", lambda c: 1e-6 * c * c, lambda c: 6144.0 * c, lambda c: 32.0 * c * c)
    report = analyse(read_run(write_run(tmp_path, rows, ["softmax:kvcache", "softmax:recompute"]))).to_json()
    exponents = {(f["impl"], f["metric"]): f["exponent"] for f in report["fits"]}
    assert exponents[("recurrent", "time")] == pytest.approx(0.0, abs=1e-6)
    assert exponents[("recurrent", "state")] == pytest.approx(0.0, abs=1e-6)
    assert exponents[("kvcache", "time")] == pytest.approx(1.0, abs=0.01)
    assert exponents[("kvcache", "state")] == pytest.approx(1.0, abs=0.01)
    assert exponents[("recompute", "memory")] == pytest.approx(2.0, abs=0.01)
    assert {f["mode"] for f in report["fits"]} == {"decode"}
    (crossing,) = report["crossovers"]  # 0.05 ms against 1e-4·c ms: equal at c = 500
    assert (crossing["impl"], crossing["seq"], crossing["at_shortest"]) == ("recurrent", 1024, True)
    assert crossing["baseline"] == "softmax:kvcache"


def test_the_speedup_names_the_fastest_baseline_at_its_own_length(tmp_path: Path) -> None:
    # softmax:naive is the fastest softmax at 1k, softmax:sdpa from 2k: the crossover (at the
    # shortest length) is against naive, the speedup at 16k against sdpa, and must say so.
    rows = series("cosine", "chunked", lambda s: 1e-4 * s)
    rows += series("softmax", "naive", lambda s: 0.2 if s == 1024 else 1e-6 * s * s * 100)
    rows += series("softmax", "sdpa", lambda s: 1e-6 * s * s)
    (crossing,) = _analysis(tmp_path, rows)["crossovers"]
    assert (crossing["seq"], crossing["at_shortest"], crossing["baseline"]) == (1024, True, "softmax:naive")
    assert (crossing["speedup_baseline"], crossing["speedup_seq"]) == ("softmax:sdpa", 16384)
    assert crossing["speedup"] == pytest.approx(1e-6 * 16384 / 1e-4, rel=1e-3)


def test_a_decode_speedup_is_against_a_decoder_that_reached_that_context(tmp_path: Path) -> None:
    from synthetic_runs import decode_series

    # As on the GPU: recompute is the fastest softmax decoder at short contexts and stops at
    # 16k; the KV cache goes on to 1m. The speedup at 1m is against the KV cache.
    rows = decode_series("cosine", "recurrent", lambda c: 0.3, lambda c: 131072.0)
    rows += decode_series("softmax", "kvcache", lambda c: 40.0, lambda c: 2048.0 * c)
    rows += decode_series("softmax", "recompute", lambda c: 3e-4 * c, lambda c: 3072.0 * c, contexts=(1024, 4096))
    rows += [{**failed("softmax", "recompute", 16384, "oom"), "mode": "decode"}]
    report = analyse(read_run(write_run(tmp_path, rows, ["softmax:kvcache", "softmax:recompute"]))).to_json()
    (crossing,) = report["crossovers"]
    assert (crossing["seq"], crossing["baseline"]) == (1024, "softmax:recompute")
    assert (crossing["speedup_baseline"], crossing["speedup_seq"]) == ("softmax:kvcache", 1024**2)
    assert crossing["speedup"] == pytest.approx(40.0 / 0.3, rel=1e-3)


def _launch_bound(s: int) -> float:
    """A GPU kernel at a small batch: 0.6 ms of launches up to 8k, then linear."""
    return max(0.6, 0.6 * s / 8192)


def test_a_launch_bound_start_is_left_out_and_the_law_is_fitted_from_where_it_starts(tmp_path: Path) -> None:
    from linbench.report.render import report_tables

    seqs = tuple(1024 * 2**n for n in range(7))  # 1k .. 64k
    rows = series("cosine", "kernel", _launch_bound, seqs=seqs)
    rows += series("softmax", "sdpa", lambda s: 2e-8 * s * s, seqs=seqs)
    run = read_run(write_run(tmp_path, rows))
    report = analyse(run).to_json()
    fit = _fit(report, "kernel")
    assert (fit["law"], fit["x_min"], fit["x_max"], fit["left_out"]) == ("power", 8192, 65536, 3)
    assert fit["exponent"] == pytest.approx(1.0, abs=1e-3)
    (table,) = report_tables(analyse(run))
    assert table.rows[0][1] == "s^1.00 (R² 1.000, 4 points, 8k–64k)"


def test_no_power_law_is_said_in_the_json_the_table_and_the_legend(tmp_path: Path) -> None:
    from linbench.report.plot import draw
    from linbench.report.plot_parts import metrics
    from linbench.report.render import report_tables
    from linbench.report.series import scenarios

    seqs = tuple(1024 * 2**n for n in range(7))
    zigzag = lambda s: 1.0 if s in (1024, 4096, 16384, 65536) else 8.0  # noqa: E731
    rows = series("cosine", "kernel", zigzag, seqs=seqs, peak_bytes=lambda s: 1e6)  # memory: flat
    rows += series("cosine", "chunked", LINEAR, seqs=(1024, 2048))
    rows += series("softmax", "sdpa", lambda s: 2e-8 * s * s, seqs=seqs)
    run = read_run(write_run(tmp_path, rows))
    analysis = analyse(run)
    report = analysis.to_json()
    assert (_fit(report, "kernel")["law"], _fit(report, "kernel")["exponent"]) == ("none", None)
    assert (_fit(report, "kernel", metric="memory")["law"], _fit(report, "kernel", metric="memory")["exponent"]) == (
        "flat",
        0.0,
    )
    assert _fit(report, "chunked")["law"] == "two_points"
    (table,) = report_tables(analysis)
    cells = {row[0]: row[1:3] for row in table.rows}
    assert cells["cosine:kernel"] == ["no power law found (7 points, 1k–64k)", "flat (s^0.00, 7 points, 1k–64k)"]
    assert cells["cosine:chunked"][0] == "s^1.00 (2 points only, 1k–2k)"
    ((scenario, scenario_rows),) = scenarios(run.results, "seq")
    ax = draw(scenario_rows, scenario, metrics("cpu")["time"], analysis).axes[0]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "cosine:kernel  no power law found (7 points)" in legend
    assert any(text.startswith("cosine:chunked") and "(2 points only)" in text for text in legend)


def test_the_crossover_is_against_the_fastest_sdpa_backend_at_each_length(tmp_path: Path) -> None:
    # cuDNN is faster than flash at 16k, flash at every shorter length: each length is judged
    # against its own fastest backend, and the speedup is named after cuDNN.
    rows = series("cosine", "chunked", LINEAR) + series("softmax", "sdpa-flash", QUADRATIC)
    rows += series("softmax", "sdpa-cudnn", lambda s: 0.5e-6 * s * s if s == 16384 else 2e-6 * s * s)
    run = read_run(write_run(tmp_path, rows, baselines=["softmax:sdpa-flash", "softmax:sdpa-cudnn"]))
    (crossing,) = analyse(run).to_json()["crossovers"]
    assert crossing["seq"] is None  # 0.01·16k = 164 ms against cuDNN's 134 ms: never faster at the end
    assert crossing["speedup_baseline"] == "softmax:sdpa-cudnn"
    assert crossing["speedup"] == pytest.approx(0.5e-6 * 16384 / 0.01, rel=1e-3)


def test_compare_to_gives_every_impl_its_speedup_over_the_named_one_at_each_length(tmp_path: Path) -> None:
    rows = series("cosine", "chunked", LINEAR) + series("cosine", "fla", lambda s: 0.0025 * s)
    rows += series("softmax", "sdpa", QUADRATIC, seqs=(1024, 2048))
    run = read_run(write_run(tmp_path, rows))
    record = analyse(run, compare_to="cosine:fla").to_json()
    speedups = {(s["impl"], s["seq"]): s["speedup"] for s in record["compare_to"]}
    assert speedups[("chunked", 4096)] == pytest.approx(0.25)
    assert speedups[("sdpa", 2048)] == pytest.approx(0.0025 / (1e-6 * 2048), rel=1e-3)
    assert speedups[("sdpa", 4096)] is None  # softmax did not run there
    assert all(s["against"] == "cosine:fla" for s in record["compare_to"])


def test_without_compare_to_the_json_has_no_such_section(tmp_path: Path) -> None:
    run = read_run(write_run(tmp_path, series("cosine", "chunked", LINEAR)))
    assert "compare_to" not in analyse(run).to_json()
