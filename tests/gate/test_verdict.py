"""A comparison's verdict as a whole (CPU, synthetic runs): pass only when every point with a
time on both sides was judged; inconclusive when some time was not (noisy, unverified), the
runs did not measure the same things, the current run lacks a point of the baseline, a count is
on one side only, or nothing was judged; a regression wins over all, and inconclusive over an
environment change."""

from __future__ import annotations

from pathlib import Path

from synthetic_processes import NOISY, QUIET, planted, write_process_run
from synthetic_runs import failed, scaled, series, write_run

from linbench.gate.advice import judging_lines
from linbench.gate.compare import Thresholds, compare_runs
from linbench.gate.render import verdict_line
from linbench.report.load import read_run

LINEAR = lambda s: 0.01 * s  # noqa: E731
SEQS = (1024, 2048, 4096)


def _rows(variant: str = "cosine", impl: str = "chunked", seqs: tuple[int, ...] = SEQS) -> list[dict]:
    return series(variant, impl, LINEAR, seqs=seqs)


def _compare(tmp_path: Path, base: list[dict], cur: list[dict], offsets=QUIET, thresholds: Thresholds | None = None):
    baseline = read_run(write_process_run(tmp_path / "base", base, offsets))
    current = read_run(write_process_run(tmp_path / "cur", cur, offsets))
    return compare_runs(baseline, current, thresholds or Thresholds())


def test_every_point_judged_and_none_regressed_passes(tmp_path: Path) -> None:
    comparison = _compare(tmp_path, _rows(), _rows())
    assert comparison.verdict == "pass" and not comparison.unjudged and not comparison.inconclusive


def test_time_that_could_not_be_judged_is_inconclusive_not_a_pass(tmp_path: Path) -> None:
    rows = _rows()
    noisy = _compare(tmp_path / "noisy", rows, scaled(rows, time=1.3), NOISY)
    assert noisy.verdict == "inconclusive" and not noisy.failed
    assert [p.time_verdict for p in noisy.unjudged] == ["noisy"] * 3
    unverified = compare_runs(
        read_run(write_run(tmp_path / "b1", rows)),
        read_run(write_run(tmp_path / "c1", scaled(rows, time=1.3))),
        Thresholds(),
    )
    assert unverified.verdict == "inconclusive" and len(unverified.unjudged) == 3


def test_one_unjudged_point_among_judged_ones_is_enough(tmp_path: Path) -> None:
    rows = _rows()
    offsets = lambda row: NOISY if row["seq"] == 2048 else QUIET  # noqa: E731
    comparison = _compare(tmp_path, rows, rows, offsets)
    assert comparison.verdict == "inconclusive"
    assert [p.key["seq"] for p in comparison.unjudged] == [2048]


def test_a_regression_wins_over_unjudged_points(tmp_path: Path) -> None:
    rows = _rows()
    offsets = lambda row: NOISY if row["seq"] == 2048 else QUIET  # noqa: E731
    comparison = _compare(tmp_path, rows, planted(rows, 0, time_ms=1.3), offsets)
    assert comparison.verdict == "regression" and comparison.unjudged


def test_inconclusive_wins_over_an_environment_change(tmp_path: Path) -> None:
    rows = _rows() + _rows("softmax", "sdpa")
    offsets = lambda row: NOISY if row["impl"] == "chunked" else QUIET  # noqa: E731
    controls = Thresholds(controls=("softmax:sdpa",))
    comparison = _compare(tmp_path, rows, scaled(rows, time=1.10), offsets, controls)
    assert comparison.environment_changed and comparison.verdict == "inconclusive"


def test_runs_of_different_impls_are_inconclusive_however_well_their_common_points_agree(tmp_path: Path) -> None:
    base = _rows() + _rows("softmax", "sdpa", seqs=(1024,))
    cur = _rows() + _rows("heinsen", "chunked", seqs=(1024,))  # 3 points shared, 2 not
    comparison = _compare(tmp_path, base, cur)
    assert {p.time_verdict for p in comparison.points} == {"same"}
    assert comparison.verdict == "inconclusive" and comparison.covered().impls_differ
    (reason,) = comparison.covered().reasons()
    assert "only in the baseline: softmax:sdpa; only in current: heinsen:chunked" in reason


def test_runs_that_share_few_of_their_points_are_inconclusive(tmp_path: Path) -> None:
    seqs = tuple(1024 * 2**n for n in range(6))
    comparison = _compare(tmp_path, _rows(seqs=seqs[:4]), _rows(seqs=seqs[2:]))  # 2 shared, 4 not
    assert comparison.verdict == "inconclusive" and comparison.covered().mostly_unmatched
    assert "4 of 6 points are in one run only" in comparison.covered().reasons()[0]


def test_a_few_points_in_one_run_only_still_pass(tmp_path: Path) -> None:
    comparison = _compare(tmp_path, _rows(), _rows(seqs=(*SEQS, 8192)))  # a length added: 3 shared, 1 new
    assert comparison.verdict == "pass" and comparison.current_only and not comparison.covered().mismatched


def test_a_point_three_times_slower_among_points_that_scattered_as_far_is_not_gross(tmp_path: Path) -> None:
    """One process a side on a machine whose steady processes land 10x apart (a busy CPU whose
    worker threads contend): the comparison's own points show that 3x is within its noise."""
    seqs = tuple(1024 * n for n in range(1, 7))
    rows = _rows(seqs=seqs)
    scattered = rows
    for index, factor in enumerate((3.0, 0.3, 10.0, 0.1, 1.0, 2.0)):
        scattered = planted(scattered, index, time_ms=factor, time_ms_p20=factor, time_ms_p80=factor)
    comparison = compare_runs(
        read_run(write_run(tmp_path / "b", rows)), read_run(write_run(tmp_path / "c", scattered)), Thresholds()
    )
    assert comparison.verdict == "inconclusive" and not any(p.gross for p in comparison.points)
    quiet = planted(rows, 0, time_ms=3.0, time_ms_p20=3.0, time_ms_p80=3.0)  # the others stayed put
    comparison = compare_runs(
        read_run(write_run(tmp_path / "b2", rows)), read_run(write_run(tmp_path / "c2", quiet)), Thresholds()
    )
    assert comparison.verdict == "regression" and [p.gross for p in comparison.points] == [True] + [False] * 5


def _without_schema_3_columns(run: Path) -> Path:
    """The run's files as a run of schema 2 wrote them: no kv_heads, chunk or gqa column."""
    import csv

    for name in ("results.csv", "processes.csv", "samples.csv"):
        with (run / name).open(newline="") as handle:
            reader = csv.DictReader(handle)
            rows = list(reader)
        columns = [c for c in reader.fieldnames or () if c not in ("kv_heads", "chunk", "gqa")]
        with (run / name).open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=columns, extrasaction="ignore")
            writer.writeheader()
            writer.writerows(rows)
    return run


def test_a_baseline_from_before_kv_heads_and_chunk_matches_every_point(tmp_path: Path) -> None:
    """An older baseline's rows read as kv_heads = heads and no chunk: the same points."""
    old = read_run(_without_schema_3_columns(write_process_run(tmp_path / "base", _rows(), QUIET)))
    assert list(old.results["kv_heads"]) == list(old.results["heads"]) and set(old.results["chunk"]) == {0}
    current = read_run(write_process_run(tmp_path / "cur", _rows(), QUIET))
    comparison = compare_runs(old, current, Thresholds())
    assert comparison.verdict == "pass" and len(comparison.points) == len(SEQS)
    assert not comparison.baseline_only and not comparison.current_only


def test_points_that_failed_on_both_sides_judge_nothing_and_do_not_pass(tmp_path: Path) -> None:
    rows = [failed("cosine", "chunked", seq, "oom") for seq in SEQS]
    comparison = _compare(tmp_path, rows, rows)
    assert {p.time_verdict for p in comparison.points} == {"not compared"}
    assert comparison.judged_nothing and comparison.verdict == "inconclusive"
    assert "no point was judged" in verdict_line(comparison)
    assert any(
        line.startswith("no point was judged: each of the 3 points") for line in judging_lines(comparison, Thresholds())
    )
    one_judged = _compare(tmp_path / "one", [*rows[:2], *_rows(seqs=(4096,))], [*rows[:2], *_rows(seqs=(4096,))])
    assert not one_judged.judged_nothing and one_judged.verdict == "pass"  # the sweep's reach, where it was judged


def test_a_point_of_the_baseline_missing_from_the_current_run_is_not_a_pass(tmp_path: Path) -> None:
    comparison = _compare(tmp_path, _rows(), _rows(seqs=SEQS[:2]))  # an interrupted run: 4096 never ran
    assert not comparison.covered().mostly_unmatched and comparison.verdict == "inconclusive"
    (reason,) = comparison.covered().reasons()
    assert reason.startswith("1 point(s) of the baseline have no row in the current run")
    grown = _compare(tmp_path / "grown", _rows(seqs=SEQS[:2]), _rows())  # a point added is no loss
    assert grown.verdict == "pass"


def test_a_count_on_one_side_only_is_not_judged_and_not_a_pass(tmp_path: Path) -> None:
    rows = _rows()
    counted = [dict(row, kernels_per_call=12, host_syncs=1) for row in rows]
    comparison = _compare(tmp_path, counted, rows)  # the current run's counts failed, or predate the column
    assert [p.one_sided for p in comparison.points] == [("launches", "host syncs")] * 3
    assert comparison.verdict == "inconclusive" and not comparison.failed
    assert "3 point(s) with a count or memory on one side only (not judged)" in verdict_line(comparison)
    assert _compare(tmp_path / "both", counted, counted).verdict == "pass"


def test_a_count_an_older_run_s_schema_predates_is_named_not_held_against_it(tmp_path: Path) -> None:
    """A GPU run made before host_syncs existed (schema 15) has no count to compare: that is no
    count that failed, and it must not keep every comparison with it inconclusive."""
    rows = _rows()
    counted = [dict(row, kernels_per_call=12, host_syncs=1) for row in rows]
    older = [dict(row, kernels_per_call=12) for row in rows]
    baseline = read_run(write_process_run(tmp_path / "base", older, QUIET))
    baseline.meta["schema_version"] = 15
    current = read_run(write_process_run(tmp_path / "cur", counted, QUIET))
    comparison = compare_runs(baseline, current, Thresholds())
    assert comparison.predated == {"host syncs": 15} and comparison.one_sided == []
    assert comparison.verdict == "pass"
    (line,) = [line for line in judging_lines(comparison, Thresholds()) if "predates" in line]
    assert line.startswith("host syncs not judged: one run's schema (15) predates them")
    # An A/B's merged baseline side is today's schema, its figures the older rounds': the same.
    baseline.meta |= {"schema_version": 16, "measured_schema_version": 15}
    assert compare_runs(baseline, current, Thresholds()).predated == {"host syncs": 15}
