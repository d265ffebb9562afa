"""A run --tokens sweep (batch = tokens / seq) is one curve per impl in report and plot."""

from __future__ import annotations

import json
from pathlib import Path

from synthetic_runs import SEQS, series, write_run

from linbench.report.analysis import analyse
from linbench.report.load import read_run, token_budget

BUDGET = 64 * 1024


def _token_run(folder: Path, command: str = "run") -> Path:
    rows = []
    for impl, exponent in (("chunked", 1.0), ("sdpa", 2.0)):
        variant = "cosine" if impl == "chunked" else "softmax"
        for row in series(variant, impl, lambda s, e=exponent: (s / 1024) ** e):
            rows.append(row | {"batch": BUDGET // row["seq"]})
    path = write_run(folder, rows)
    meta = json.loads((path / "meta.json").read_text())
    meta["sweep"] |= {"command": command, "settings": {"tokens": "64k"}}
    (path / "meta.json").write_text(json.dumps(meta))
    return path


def test_a_token_budget_run_is_one_scenario_fitted_over_every_length(tmp_path: Path) -> None:
    run = read_run(_token_run(tmp_path / "tokens"))
    assert token_budget(run.meta) == BUDGET
    assert set(run.results["tokens"]) == {BUDGET}
    analysis = analyse(run)
    fits = {f.impl: f for f in analysis.fits if f.metric == "time" and f.axis == "seq"}
    assert set(fits) == {"chunked", "sdpa"}
    assert abs(fits["chunked"].exponent - 1.0) < 0.05 and abs(fits["sdpa"].exponent - 2.0) < 0.05
    assert fits["chunked"].points == len(SEQS)
    (scenario,) = {f.scenario for f in fits.values()}
    assert "tokens=64k" in scenario.label() and "_T64k_" in scenario.slug()


def test_decode_s_tokens_setting_is_not_a_budget(tmp_path: Path) -> None:
    run = read_run(_token_run(tmp_path / "decode", command="decode"))
    assert token_budget(run.meta) is None and "tokens" not in run.results.columns
