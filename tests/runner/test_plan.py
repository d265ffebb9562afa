"""A plan's facts of every point (CPU, no run): the tensor parallelism its rows record."""

from __future__ import annotations

import pytest
import torch

from linbench.runner.plan import make_plan
from linbench.sweep.request import SweepRequest
from linbench.sweep.spec import build_spec

CPU = torch.device("cpu")


@pytest.mark.parametrize(
    ("request_", "tp"),
    [
        (SweepRequest(command="decode", preset="qwen3-next-80b", tp=8, context="256", device="cpu"), 8),
        (SweepRequest(preset="llama3-8b", seq=256, variants=("cosine:chunked",), device="cpu"), 1),
        (SweepRequest(seq=256, variants=("cosine:chunked",), device="cpu"), None),
    ],
    ids=["preset-tp8", "preset-without-tp", "no-preset"],
)
def test_every_row_records_the_tp_its_heads_are_one_rank_s_shard_of(request_: SweepRequest, tp: int | None) -> None:
    plan = make_plan(build_spec(request_), CPU, "test cpu")
    assert plan.points and {plan.facts[point].columns()["tp"] for point in plan.points} == {tp}
