"""run --tokens: a fixed token budget, each point's batch = tokens / seq."""

from __future__ import annotations

from pathlib import Path

import pytest

from linbench.measure.timing_policy import TimingPolicy
from linbench.runner.policy import SkipPolicy
from linbench.shape import Shape
from linbench.sweep.points import Point, expand_points
from linbench.sweep.request import SweepRequest
from linbench.sweep.spec import SpecError, build_spec


def shapes(spec_flags: dict[str, object], suite: Path | None = None) -> list[tuple[int, int]]:
    spec = build_spec(SweepRequest.from_settings(spec_flags, suite=suite))
    points = expand_points(spec.blocks, [("cosine", "chunked")], "cpu")
    return [(p.shape.batch, p.shape.seq) for p in points]


def test_the_batch_is_the_budget_over_the_length_shortest_first() -> None:
    assert shapes({"tokens": "64k", "seq": "1k..16k"}) == [(64, 1024), (32, 2048), (16, 4096), (8, 8192), (4, 16384)]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"tokens": "64k", "seq": "3000"}, "tokens: 65536 is not a multiple of seq 3000"),
        ({"tokens": "4k", "seq": "1k..8k"}, "tokens: 4096 is shorter than seq 8192: the batch would be 0"),
        ({"tokens": "64k", "batch": "2"}, "--tokens sets each point's batch"),
        ({"tokens": "0"}, "tokens:"),
    ],
)
def test_budgets_that_do_not_divide_are_refused(flags: dict[str, object], message: str) -> None:
    with pytest.raises(SpecError) as error:
        build_spec(SweepRequest.from_settings(flags))
    assert message in str(error.value)


def test_flags_override_a_suite_either_way(tmp_path: Path) -> None:
    with_batch = tmp_path / "batch.toml"
    with_batch.write_text('seq = "1k,2k"\nbatch = 4\n')
    assert shapes({"tokens": "8k"}, with_batch) == [(8, 1024), (4, 2048)]
    with_tokens = tmp_path / "tokens.toml"
    with_tokens.write_text('seq = "1k,2k"\ntokens = "8k"\n')
    assert shapes({}, with_tokens) == [(8, 1024), (4, 2048)]
    assert shapes({"batch": "2"}, with_tokens) == [(2, 1024), (2, 2048)]
    both = tmp_path / "both.toml"
    both.write_text('seq = "1k,2k"\ntokens = "8k"\n[[sweep]]\nbatch = 2\n')
    with pytest.raises(SpecError, match="a suite with tokens takes no batch"):
        build_spec(SweepRequest(suite=both))


def _point(batch: int, seq: int) -> Point:
    return Point("softmax", "naive", "fwd", True, "fp32", "cpu", Shape(batch, 8, seq, 64, 64))


def test_the_skip_policy_follows_one_budget_across_batch_sizes() -> None:
    policy = SkipPolicy(timeout_s=120, timing=TimingPolicy.for_device("cpu"), fixed_tokens=True)
    # softmax at a fixed budget: the work per call grows as seq (s² per sequence, s^-1 sequences).
    for batch, seq, ms in ((16, 1024, 100.0), (8, 2048, 200.0), (4, 4096, 400.0)):
        policy.record(_point(batch, seq), {"status": "ok", "time_ms": ms, "time_ms_p20": ms, "time_ms_p80": ms})
    prediction = policy.prediction(_point(2, 8192))
    assert prediction is not None and prediction.points == 3
    assert prediction.exponent == pytest.approx(1.0) and prediction.call_s == pytest.approx(0.8)
    policy.record(_point(2, 8192), {"status": "oom"})
    reason = policy.skip_reason(_point(1, 16384))
    assert reason is not None and "ran out of memory" in reason  # a longer point of the same budget
    assert policy.skip_reason(_point(4, 4096)) is None
