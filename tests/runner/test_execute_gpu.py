"""A worker's GPU extras after the eager timing: CUDA-graph replays (``cuda_graph``,
``device_ms``, ``graph_error``) and the launches of one call (``kernels_per_call``).

The CPU tests pin what holds anywhere: CPU points get none of these columns, the graph's
timing policy, which call a bwd point captures, the one-line reason. The CUDA tests run
real captures (skipped without a GPU); they assert only what timing noise cannot change.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

from linbench.measure.cuda_graph import why_not_capturable
from linbench.measure.timing_policy import TimingPolicy
from linbench.results.processes import ProcessResult
from linbench.runner.execute import run_measure
from linbench.runner.execute_gpu import (
    DECODE_GRAPH_MIN_REPS,
    capturable_call,
    decode_graph_policy,
    graph_predicted_s,
    run_graph_policy,
    with_graph,
    with_launches,
)
from linbench.runner.kind_protocol import Task
from linbench.runner.kinds import DECODE, kind_of_mode
from linbench.runner.workload import Workload
from linbench.shape import Shape
from linbench.sweep.points import Point
from linbench.variants.registry import Impl, Variant, register_variant, unregister_variant

FAST = TimingPolicy(warmup_s=0.0, budget_s=0.02, min_reps=3, max_reps=20)
GPU_COLUMNS = ("cuda_graph", "device_ms", "graph_error", "kernels_per_call")
OK = ProcessResult("ok", time_ms=1.0)
STAND_IN = "stand_in_for_gpu_extras_tests"
CUDA = torch.device("cuda", 0)


def _scale(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool) -> torch.Tensor:
    # q and k enter with weight zero so that autograd has a gradient for every input.
    return v * 2.0 + 0.0 * (q + k).sum(-1, keepdim=True)


def _scale_planted(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool) -> torch.Tensor:
    return _scale(q, k, v, causal=causal).clone()  # the same values, one launch (a copy) more


def _scale_syncing(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool) -> torch.Tensor:
    if float(v.abs().max()) < 0:  # a host read of a device value: no capture survives it
        raise AssertionError("unreachable")
    return _scale(q, k, v, causal=causal)


@pytest.fixture
def stand_in() -> Iterator[str]:
    register_variant(
        Variant(
            name=STAND_IN,
            summary="2 v",
            impl_list=tuple(
                Impl(name, fn, "2 v", "O(sd)", "O(sd)")
                for name, fn in (("plain", _scale), ("planted", _scale_planted), ("syncing", _scale_syncing))
            ),
            reference="plain",
            param_specs=(),
            flop_formula=lambda *args: 0.0,
            time_complexity="O(1)",
            memory_complexity="O(1)",
        )
    )
    yield STAND_IN
    unregister_variant(STAND_IN)


def _point(variant: str, impl: str, mode: str = "fwd", device: str = "cpu", seq: int = 64) -> Point:
    return Point(variant, impl, mode, True, "fp32", device, Shape(1, 2, seq, 16, 16))


def _task(point: Point, cuda_graph: bool = False, count_launches: bool = True) -> Task:
    kind = kind_of_mode(point.mode)
    return Task(
        job="measure", point=point, timing=FAST, kind=kind, cuda_graph=cuda_graph, count_launches=count_launches
    )


# Anywhere


def test_a_cpu_point_gets_none_of_the_gpu_columns(stand_in: str) -> None:
    result = run_measure(_task(_point(stand_in, "plain"), count_launches=True))
    assert result.status == "ok"
    assert all(getattr(result, column) is None for column in GPU_COLUMNS)


def test_run_replays_are_timed_like_eager_calls_after_untimed_replays() -> None:
    policy = TimingPolicy.for_device("cuda")
    graph = run_graph_policy(policy)
    assert (graph.budget_s, graph.min_reps, graph.max_reps, graph.flush_l2) == (
        policy.budget_s,
        policy.min_reps,
        policy.max_reps,
        True,
    )
    assert graph.warmup_s == 0.0 and graph.warmup_calls > 0


def test_decode_replays_run_back_to_back_and_at_least_a_hundred() -> None:
    graph = decode_graph_policy(TimingPolicy.for_decode(8))
    assert not graph.flush_l2
    assert graph.min_reps == graph.max_reps == DECODE_GRAPH_MIN_REPS


def test_the_graph_prediction_bounds_capture_and_replays_by_eager_calls() -> None:
    policy = run_graph_policy(TimingPolicy(warmup_s=0.1, budget_s=0.5, min_reps=10, max_reps=1000))
    # A 1 s call: 3 warm-up calls before capture, the capture, 3 untimed and 10 timed replays.
    assert graph_predicted_s(policy, 1.0) == pytest.approx(3 + 1 + 3 + 10)


def test_fwd_and_fwdbwd_capture_the_timed_call_itself(stand_in: str) -> None:
    for mode in ("fwd", "fwdbwd"):
        work = Workload(_point(stand_in, "plain", mode), torch.device("cpu"))
        assert capturable_call(work) == work.run


def test_bwd_captures_a_backward_that_can_be_called_again_and_again(stand_in: str) -> None:
    work = Workload(_point(stand_in, "plain", "bwd"), torch.device("cpu"))
    backward = capturable_call(work)
    backward()
    backward()  # retain_graph: the forward it differentiates outlives each call


def test_the_energy_columns_carry_the_window_and_its_counter_updates(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the energy pass records (device: none; NVML and the measurement stood in)."""
    from types import SimpleNamespace

    from linbench.measure import energy, nvml
    from linbench.runner import execute_gpu

    fake = SimpleNamespace(nvmlShutdown=lambda: None, nvmlDeviceGetEnforcedPowerLimit=lambda handle: 700000)
    monkeypatch.setattr(nvml, "load_nvml", lambda: fake)
    monkeypatch.setattr(nvml, "nvml_handle", lambda lib, index: "handle")
    window = energy.EnergyWindow(millijoules=300_000.0, seconds=0.6, updates=6, call_s=0.002)
    monkeypatch.setattr(energy, "measure_energy", lambda *args, **kwargs: window)
    notes: list[str] = []
    read = execute_gpu._energy(lambda: None, 0.002, CUDA, notes)
    assert read["energy_window_s"] == 0.6 and read["energy_updates"] == 6 and read["power_w"] == 500.0
    assert read["energy_j"] == pytest.approx(1.0) and read["power_limit_w"] == 700.0 and notes == []

    def stuck(*args: object, **kwargs: object) -> energy.EnergyWindow:
        raise energy.CounterStuckError("NVML's energy counter did not move in 2 s of calls")

    monkeypatch.setattr(energy, "measure_energy", stuck)
    assert execute_gpu._energy(lambda: None, 0.002, CUDA, notes) == {}
    assert notes == ["energy not read: NVML's energy counter did not move in 2 s of calls"]


def test_the_reason_a_capture_failed_is_the_first_error_in_one_line() -> None:
    try:
        try:
            raise RuntimeError("CUDA error: operation not permitted when stream is capturing\nmore")
        except RuntimeError:
            raise RuntimeError("CUDA error: operation failed due to a previous error during capture") from None
    except RuntimeError as exc:
        # ``from None`` hides the context from the traceback but keeps it on the exception.
        reason = why_not_capturable(exc)
    assert reason == "not captured in a CUDA graph: CUDA error: operation not permitted when stream is capturing"


def test_no_launch_count_off_cuda() -> None:
    assert with_launches(OK, lambda: None, torch.device("cpu")) == OK


# CUDA


def _skip_without_kernels() -> None:
    from linbench.kernels.ops import unavailable_reason

    reason = unavailable_reason(CUDA)
    if reason:
        pytest.skip(f"the compiled kernels cannot run here: {reason}")


@pytest.mark.cuda
@pytest.mark.parametrize("impl", ["chunked", "kernel"])
@pytest.mark.parametrize("mode", ["fwd", "fwdbwd", "bwd"])
def test_a_real_impl_is_captured_and_its_replays_and_launches_measured(impl: str, mode: str) -> None:
    if impl == "kernel":
        _skip_without_kernels()
    result = run_measure(_task(_point("cosine", impl, mode, "cuda", seq=256), cuda_graph=True))
    where = f"cosine:{impl} {mode}: {result.graph_error or result.error}"
    assert result.status == "ok", where
    assert result.cuda_graph is True, where
    # A time, not a comparison with the eager one: timing noise must not fail a test.
    assert result.device_ms is not None and 0 < result.device_ms < float("inf"), where
    assert result.time_ms is not None and result.time_ms > 0, where
    assert isinstance(result.kernels_per_call, int) and result.kernels_per_call > 0, where


@pytest.mark.cuda
def test_the_launch_count_is_the_same_in_every_process_and_counts_a_planted_launch(stand_in: str) -> None:
    plain = [run_measure(_task(_point(stand_in, "plain", device="cuda"))).kernels_per_call for _ in range(2)]
    planted = run_measure(_task(_point(stand_in, "planted", device="cuda"))).kernels_per_call
    assert plain[0] is not None and plain[0] == plain[1] and plain[0] > 0
    assert planted == plain[0] + 1


@pytest.mark.cuda
def test_a_point_that_is_not_asked_to_count_does_not(stand_in: str) -> None:
    result = run_measure(_task(_point(stand_in, "plain", device="cuda"), count_launches=False))
    assert result.status == "ok" and result.kernels_per_call is None


@pytest.mark.cuda
def test_a_call_that_cannot_be_captured_keeps_its_eager_time_and_says_why(stand_in: str) -> None:
    result = run_measure(_task(_point(stand_in, "syncing", device="cuda"), cuda_graph=True))
    assert result.status == "ok" and result.time_ms is not None and result.time_ms > 0
    assert result.cuda_graph is False and result.device_ms is None
    assert result.graph_error is not None and result.graph_error.startswith("not captured in a CUDA graph: ")
    assert "\n" not in result.graph_error
    assert result.kernels_per_call is not None and result.kernels_per_call > 0  # the device still works after


@pytest.mark.cuda
def test_a_failed_capture_leaves_the_callers_stream_current() -> None:
    before = torch.cuda.current_stream(CUDA)
    x = torch.ones(8, device=CUDA)
    result = with_graph(OK, lambda: lambda: x.sum().item(), CUDA, run_graph_policy(FAST))
    assert result.cuda_graph is False
    assert torch.cuda.current_stream(CUDA) == before


@pytest.mark.cuda
def test_a_decode_step_with_cuda_graph_is_replayed_and_its_launches_counted() -> None:
    point = Point("cosine", "recurrent", "decode", True, "fp32", "cuda", Shape(1, 2, 64, 16, 16))
    task = Task(job="measure", point=point, timing=TimingPolicy.for_decode(4), kind=DECODE, cuda_graph=True)
    result = run_measure(task)
    assert result.status == "ok" and result.cuda_graph is True, result.graph_error
    assert result.device_ms is not None and result.device_ms > 0
    assert result.kernels_per_call is not None and result.kernels_per_call > 0
