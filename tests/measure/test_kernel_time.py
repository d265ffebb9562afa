"""The kernels' own device time of a call, read from profiler records (fakes on the CPU; the
real profiler on CUDA, marked ``cuda``)."""

from __future__ import annotations

import pytest
import torch

from linbench.measure.kernel_time import Record, calls_in, kernel_time, measure_kernel_time, short_name
from linbench.measure.launches import LaunchCountError

MARK = "at::cuda::(anonymous namespace)::spin_kernel(long)"


def _trace(*calls: list[tuple[str, float]], lead: int = 2) -> list[Record]:
    """Records as a session writes them: ``lead`` markers, then per call a fill (the L2 flush,
    outside the markers), an opening marker, the call's kernels and a closing marker."""
    records, t = [], 0.0
    for _ in range(lead):
        records.append(Record(MARK, t, 1.0))
        t += 10
    for call in calls:
        for name, duration in [("void at::native::vectorized_elementwise_kernel<4, FillFunctor>", 50.0), (MARK, 1.0)]:
            records.append(Record(name, t, duration))
            t += 10
        for name, duration in call:  # one stream: each kernel starts after the last ends
            records.append(Record(name, t, duration))
            t += duration + 10
        records.append(Record(MARK, t, 1.0))
        t += 10
    return records[::-1]  # the profiler's order is not time order


def test_a_call_s_kernels_are_those_between_its_markers_and_their_times_add_up() -> None:
    calls = calls_in(_trace([("gemm", 100.0), ("softmax", 20.0)], [("gemm", 110.0), ("softmax", 30.0)], []))
    assert [[r.name for r in call] for call in calls] == [["gemm", "softmax"], ["gemm", "softmax"], []]
    split = kernel_time(calls)
    assert split.kernel_ms == pytest.approx(0.12)  # the median of 0.12, 0.14 and 0 ms
    assert split.names == ("gemm", "softmax")


def test_kernels_that_overlap_on_two_streams_count_once() -> None:
    """A library that runs two kernels at once on two streams keeps the device busy for the
    union of their intervals, not their sum (which could exceed the call's own time)."""
    overlapping = [Record("main", 0.0, 100.0), Record("side", 40.0, 100.0), Record("tail", 300.0, 10.0)]
    assert kernel_time([overlapping]).kernel_ms == pytest.approx(0.15)  # 0-140 µs busy, then 10 µs
    nested = [Record("long", 0.0, 100.0), Record("inside", 20.0, 30.0)]
    assert kernel_time([nested]).kernel_ms == pytest.approx(0.1)


def test_a_trace_that_lost_its_head_or_a_closing_marker_is_refused() -> None:
    with pytest.raises(LaunchCountError, match="lost"):
        calls_in([Record("fill", 0.0, 1.0), Record("gemm", 10.0, 1.0), Record(MARK, 20.0, 1.0)])
    with pytest.raises(LaunchCountError, match="closing"):
        calls_in(sorted(_trace([("gemm", 1.0)]), key=lambda r: r.start_us)[:-1])
    with pytest.raises(LaunchCountError):
        kernel_time([])


def test_kernel_names_lose_their_template_arguments_and_signature() -> None:
    assert short_name("void at::native::vectorized_elementwise_kernel<4, FillFunctor>(int, F)") == (
        "at::native::vectorized_elementwise_kernel"
    )
    assert (
        short_name("chunk_gated_delta_rule_fwd_kernel_h_blockdim64") == "chunk_gated_delta_rule_fwd_kernel_h_blockdim64"
    )


def test_off_cuda_nothing_is_read_and_the_call_does_not_run() -> None:
    ran: list[int] = []
    assert measure_kernel_time(lambda: ran.append(1), torch.device("cpu")) is None
    assert not ran


@pytest.mark.cuda
def test_a_matmul_s_kernel_time_is_below_its_event_time_and_names_a_gemm() -> None:
    device = torch.device("cuda", 0)
    a = torch.randn(2048, 2048, device=device)
    split = measure_kernel_time(lambda: a @ a, device)
    assert split is not None and 0 < split.kernel_ms < 100
    assert any("gemm" in name.lower() or "sm90" in name.lower() or "cutlass" in name.lower() for name in split.names)
