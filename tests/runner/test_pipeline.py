"""The sweep pipeline from Python, without the CLI: prepare, start, run, and resume (CPU, real
worker processes at tiny sizes).

These walk what ``linbench run`` walks, so what they check is what a script gets: an
outcome with its folder and rows, library errors (never SystemExit) for bad input, and a run
that Ctrl-C stopped finished by a resume.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from linbench import SweepRequest, plan_sweep, run_sweep
from linbench.devices import DeviceError
from linbench.runner.lifecycle import RunSetupError
from linbench.runner.pipeline import prepare, start
from linbench.sweep.points import Point
from linbench.sweep.spec import SpecError

# softmax:sdpa against cosine:chunked at two lengths: four points, a second or two each.
TINY = SweepRequest(
    variants=("cosine:chunked",),
    against=("softmax:sdpa",),
    seq="64..128",
    heads=2,
    dim=16,
    device="cpu",
    budget_s=0.05,
    warmup_s=0.0,
)
PAIRS = {("cosine", "chunked"), ("softmax", "sdpa")}


def test_a_sweep_runs_from_python_into_a_folder_of_rows(tmp_path: Path) -> None:
    heard: list[tuple[str, str]] = []
    rows_heard: list[dict[str, object]] = []

    def listen(event: str, point: Point, row: dict[str, object] | None) -> None:
        heard.append((event, f"{point.variant}:{point.impl}"))
        if row is not None:
            rows_heard.append(row)

    outcome = run_sweep(TINY, out=tmp_path, listener=listen)
    assert outcome.status == "complete" and outcome.failure is None
    assert outcome.path.parent == tmp_path and outcome.results_path.is_file()
    assert len(outcome.rows) == 4 and {row["status"] for row in outcome.rows} == {"ok"}
    assert {(row["variant"], row["impl"]) for row in outcome.rows} == PAIRS
    assert sorted(row["seq"] for row in outcome.rows) == [64, 64, 128, 128]
    # One typed row for a Python caller: the listener hears what Outcome.rows holds.
    assert rows_heard == outcome.rows and all(row["causal"] is True for row in outcome.rows)
    assert all(isinstance(row["time_ms"], float) for row in outcome.rows)
    meta = json.loads((outcome.path / "meta.json").read_text())
    assert meta["status"] == outcome.meta["status"] == "complete"
    assert meta["command"].startswith("linbench.run_sweep() in ")  # not "linbench" and pytest's argv
    assert meta["sweep"]["impls"] == ["cosine:chunked", "softmax:sdpa"] and meta["sweep"]["points"] == 4
    assert heard.count(("start", "cosine:chunked")) == 2 and [e for e, _ in heard].count("row") == 4


def test_plan_sweep_is_a_dry_run_that_makes_nothing(tmp_path: Path) -> None:
    prepared = plan_sweep(TINY, out=tmp_path / "runs")
    assert len(prepared.pending) == len(prepared.plan.points) == 4 and prepared.store is None
    assert prepared.estimate_s > 0 and prepared.too_large is None
    assert set(prepared.plan.targets.pairs) == PAIRS
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(
    ("request_", "error", "fragment"),
    [
        (SweepRequest(seq="64k..1k", device="cpu"), SpecError, "seq: range '64k..1k' is reversed"),
        (SweepRequest(threads=0, device="cpu"), SpecError, "threads: 0 is not a positive whole number"),
        (SweepRequest(device="tpu"), DeviceError, "unknown device 'tpu'"),
        (SweepRequest(command="decode", seq="1k", device="cpu"), SpecError, "unknown setting(s): seq"),
    ],
)
def test_a_bad_request_raises_a_library_error_and_makes_no_folder(
    tmp_path: Path, request_: SweepRequest, error: type[ValueError], fragment: str
) -> None:
    with pytest.raises(error) as caught:
        run_sweep(request_, out=tmp_path / "runs")
    assert fragment in str(caught.value) and isinstance(caught.value, ValueError)
    assert not (tmp_path / "runs").exists()


def test_a_sweep_past_the_limits_runs_only_with_yes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from linbench.sweep import estimate

    monkeypatch.setattr(estimate, "MAX_POINTS", 1)
    with pytest.raises(RunSetupError, match=r"4 points \(more than 1\).*yes=True"):
        run_sweep(TINY, out=tmp_path / "runs")
    assert not (tmp_path / "runs").exists()
    assert plan_sweep(TINY, out=tmp_path).too_large == "4 points (more than 1)"


def test_ctrl_c_ends_the_run_interrupted_and_python_resumes_it(tmp_path: Path) -> None:
    def stop_after_the_first_row(event: str, point: Point, row: dict[str, object] | None) -> None:
        if event == "row":
            raise KeyboardInterrupt

    stopped = run_sweep(TINY, out=tmp_path, listener=stop_after_the_first_row)
    assert stopped.status == "interrupted" and stopped.meta["status"] == "interrupted"
    assert len(stopped.rows) == 1
    assert len(plan_sweep(resume=stopped.path).pending) == 3
    finished = run_sweep(resume=stopped.path)  # the command comes from the folder's meta.json
    assert finished.status == "complete" and finished.path == stopped.path
    assert len(finished.rows) == 4 and {(row["variant"], row["impl"]) for row in finished.rows} == PAIRS
    assert plan_sweep(resume=stopped.path).pending == ()


def test_a_resume_takes_only_a_new_time_limit_and_the_folder_s_own_command(tmp_path: Path) -> None:
    prepared = prepare(TINY, tmp_path)
    store = start(prepared)
    assert store.path.parent == tmp_path and not store.rows()  # made, nothing measured yet
    with pytest.raises(RunSetupError, match="drop --budget-s, --heads, --seq"):
        prepare(SweepRequest(seq="64", heads=2, budget_s=1.0), resume=store.path)
    with pytest.raises(RunSetupError, match="made by linbench run; resume it with linbench run --resume"):
        prepare(SweepRequest(command="decode"), resume=store.path)
    again = prepare(SweepRequest(timeout_s=30.0), resume=store.path)
    assert again.store is not None and again.store.path == store.path and again.spec.timeout_s == 30.0
    assert len(again.pending) == 4 and start(again) is again.store  # resumed: no second folder


def test_mix_without_resume_is_refused_from_python_too(tmp_path: Path) -> None:
    """run_sweep and plan_sweep dropped it without a word (only the command line refused it)."""
    with pytest.raises(RunSetupError, match="--mix lets --resume go on"):
        prepare(SweepRequest(variants=("cosine:chunked",), seq="64", device="cpu"), tmp_path, mix=True)
