"""Counting the launches of one call: None off CUDA; the counting rule on the events a
profiler reports; on CUDA, exact counts of known ops, the same count on every call, and
one planted launch counted as one."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from torch.autograd import DeviceType

from linbench.api import attention
from linbench.measure.launches import MARKERS, LaunchCountError, count_kernel_launches, launches_in

CUDA = torch.device("cuda", 0)


def test_off_cuda_there_is_no_count_and_the_call_does_not_run() -> None:
    calls: list[int] = []
    assert count_kernel_launches(lambda: calls.append(1), torch.device("cpu")) is None
    assert calls == []


@pytest.mark.cuda
def test_known_ops_count_one_launch_each_copies_and_fills_included() -> None:
    a, b, c = (torch.randn(1 << 16, device=CUDA) for _ in range(3))

    def three() -> None:
        torch.add(a, b, out=c)  # one elementwise kernel
        c.copy_(a)  # a device-to-device copy (a memcpy or a copy kernel: one launch either way)
        c.zero_()  # a fill

    assert count_kernel_launches(three, CUDA) == 3


def _stand_in(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return attention(q, k, v, variant="cosine", impl="chunked", causal=True)


def _planted(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return _stand_in(q, k, v).neg_()  # one launch more


@pytest.mark.cuda
def test_a_call_counts_the_same_every_time_and_one_planted_launch_shows() -> None:
    q, k, v = (torch.randn(1, 2, 256, 32, device=CUDA) for _ in range(3))
    with torch.no_grad():
        first = count_kernel_launches(lambda: _stand_in(q, k, v), CUDA)
        again = count_kernel_launches(lambda: _stand_in(q, k, v), CUDA)
        planted = count_kernel_launches(lambda: _planted(q, k, v), CUDA)
    assert first is not None and first > 0
    assert again == first
    assert planted == first + 1


@pytest.mark.cuda
def test_the_backward_launched_by_autograd_is_counted() -> None:
    q, k, v = (torch.randn(1, 2, 256, 32, device=CUDA, requires_grad=True) for _ in range(3))
    grad = torch.randn(1, 2, 256, 32, device=CUDA)

    def forward() -> None:
        with torch.no_grad():
            _stand_in(q, k, v)

    def forward_backward() -> None:
        torch.autograd.grad(_stand_in(q, k, v), (q, k, v), grad)

    fwd = count_kernel_launches(forward, CUDA)
    fwdbwd = count_kernel_launches(forward_backward, CUDA)
    assert fwd is not None and fwdbwd is not None
    assert fwdbwd > fwd > 0


def _event(name: str, device_type: DeviceType = DeviceType.CUDA, annotation: bool = False) -> SimpleNamespace:
    """What the profiler's FunctionEvent says of itself, for the counting rule alone."""
    return SimpleNamespace(name=name, device_type=device_type, is_user_annotation=annotation)


MARKER = _event("at::cuda::(anonymous namespace)::spin_kernel(long)")


def test_kernels_copies_and_fills_count_and_host_annotations_and_syncs_do_not() -> None:
    events = [
        *[MARKER] * MARKERS,
        _event("void at::native::vectorized_elementwise_kernel<4, ...>"),
        _event("Memcpy DtoD (Device -> Device)"),
        _event("Memset (Device)"),
        _event("aten::add", DeviceType.CPU),
        _event("cudaLaunchKernel", DeviceType.CPU),
        _event("my_range", annotation=True),
        _event("Context Sync"),
    ]
    assert launches_in(events) == 3


def test_a_trace_that_lost_some_markers_still_counts_the_call() -> None:
    assert launches_in([MARKER, _event("kernel_a"), _event("kernel_b")]) == 2


def test_a_trace_that_lost_every_marker_is_refused() -> None:
    with pytest.raises(LaunchCountError, match="lost its first"):
        launches_in([_event("kernel_a")])
