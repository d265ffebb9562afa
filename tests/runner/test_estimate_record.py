"""The duration estimate against the runs committed under results/: what each took, what the
estimator says of its points, and meta.json's ``estimate`` record (CPU only; nothing runs)."""

from __future__ import annotations

import csv
import json
import subprocess
from dataclasses import fields
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from linbench.measure.timing_policy import TimingPolicy
from linbench.results.estimate_record import EstimateRecord
from linbench.results.meta import timing_protocol
from linbench.runner.kinds import kind_of
from linbench.shape import Shape
from linbench.sweep.estimate import CPU_FORM_RATE, RATE, estimate_s, form_rate
from linbench.sweep.points import Point

RESULTS = Path(__file__).parents[2] / "results"
# The estimate is a rough model, meant to tell minutes from hours: a recorded run must have taken
# between a third and three times what the estimator says of its points today.
BAND = (1 / 3, 3.0)


def _committed(paths: list[Path]) -> list[Path]:
    """The paths git tracks: a run a user made in this checkout (the README's main job writes one
    under results/) is not a recorded run. All of them where there is no git checkout."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--", "results"], cwd=RESULTS.parent, capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return paths
    tracked = {(RESULTS.parent / name).resolve() for name in listed.split("\0") if name}
    return [path for path in paths if path.resolve() in tracked]


def recorded_runs() -> list[Path]:
    """Every committed CPU run that ran to its end, says when it started and ended, and had the
    machine to itself: the estimate models an idle machine, and a run recorded busy (meta.json's
    ``load``) took what the other jobs left it, which no estimate of its points can say."""
    runs = []
    for meta_path in _committed(sorted(RESULTS.rglob("meta.json"))):
        meta = json.loads(meta_path.read_text())
        ended = meta.get("status") == "complete" and meta.get("finished_at")
        busy = bool(meta.get("load", {}).get("busy"))
        if ended and not busy and str(meta.get("device")) == "cpu":
            runs.append(meta_path.parent)
    return runs


def _rows(folder: Path) -> list[dict[str, str]]:
    with (folder / "results.csv").open(newline="") as handle:
        return list(csv.DictReader(handle))


def _point(row: dict[str, str]) -> Point:
    shape = Shape(*(int(row[name]) for name in ("batch", "heads", "seq", "dim_k", "dim_v")))
    return Point(row["variant"], row["impl"], row["mode"], row["causal"] == "True", row["dtype"], row["device"], shape)


def estimated_s(folder: Path) -> float:
    """What today's estimator (as linbench/runner/sizing.py calls it) says of the recorded run's
    points, under its recorded timing and process protocol, with its kernel build where its
    record says it made one."""
    meta = json.loads((folder / "meta.json").read_text())
    timing = TimingPolicy(**{f.name: meta["timing"][f.name] for f in fields(TimingPolicy) if f.name in meta["timing"]})
    kind = kind_of(meta["sweep"].get("command", "run"))
    points = [_point(row) for row in _rows(folder)]
    total = estimate_s(points, timing, float(meta["timeout_s"]), kind) * timing_protocol(meta).wanted
    record = EstimateRecord.read(meta)
    return total + (record.build_estimate_s if record is not None else 0.0)


def took_s(folder: Path) -> float:
    """The run's wall time: its record's, else from its start and end stamps."""
    meta = json.loads((folder / "meta.json").read_text())
    record = EstimateRecord.read(meta)
    if record is not None and record.actual_s is not None:
        return record.actual_s
    started, finished = (datetime.fromisoformat(meta[key]) for key in ("started_at", "finished_at"))
    return (finished - started).total_seconds()


def test_there_are_recorded_runs_to_check() -> None:
    assert len(recorded_runs()) >= 2


@pytest.mark.parametrize("folder", recorded_runs(), ids=lambda path: path.name)
def test_the_estimator_is_within_its_band_on_a_recorded_run(folder: Path) -> None:
    ratio = took_s(folder) / estimated_s(folder)
    assert BAND[0] <= ratio <= BAND[1], f"{folder.name}: took {ratio:.2f}× the estimate"


@pytest.mark.parametrize("folder", recorded_runs(), ids=lambda path: path.name)
def test_a_run_s_estimate_record_holds_its_own_ratio(folder: Path) -> None:
    record = EstimateRecord.read(json.loads((folder / "meta.json").read_text()))
    if record is None:
        pytest.skip("recorded before meta.json kept the estimate")
    assert record.actual_s is not None and record.ratio == pytest.approx(record.actual_s / record.estimate_s)


def test_the_record_reads_back_what_it_wrote() -> None:
    record = EstimateRecord(100.0, 25.0, 27, build_s=41.2).ended(196.04, "complete")
    section: dict[str, Any] = record.section()
    assert section["ratio"] == 1.96 and section["actual_s"] == 196.0 and section["build_s"] == 41.2
    assert EstimateRecord.read({"estimate": section}) == EstimateRecord(100.0, 25.0, 27, False, 41.2, 196.0, "complete")
    assert EstimateRecord.read({}) is None and EstimateRecord.read({"estimate": {"points": 3}}) is None
    assert EstimateRecord(100.0, 0.0, 1).ratio is None  # still running


def _measured_rates(form: str) -> list[float]:
    """FLOP/s of every ok row of ``form`` (sdpa-math counts as sdpa) in the recorded quiet CPU
    runs, each call's FLOPs as the model counts them."""
    from linbench.runner.run_kind import call_flops

    rates = []
    for folder in recorded_runs():
        if json.loads((folder / "meta.json").read_text())["sweep"].get("command", "run") != "run":
            continue
        for row in _rows(folder):
            if row["status"] == "ok" and row["impl"].split("-")[0] == form and float(row["time_ms"]) > 0:
                rates.append(call_flops(_point(row)) / (float(row["time_ms"]) / 1e3))
    return sorted(rates)


@pytest.mark.parametrize("form", sorted(CPU_FORM_RATE))
def test_each_form_s_cpu_rate_is_near_the_median_the_recorded_runs_measured(form: str) -> None:
    """The rate per form replaced one CPU rate that was off 5x for sdpa and 10x for the loops:
    each must stay within 2x of what the committed quiet runs measured of that form."""
    rates = _measured_rates(form)
    assert len(rates) >= 5, f"no recorded run measures {form}"
    median = rates[len(rates) // 2]
    assert median / 2 <= CPU_FORM_RATE[form] <= median, f"{form}: {CPU_FORM_RATE[form]:.3g} against {median:.3g}"


def test_a_form_takes_its_rate_and_any_other_impl_the_device_s() -> None:
    shape = Shape(1, 8, 4096, 64, 64)
    cpu = {impl: form_rate(Point("v", impl, "fwd", True, "fp32", "cpu", shape)) for impl in ("sdpa-math", "mine")}
    assert cpu == {"sdpa-math": CPU_FORM_RATE["sdpa"], "mine": RATE["cpu"]}
    assert form_rate(Point("v", "kernel", "fwd", True, "fp32", "cuda", shape)) == RATE["cuda"]
    assert CPU_FORM_RATE["sdpa"] > RATE["cpu"] > CPU_FORM_RATE["recurrent"]
