"""Decode points in the gate: serving decode runs measured in repeated processes are judged
as run points are (synthetic CPU runs: processes.csv from known offsets)."""

from __future__ import annotations

from pathlib import Path

from synthetic_processes import MODERATE, QUIET, planted, write_process_run
from synthetic_runs import decode_series

from linbench.gate.compare import Thresholds, compare_runs
from linbench.report.load import read_run
from linbench.runner.decode_kind import DecodeKind
from linbench.sweep.request import SweepRequest
from linbench.sweep.spec import build_spec

CONTEXTS = (1024, 4096)


def _decode_suite() -> list[dict]:
    """A serving decode suite: a recurrent decoder at T 1 and 4, its state in fp32 and bf16,
    beside a KV cache; each row's processes spread as a busy CPU spreads them."""
    rows = []
    for steps in (1, 4):
        for state in ("fp32", "bf16"):
            recurrent = decode_series(
                "gated-deltanet", "recurrent", lambda s, t=steps: 0.3 * t, lambda s: 131072.0, contexts=CONTEXTS
            )
            for row in recurrent:
                row.update(tokens_per_step=steps, state_dtype=state, accepted_per_step=float(steps), pool=1)
            rows += recurrent
        cache = decode_series(
            "softmax", "kvcache", lambda s, t=steps: 1e-4 * s * t, lambda s: 256.0 * s, contexts=CONTEXTS
        )
        for row in cache:
            row.update(tokens_per_step=steps, accepted_per_step=float(steps), pool=1)
        rows += cache
    return rows


def _compare(tmp_path: Path, base: list[dict], cur: list[dict]):
    offsets = lambda row: MODERATE if row["impl"] == "kvcache" else QUIET  # noqa: E731
    baseline = write_process_run(tmp_path / "base", base, offsets)
    current = write_process_run(tmp_path / "cur", cur, offsets)
    return compare_runs(read_run(baseline), read_run(current), Thresholds())


def test_two_decode_runs_of_unchanged_code_never_compare_as_a_regression(tmp_path: Path) -> None:
    comparison = _compare(tmp_path, _decode_suite(), _decode_suite())
    assert not comparison.failed and comparison.verdict in ("pass", "inconclusive")
    # Each tokens-per-step and state dtype is a point of its own, matched with its twin.
    assert len(comparison.points) == len(_decode_suite())
    keys = {(p.key["impl"], p.key["tokens_per_step"], p.key["state_dtype"]) for p in comparison.points}
    assert ("recurrent", 4, "bf16") in keys


def test_a_planted_slower_decode_point_is_caught(tmp_path: Path) -> None:
    rows = _decode_suite()
    index = next(n for n, row in enumerate(rows) if row.get("state_dtype") == "bf16" and row["tokens_per_step"] == 4)
    comparison = _compare(tmp_path, rows, planted(rows, index, time_ms=1.3))
    assert comparison.failed
    (caught,) = comparison.regressions
    assert (caught.key["tokens_per_step"], caught.key["state_dtype"], caught.time_verdict) == (4, "bf16", "regression")


def test_decode_points_take_repeated_processes_as_run_points_do() -> None:
    spec = build_spec(SweepRequest(command="decode", processes=5, max_processes=20))
    protocol = DecodeKind().protocol(spec)
    assert (protocol.wanted, protocol.most) == (5, 20)
    assert DecodeKind().protocol(build_spec(SweepRequest(command="decode"))).wanted == 1
