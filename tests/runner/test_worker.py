"""The worker process's task entry (CPU, in this process): what it refuses to time."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

from linbench.check.correctness import Shape
from linbench.measure.timing_policy import TimingPolicy
from linbench.runner import worker
from linbench.runner.kind_protocol import Task
from linbench.runner.kinds import RUN
from linbench.sweep.points import Point
from linbench.variants.feature_forms import autotune_pin


@pytest.fixture
def task() -> Iterator[Task]:
    """A tiny CPU point to measure; torch's thread count as it was afterwards (the task sets one)."""
    threads = torch.get_num_threads()
    point = Point("cosine", "recurrent", "fwd", True, "fp32", "cpu", Shape(1, 2, 16, 8, 8))
    yield Task(job="measure", point=point, timing=TimingPolicy.for_device("cpu", budget_s=0.01), kind=RUN, threads=1)
    torch.set_num_threads(threads)
    autotune_pin.unpin()


def test_a_timing_process_never_honours_check_s_one_config_variable(
    monkeypatch: pytest.MonkeyPatch, task: Task
) -> None:
    """LINBENCH_CHECK_ONE_CONFIG is `linbench check`'s alone: set in a worker's environment,
    it pins nothing, and the point is measured with Triton's own tuning."""
    monkeypatch.setenv(autotune_pin.ENV, "1")
    result = worker._run(task)
    assert result.status == "ok", result.error
    assert not autotune_pin.pinned()


def test_a_process_whose_autotuner_is_pinned_refuses_to_time(task: Task) -> None:
    """Were the pin installed in a process that times (a fork of one that checked), the
    point is refused with the reason, not timed with untuned kernels."""
    pytest.importorskip("triton")
    assert autotune_pin.pin_first_config()
    with pytest.raises(RuntimeError, match="pinned to first configs"):
        worker._run(task)
