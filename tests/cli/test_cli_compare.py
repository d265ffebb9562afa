"""``linbench compare`` end to end: exit status 0 (pass), 1 (regression), 2 (usage error), 3
(the environment changed) and 4 (inconclusive), what the table, markdown and JSON say, and the
real H100 rerun pair of tests/data/ci-reruns, which has no process data: its time is never
judged, so it is inconclusive, and never a regression. No device: the runs are written, not measured."""

from __future__ import annotations

import json
import statistics
import subprocess
from pathlib import Path

import pytest
from cli_helpers import Invoke, assert_usage_error
from synthetic_processes import MODERATE, NOISY, QUIET, planted, write_process_run
from synthetic_runs import scaled, series, write_run

LINEAR = lambda s: 0.01 * s  # noqa: E731
GPU = {"device": "cuda:0", "device_name": "Test GPU"}
CI_RERUNS = Path(__file__).parents[1] / "data" / "ci-reruns"
# Two back-to-back runs of suites/ci-gpu.toml on an H100 (82 points ok in both), from before
# linbench measured each point in several processes: the old gate raised 6 false regressions.
H100_PAIR = (CI_RERUNS / "ci1" / "20261122T190155Z-ci-gpu", CI_RERUNS / "ci2" / "20261122T190624Z-ci-gpu")
WORKFLOW = ("--max-slowdown", "5%", "--max-memory-growth", "2%")


def _suite() -> list[dict]:
    rows = series("cosine", "kernel", LINEAR, **GPU) + series("softmax", "sdpa", lambda s: 1e-5 * s * s, **GPU)
    for row in rows:
        row["kernels_per_call"] = 7
    return rows


def _pair(tmp_path: Path, cur: list[dict], offsets=QUIET, meta: dict | None = None) -> tuple[Path, Path]:
    base = write_process_run(tmp_path / "base", _suite(), offsets)
    return base, write_process_run(tmp_path / "cur", cur, offsets, meta=meta)


def test_compare_passes_an_unchanged_run_and_fails_a_slower_one(invoke: Invoke, tmp_path: Path) -> None:
    base, same = _pair(tmp_path, _suite())
    passed = invoke("compare", base, same)
    assert passed.exit_code == 0 and "PASS: 10 points compared: 10 same" in passed.stdout, passed.output
    slow = write_process_run(tmp_path / "slow", planted(planted(_suite(), 0, time_ms=1.2), 1, time_ms=1.2))
    failed = invoke("compare", base / "results.csv", slow, "--json")
    assert failed.exit_code == 1, failed.output
    report = json.loads(failed.stdout)
    verdicts = [p["time_verdict"] for p in report["points"]]
    assert report["verdict"] == "regression" and verdicts == ["regression"] * 2 + ["same"] * 8
    assert invoke("compare", base, slow, "--max-slowdown", "25%").exit_code == 0
    markdown = invoke("compare", base, slow, "--format", "md")
    assert markdown.exit_code == 1 and "**REGRESSION" in markdown.stdout


def test_a_run_that_moved_as_a_whole_is_inconclusive_unless_a_control_stayed_put(
    invoke: Invoke, tmp_path: Path
) -> None:
    base, slow = _pair(tmp_path, scaled(_suite(), time=1.2))
    result = invoke("compare", base, slow)
    assert result.exit_code == 4, result.output
    assert "every point moved together by +20.0% (the median of 10 points)" in result.stdout
    assert "--control" in result.stdout and "linbench ab" in result.stdout
    # softmax:sdpa did not move: the change slowed cosine:kernel, and the gate says so.
    kernel_only = [scaled([row], time=1.2)[0] if row["variant"] == "cosine" else row for row in _suite()]
    _, kernel_slow = _pair(tmp_path / "kernel", kernel_only)
    failed = invoke("compare", base, kernel_slow, "--control", "softmax:sdpa", "--json")
    assert failed.exit_code == 1, failed.output
    report = json.loads(failed.stdout)
    assert report["between_runs"]["source"] == "controls" and report["between_runs"]["shift"] == pytest.approx(0.0)
    assert [p["time_verdict"] for p in report["points"]] == ["regression"] * 5 + ["same"] * 5


def test_the_json_says_how_each_point_was_judged(invoke: Invoke, tmp_path: Path) -> None:
    base, cur = _pair(tmp_path, planted(_suite(), 0, time_ms=1.3), MODERATE)
    report = json.loads(invoke("compare", base, cur, "--json").stdout)
    point = report["points"][0]
    assert point["time_verdict"] == "regression" and point["ratio"] == pytest.approx(1.3, rel=1e-4)
    assert (point["base_processes"], point["processes"], point["timing"]) == (20, 20, "eager")
    assert point["spread"] == pytest.approx(1.4826 * statistics.median(abs(o) for o in MODERATE), rel=1e-3)
    assert point["threshold"] == point["noise"] == pytest.approx(0.127, abs=0.001) and point["settled"]
    assert (point["base_kernels"], point["kernels"], point["launch_verdict"]) == (7, 7, "same")
    assert {"eager_ratio", "eager_verdict", "memory_verdict"} <= set(point)
    assert report["noisy"] == report["unverified"] == 0 and report["advice"] == [] and report["drift"] is None


def test_one_extra_kernel_launch_fails_the_gate(invoke: Invoke, tmp_path: Path) -> None:
    base, cur = _pair(tmp_path, planted(_suite(), 3, kernels_per_call=8 / 7))
    result = invoke("compare", base, cur)
    assert result.exit_code == 1, result.output
    assert "7 → 8 regression" in result.stdout and "1 launch regression(s)" in result.stdout


def test_noisy_points_are_inconclusive_and_the_advice_is_given_once(invoke: Invoke, tmp_path: Path) -> None:
    base, cur = _pair(tmp_path, scaled(_suite(), time=1.5), NOISY)
    result = invoke("compare", base, cur, *WORKFLOW)
    assert result.exit_code == 4, result.output
    assert "INCONCLUSIVE: 10 points compared: 10 noisy (not judged)" in result.stdout
    assert result.stdout.count("need more processes per point") == 1 and "--cuda-graph" in result.stdout
    assert "10 point(s) whose time was not judged: cosine:kernel fwd fp32 causal cuda B=1 H=8 S=1k" in result.stdout
    assert result.stdout.count("--processes 5 --max-processes 56") == 1


def test_a_legacy_pair_is_unverified_and_inconclusive_when_times_differ(invoke: Invoke, tmp_path: Path) -> None:
    rows = series("cosine", "chunked", LINEAR, peak_bytes=lambda s: 32768.0 * s)
    base, cur = write_run(tmp_path / "base", rows), write_run(tmp_path / "cur", scaled(rows, time=1.5))
    result = invoke("compare", base, cur)
    assert result.exit_code == 4, result.output
    assert "INCONCLUSIVE: 5 points compared: 5 unverified (not judged)" in result.stdout
    assert result.stdout.count("too few to judge time with") == 1
    grown = write_run(tmp_path / "grown", scaled(rows, time=1.5, memory=1.1))
    assert invoke("compare", base, grown).exit_code == 1  # memory is exact: still gated


@pytest.mark.parametrize(("factor", "status", "verdict"), [(3.0, 1, "regression (gross)"), (1.3, 4, "unverified")])
def test_two_plain_runs_fail_a_gross_slowdown_and_never_pass_a_planted_30_percent(
    invoke: Invoke, tmp_path: Path, factor: float, status: int, verdict: str
) -> None:
    """Runs of one process per point (linbench run's default): time is not judged, but a point
    three times as slow, each process steady within itself, is no noise's doing."""
    rows = series("cosine", "chunked", LINEAR)
    base = write_run(tmp_path / "base", rows)
    cur = write_run(tmp_path / "cur", planted(rows, 2, time_ms=factor, time_ms_p20=factor, time_ms_p80=factor))
    result = invoke("compare", base, cur)
    assert result.exit_code == status, result.output
    assert verdict in result.stdout and "PASS" not in result.stdout
    report = json.loads(invoke("compare", base, cur, "--json").stdout)
    assert report["exit_status"] == status
    assert [p["gross"] for p in report["points"]] == [False, False, factor == 3.0, False, False]


def test_runs_of_different_sweeps_are_inconclusive_and_say_so(invoke: Invoke, tmp_path: Path) -> None:
    cosine = series("cosine", "chunked", LINEAR, seqs=(1024, 2048))
    plugin = series("cosine", "chunked", LINEAR, seqs=(1024,)) + series("planted", "scaled", LINEAR)
    base, cur = write_process_run(tmp_path / "base", cosine), write_process_run(tmp_path / "cur", plugin)
    result = invoke("compare", base, cur)
    assert result.exit_code == 4, result.output
    assert "the runs do not match: the runs measured different impls (only in the baseline: none; " in result.stdout
    assert "6 of 7 points are in one run only" in result.stdout
    assert "INCONCLUSIVE: 1 points compared: 1 same" in result.stdout and "the runs do not match" in result.stdout
    report = json.loads(invoke("compare", base, cur, "--json").stdout)
    assert report["verdict"] == "inconclusive" and len(report["mismatched"]) == 2 and report["unjudged"] == []


def test_a_drift_of_every_control_exits_3_and_names_them(invoke: Invoke, tmp_path: Path) -> None:
    base, cur = _pair(tmp_path, scaled(_suite(), time=1.10))
    result = invoke("compare", base, cur, "--control", "softmax:sdpa")
    assert result.exit_code == 3, result.output
    # Each point is judged beyond what the controls moved: none moved more.
    assert "ENVIRONMENT CHANGED: 10 points compared: 10 same" in result.stdout
    assert "softmax:sdpa fwd fp32 causal cuda B=1 H=8 S=16k D=64 1.100x" in result.stdout
    report = json.loads(invoke("compare", base, cur, "--control", "softmax:sdpa", "--json").stdout)
    assert report["verdict"] == "environment changed" and len(report["drift"]["moved"]) == 5
    # Declared by the suite (meta.json) instead of on the command line: the same.
    base, declared = _pair(tmp_path / "declared", scaled(_suite(), time=1.10), meta={"controls": ["softmax:sdpa"]})
    assert invoke("compare", base, declared).exit_code == 3
    # Memory still fails: exit 1.
    grown = write_process_run(tmp_path / "grown", planted(scaled(_suite(), time=1.10), 0, peak_bytes=1.5))
    assert invoke("compare", base, grown, "--control", "softmax:sdpa").exit_code == 1


@pytest.mark.parametrize(
    ("extra", "fragments"),
    [
        (["--noise-z", "lots"], ("--noise-z", "above 0")),
        (["--noise-z", "0"], ("--noise-z", "above 0")),
        (["--max-noise", "big"], ("--max-noise", "percentage")),
        (["--max-launch-growth", "x"], ("--max-launch-growth", "percentage")),
        (["--control", "softmax"], ("VARIANT:IMPL",)),
        (["--control", "heinsen:kernel"], ("--control heinsen:kernel", "no point of it")),
    ],
)
def test_bad_gate_options_are_usage_errors(invoke: Invoke, tmp_path: Path, extra: list[str], fragments) -> None:
    base, cur = _pair(tmp_path, _suite())
    assert_usage_error(invoke("compare", base, cur, *extra), *fragments)


@pytest.mark.parametrize(
    ("protocol", "fragments"),
    [
        ({"name": "processes-v9"}, ("different timing protocols", "processes-v1 against processes-v9")),
        ({"trust_processes": "many"}, ("timing_protocol has trust_processes 'many'",)),
    ],
)
def test_a_current_run_of_another_or_a_broken_protocol_is_a_usage_error(
    invoke: Invoke, tmp_path: Path, protocol: dict, fragments
) -> None:
    base, cur = _pair(tmp_path, _suite())
    meta = json.loads((cur / "meta.json").read_text())
    (cur / "meta.json").write_text(json.dumps(meta | {"timing_protocol": protocol}))
    assert_usage_error(invoke("compare", base, cur), *fragments)


def test_the_real_h100_rerun_pair_is_unverified_inconclusive_and_no_regression(invoke: Invoke) -> None:
    data_files = [path for run in H100_PAIR for path in run.iterdir()]
    assert sorted(p.name for p in data_files) == ["meta.json"] * 2 + ["results.csv"] * 2
    assert sum(p.stat().st_size for p in data_files) < 64 * 1024
    result = invoke("compare", *H100_PAIR, *WORKFLOW, "--json")
    assert result.exit_code == 4, result.output
    report = json.loads(result.stdout)
    verdicts = [p["time_verdict"] for p in report["points"]]
    assert "regression" not in verdicts and report["verdict"] == "inconclusive"
    assert verdicts.count("unverified") == report["unverified"] == len(report["unjudged"]) == 82
    # Its largest shift (heinsen:chunked fwd 1k, 1.87x between tight processes) is no gross regression.
    assert max(p["ratio"] or 0 for p in report["points"]) == pytest.approx(1.873, abs=0.001)
    assert {p["memory_verdict"] for p in report["points"] if p["time_verdict"] == "unverified"} == {"same"}
    assert report["advice"][-1].startswith("  the current run: linbench run ")
    assert report["advice"][-1].endswith("--quiet --processes 5 --max-processes 20")  # the current side too


def test_the_output_names_the_time_judged_and_a_run_without_p20_is_judged_on_medians(
    invoke: Invoke, tmp_path: Path
) -> None:
    cpu = [row | {"device": "cpu", "device_name": "Test CPU"} for row in _suite()]
    base, cur = (write_process_run(tmp_path / name, cpu) for name in ("base", "cur"))
    judged = invoke("compare", base, cur, "--format", "md")
    assert judged.exit_code == 0 and "(p20) |" in judged.stdout and "not a median" in judged.stdout
    assert "not p20s" not in judged.stdout
    without = [{k: v for k, v in row.items() if k not in ("time_ms_p20", "time_ms_p80")} for row in cpu]
    old = write_process_run(tmp_path / "old", without)
    fallback = invoke("compare", old, cur, "--json")
    report = json.loads(fallback.stdout)
    assert fallback.exit_code == 0 and {p["statistic"] for p in report["points"]} == {"median"}
    assert any(line.startswith("10 CPU point(s) judged on process medians, not p20s") for line in report["advice"])


def test_changed_since_a_revision_that_is_none_is_one_line(invoke: Invoke, tmp_path: Path) -> None:
    base, same = _pair(tmp_path, _suite())
    result = invoke("compare", base, same, "--changed-since", "no-such-revision")
    assert_usage_error(result, "--changed-since 'no-such-revision' is not a commit of")


def test_changed_since_names_the_changed_impls_neither_run_measured(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from linbench.ab import changes
    from linbench.impl_code import Touched

    planted = Touched({"gated-deltanet:chunked": ("linbench/variants/gated/triangular.py",)}, (), ())
    monkeypatch.setattr(changes, "changes_since", lambda root, sha: planted)
    base, same = (_measured_at(run, _head()) for run in _pair(tmp_path, _suite()))
    result = invoke("compare", base, same, "--changed-since", "HEAD")
    assert result.exit_code == 4, result.output
    assert "measured by neither run: gated-deltanet:chunked" in result.stdout
    assert "1 changed impl(s) not measured" in result.stdout


def _head() -> str:
    root = Path(__file__).resolve().parents[2]
    return subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()


def _measured_at(run: Path, sha: str | None) -> Path:
    """``run`` with meta.json's linbench commit set to ``sha`` (None: none recorded)."""
    meta = json.loads((run / "meta.json").read_text())
    meta.pop("git_sha", None)
    (run / "meta.json").write_text(json.dumps(meta | ({"git_sha": sha} if sha else {})))
    return run


@pytest.mark.parametrize(
    ("base_sha", "cur_sha", "said"),
    [
        (None, "HEAD", "the baseline records no linbench commit"),
        ("HEAD-dirty", "HEAD", "the baseline was measured with local changes"),
        ("0" * 40, "HEAD", "but the baseline was measured at 000000000000: give --changed-since 000000000000"),
        ("HEAD", "f" * 40, "the current run was measured at ffffffffffff, not at this checkout's"),
        ("HEAD", None, "the current run was measured at no recorded commit, not at"),
    ],
)
def test_changed_since_is_refused_unless_the_runs_were_measured_at_the_revision_and_this_checkout(
    invoke: Invoke, tmp_path: Path, base_sha: str | None, cur_sha: str | None, said: str
) -> None:
    """Else "same code" would excuse points whose code changed between the runs: a baseline
    older than REV holds every change since it, not only those since REV."""
    head = _head()
    real = lambda sha: sha.replace("HEAD", head) if sha else None  # noqa: E731 - the test's own commit
    base, cur = _pair(tmp_path, _suite())
    result = invoke(
        "compare", _measured_at(base, real(base_sha)), _measured_at(cur, real(cur_sha)), "--changed-since", "HEAD"
    )
    assert_usage_error(result, said)
    dirty_current = invoke(
        "compare", _measured_at(base, head), _measured_at(cur, f"{head}-dirty"), "--changed-since", "HEAD"
    )
    assert dirty_current.exit_code in (0, 4), dirty_current.output  # the checkout's own changes are in its diff


def test_the_two_sides_of_an_ab_are_never_refused_for_their_software(invoke: Invoke, tmp_path: Path) -> None:
    """One job measured both in one environment: a setting's wording that differs between the
    revisions (fla's dispatch record) must not end an A/B with exit 2 after its rounds."""
    base, cur = _pair(tmp_path, _suite())
    for run, dispatch in ((base, "off (fla's own kernels)"), (cur, "off")):
        meta = json.loads((run / "meta.json").read_text())
        (run / "meta.json").write_text(json.dumps(meta | {"fla_backend_dispatch": dispatch}))
    assert_usage_error(invoke("compare", base, cur), "measured with other software (fla_backend_dispatch")
    revisions = {"baseline": {"revision": "main", "sha": "e" * 40}, "current": {"sha": "f" * 40}}

    def sides(base_side: str, base_revisions: dict) -> None:  # type: ignore[type-arg]
        for run, side, recorded in ((base, base_side, base_revisions), (cur, "current", revisions)):
            meta = json.loads((run / "meta.json").read_text())
            (run / "meta.json").write_text(json.dumps(meta | {"ab": {"side": side, "revisions": recorded}}))

    sides("baseline", revisions)
    result = invoke("compare", base, cur)
    assert result.exit_code == 0, result.output
    assert "the runs were measured on other machines or software: fla_backend_dispatch" in result.stdout
    # Two A/Bs' current sides, or sides of jobs at other revisions, are runs made apart.
    sides("current", revisions)
    assert_usage_error(invoke("compare", base, cur), "measured with other software")
    sides("baseline", revisions | {"current": {"sha": "0" * 40}})
    assert_usage_error(invoke("compare", base, cur), "measured with other software")
    # --changed-since is held to the revisions the job recorded: HEAD is not the baseline's e...
    sides("baseline", revisions)
    assert_usage_error(invoke("compare", base, cur, "--changed-since", "HEAD"), "baseline was measured at eeeeeeeeeeee")


def test_changed_since_trusts_a_recorded_trace_only_while_it_covers_the_changed_files(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An A/B's merged run records the impls traced running none of their changed code
    (meta.json's ab.not_run); compare counts such an impl unchanged only while every file it
    is tied to now is among the recorded ones, else (more changed since, or no list) changed."""
    from linbench.ab import changes
    from linbench.cli.compare_cmd import changed_code
    from linbench.impl_code import Touched

    chunked, quadratic = "linbench/variants/gated/delta_chunked.py", "linbench/variants/gated/delta_quadratic.py"
    planted = Touched({"kda:quadratic": (chunked,), "kda:recurrent": (chunked, quadratic)}, (), ())
    monkeypatch.setattr(changes, "changes_since", lambda root, sha: planted)
    recorded = {"ab": {"not_run": {"kda:quadratic": [chunked], "kda:recurrent": [chunked]}}}
    found = changed_code("HEAD", recorded)
    assert (found.impls, found.not_run) == (("kda:recurrent",), ("kda:quadratic",))
    assert changed_code("HEAD", {"ab": {"not_run": {"kda:quadratic": chunked}}}).not_run == ()
    assert changed_code("HEAD", None).impls == ("kda:quadratic", "kda:recurrent")
