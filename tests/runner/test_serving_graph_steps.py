"""The steps a serving point's CUDA graphs capture, emulated eagerly on the CPU: one over each
rotating pool, each advancing its own pool alone; and how many pools a rotation needs."""

from __future__ import annotations

import pytest
import torch

from linbench.runner.serving_workload import ServingWorkload
from linbench.shape import Shape
from linbench.sweep.points import Point
from linbench.sweep.serving import Serving
from linbench.variants.serving import rotations_to_miss_l2


def _work(accept: str = "2", variant: str = "kda") -> ServingWorkload:
    serving = Serving(pool=5, accept=accept)
    point = Point(
        variant, "recurrent", "decode", True, "fp32", "cpu", Shape(3, 2, 8, 8, 8), tokens_per_step=4, serving=serving
    )
    work = ServingWorkload(point, torch.device("cpu"), 3)
    work.prefill()
    return work


def test_each_rotating_step_gathers_steps_and_writes_back_its_own_pool_alone() -> None:
    work = _work()
    steps = work.graph_steps(3)
    assert work.server.pool is not None
    pools = [work.server.pool.tensors["matrix"]]
    before = pools[0].clone()
    steps[1]()  # a copy's step: the server's own pool is untouched
    assert torch.equal(work.server.pool.tensors["matrix"], before)
    steps[0]()
    after = work.server.pool.tensors["matrix"]
    used = work.server.slots
    assert not torch.equal(after[used], before[used])  # the requests' slots were written back
    free = sorted(set(range(5)) - set(used.tolist()))
    assert torch.equal(after[free], before[free])  # the slots no request holds were not


@pytest.mark.parametrize(("accept", "variant", "why"), [("0.5", "kda", "accept rate"), ("2", "cosformer", "position")])
def test_a_step_that_is_not_one_graph_says_why(accept: str, variant: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        _work(accept, variant).graph_steps(2)


def test_enough_pools_rotate_that_the_others_hold_twice_the_l2() -> None:
    assert rotations_to_miss_l2(pool_bytes=10 << 20, l2_bytes=50 << 20, free_bytes=80 << 30) == 11
    assert rotations_to_miss_l2(pool_bytes=1 << 30, l2_bytes=50 << 20, free_bytes=80 << 30) == 2
    assert rotations_to_miss_l2(pool_bytes=4096, l2_bytes=50 << 20, free_bytes=80 << 30) == 256
    assert rotations_to_miss_l2(pool_bytes=10 << 20, l2_bytes=50 << 20, free_bytes=100 << 20) == 2


@pytest.mark.cuda
def test_on_cuda_the_rotating_steps_are_captured_and_replayed_in_turn() -> None:
    from linbench.measure.timing_policy import TimingPolicy
    from linbench.results.processes import ProcessResult
    from linbench.runner.execute_gpu import decode_graph_policy, with_rotating_graphs

    serving = Serving(pool=64, accept="2")
    shape = Shape(32, 4, 64, 64, 64)
    point = Point("kda", "recurrent", "decode", True, "bf16", "cuda", shape, tokens_per_step=4, serving=serving)
    work = ServingWorkload(point, torch.device("cuda"), 3)
    with torch.no_grad():
        work.prefill()
        steps = work.graph_steps(3)
        policy = decode_graph_policy(TimingPolicy.for_decode(8))
        result = with_rotating_graphs(ProcessResult("ok"), steps, torch.device("cuda"), policy)
    assert result.cuda_graph, result.graph_error
    assert result.graph_pools == 3 and result.device_ms is not None and result.device_ms > 0
