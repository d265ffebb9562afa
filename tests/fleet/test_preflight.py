"""linbench doctor --devices: the inventory, placement, other processes and side-by-side checks
on a fake inventory, and the side-by-side verdicts from the gate's judgement. CPU only: the
GPUs are fake, the control point's rows come from the test-only fake runner."""

from __future__ import annotations

import os

import pytest
from fake_runner import FAKE
from fleet_helpers import FakeInventory

from linbench.doctor.checks import FAIL, PASS, WARN
from linbench.fleet.preflight import checkup, plan_devices, side_by_side_check
from linbench.fleet.side_by_side import SideBySide
from linbench.gate.rule import TimeJudgement


def test_the_checkup_of_fake_gpus_measures_side_by_side_but_does_not_judge(fake_gpus: FakeInventory) -> None:
    fake_gpus(2, processes={"GPU-node-a-0001": [os.getpid()]})
    inventory, placements = plan_devices("all", oversubscribe=True)
    assert [p.choice.device.label for p in placements] == ["cuda:0", "cuda:1"]
    found = checkup("all", inventory, placements, runner=FAKE)
    by_name = {check.name: check for check in found.checks}
    assert by_name["inventory"].verdict == WARN and "test-only" in by_name["inventory"].note
    assert by_name["other processes"].verdict == WARN
    assert by_name["other processes"].measured == f"cuda:1: pid {os.getpid()}"
    side = by_name["side by side"]
    assert side.verdict == WARN and side.note.startswith("not judged: fake GPUs")
    assert len(side.details["alone_ms"]) == len(side.details["beside_ms"]) == 5  # five processes each side
    assert side.details["judged"] is False and side.details["verdict"] == "same"  # the fake runner's equal times
    assert found.to_json()["placement"][1]["uuid"] == "GPU-node-a-0001"


def test_one_gpu_has_no_neighbours_to_measure_beside(fake_gpus: FakeInventory) -> None:
    fake_gpus(1)
    inventory, placements = plan_devices("cuda:0", oversubscribe=True)
    side = {c.name: c for c in checkup("cuda:0", inventory, placements, runner=FAKE).checks}["side by side"]
    assert side.verdict == WARN and side.measured == "not measured" and "no neighbours" in side.note


@pytest.mark.parametrize(
    ("verdict", "expected"), [("regression", FAIL), ("slower", WARN), ("same", PASS), ("faster", PASS)]
)
def test_a_judged_side_by_side_takes_the_gate_s_verdict(verdict: str, expected: str) -> None:
    measured = SideBySide("control", [1.0] * 5, [1.2] * 5, neighbours=7, overlapped=True, judged=True)
    measured.judgement = TimeJudgement(verdict, 1.2, 0.01, 0.02, 0.05, True)
    check = side_by_side_check(measured)
    assert check.verdict == expected and check.measured == "1.200x of alone"
    assert check.reference == "within 5.0% (the gate's rule)"
    assert ("--cpus-per-gpu" in check.note) == (expected == FAIL)


def test_a_side_by_side_without_overlap_or_too_noisy_is_not_judged() -> None:
    noisy = SideBySide("control", [1.0] * 5, [1.0] * 5, neighbours=1, overlapped=True, note="too noisy here")
    noisy.judgement = TimeJudgement("noisy", 1.0, 0.2, 0.5, 0.5, False)
    assert side_by_side_check(noisy).verdict == WARN
    assert side_by_side_check(noisy).note == "not judged: too noisy here"
