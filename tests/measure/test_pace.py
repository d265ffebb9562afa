"""The machine's pace (CPU): a fixed reference call, timed beside each repetition only where
the gate judges CPU time, one torch thread on a CPU."""

from __future__ import annotations

import torch

from linbench.measure.pace import Pace, paced


def test_only_one_thread_cpu_repetitions_are_paced() -> None:
    assert paced(1, "cpu")
    assert not paced(2, "cpu")  # a pool's spinning threads: CPU time is not the gate's figure
    assert not paced(1, "cuda")


def test_the_reference_does_the_same_work_every_call_into_its_own_buffers() -> None:
    pace = Pace()
    pace()
    first = pace._out.clone()
    pointer = pace._out.data_ptr()
    pace()
    assert torch.equal(first, pace._out) and pace._out.data_ptr() == pointer
    assert torch.allclose(pace._out, (pace._q @ pace._q.transpose(-1, -2)) @ pace._q, rtol=1e-5, atol=1e-5)
