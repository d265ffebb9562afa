"""Where a worker's Triton kernels are first called and tuned, the scope a point's choices are kept
under, and what a cold store adds to the estimate (device: CPU; no Triton kernel runs here)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch

from linbench.measure import autotune
from linbench.measure.autotune import AutotuneReading
from linbench.measure.autotune_store import FOLDER_VARIABLE, ConfigStore
from linbench.measure.timing_policy import TimingPolicy
from linbench.runner import triton_tuning, workload
from linbench.runner.kind_protocol import Task
from linbench.runner.run_kind import RUN
from linbench.shape import Shape
from linbench.sweep.points import Point

CPU = torch.device("cpu")
FLA = Point("gated-deltanet", "fla", "fwd", True, "fp32", "cpu", Shape(1, 2, 4096, 16, 16))
PLAIN = replace(FLA, impl="recurrent", shape=Shape(1, 2, 64, 8, 8))


def _warm_ups(monkeypatch: pytest.MonkeyPatch, task: Task) -> list[int]:
    """The lengths ``RUN.workload`` warms ``task``'s point up at (the calls stood in)."""
    lengths: list[int] = []
    monkeypatch.setattr(workload, "warm_up", lambda point, device, seq=16, params=None: lengths.append(seq))
    monkeypatch.setattr(workload, "Workload", lambda *args: object())
    RUN.workload(task, CPU)
    return lengths


def _task(point: Point) -> Task:
    return Task("measure", point, TimingPolicy.for_device("cpu"), RUN)


def test_a_triton_impl_s_first_call_in_a_timing_process_is_at_the_point_s_own_length(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """fla's autotune keys leave the length out: the warm-up, where its kernels tune, is at the
    point's 4096 tokens, not at 16."""
    assert triton_tuning.tunes_at_point(FLA)
    assert _warm_ups(monkeypatch, _task(FLA)) == [4096]


def test_other_impls_warm_up_at_a_tiny_length(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(triton_tuning, "_measured", [])
    assert not triton_tuning.tunes_at_point(PLAIN)
    assert _warm_ups(monkeypatch, _task(PLAIN)) == [workload.TINY_SEQ]


def test_a_tiny_warm_up_that_ran_an_autotuned_kernel_is_followed_by_one_at_the_point_s_length(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A plugin's Triton kernel, unknown before it runs: its tiny call tunes in a scope of its
    own, and the point's own warm-up follows."""
    entered: list[tuple[str, bool]] = []
    monkeypatch.setattr(triton_tuning, "_measured", ["the point"])
    monkeypatch.setattr(autotune, "enter", lambda name, store=None, lock=False: entered.append((name, lock)))
    monkeypatch.setattr(autotune, "reading", lambda: AutotuneReading("kernel: BLOCK=16 warps=1 stages=3", "tuned"))
    assert _warm_ups(monkeypatch, _task(PLAIN)) == [workload.TINY_SEQ, 64]
    assert entered == [("the point | warm-up at 16 tokens", False), ("the point", True)]  # locked: it tunes


def test_a_scope_is_the_point_with_its_length_params_device_model_and_library() -> None:
    scope = triton_tuning.scope(FLA, {}, "H200")
    assert scope != triton_tuning.scope(replace(FLA, shape=replace(FLA.shape, seq=1024)), {}, "H200")
    assert scope != triton_tuning.scope(FLA, {"scale": 0.5}, "H200")
    assert scope != triton_tuning.scope(FLA, {}, "H100")
    # Two GPUs of one model share their choices.
    assert triton_tuning.scope(replace(FLA, device="cuda:0"), {}, "H200") == triton_tuning.scope(
        replace(FLA, device="cuda:1"), {}, "H200"
    )
    assert '"library": "fla-core' in scope


def test_the_estimate_counts_tuning_where_the_store_lacks_the_point(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(FOLDER_VARIABLE, str(tmp_path))

    def cold(points: list[Point]) -> float:
        return triton_tuning.cold_s(points, lambda point: {}, "a CPU")

    bwd = replace(FLA, mode="fwdbwd")
    assert cold([FLA, bwd, PLAIN]) == triton_tuning.COLD_S["fwd"] + triton_tuning.COLD_S["fwdbwd"]
    name = autotune.full_scope(triton_tuning.scope(FLA, {}, "a CPU"))
    ConfigStore().save(name, {"kernel": {"[16]": {"text": "BLOCK=16 warps=1 stages=3"}}}, 1.0, 2.0)
    assert cold([FLA, bwd]) == triton_tuning.COLD_S["fwdbwd"]


def test_a_tiny_warm_up_that_ran_no_autotuned_kernel_is_all_and_locks_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Triton imported in the worker, but the impl's call runs no autotuner: one tiny call, and no
    lock of the point's scope held while it is measured."""
    entered: list[tuple[str, bool]] = []
    monkeypatch.setattr(triton_tuning, "_measured", ["the point"])
    monkeypatch.setattr(autotune, "enter", lambda name, store=None, lock=False: entered.append((name, lock)))
    monkeypatch.setattr(autotune, "reading", lambda: AutotuneReading())
    assert _warm_ups(monkeypatch, _task(PLAIN)) == [workload.TINY_SEQ]
    assert entered == [("the point | warm-up at 16 tokens", False), ("the point", False)]
