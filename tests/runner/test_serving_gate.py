"""A serving decode point's value heads and its gate on the served path (CPU, tiny shapes, in
this process): the state per request is per value head, and the gate fails a served path that
draws v at the q/k heads."""

from __future__ import annotations

import pytest
import torch

from linbench.check.correctness import CaseResult
from linbench.measure.timing_policy import TimingPolicy
from linbench.runner.decode_kind import DECODE
from linbench.runner.kind_protocol import Task
from linbench.runner.serving_workload import ServingWorkload
from linbench.shape import Shape
from linbench.sweep.points import Point
from linbench.sweep.serving import Serving
from linbench.variants.extra_inputs import draw_extra_inputs
from linbench.variants.serving import Tokens

CPU = torch.device("cpu")
HEADS, V_HEADS, DIM = 2, 4, 8


def _point(variant: str, tokens_per_step: int = 1, accept: str = "all", state_dtype: str | None = None) -> Point:
    shape = Shape(2, HEADS, 10, DIM, DIM, v_heads=V_HEADS)
    serving = Serving(pool=5, accept=accept)
    return Point(
        variant, "recurrent", "decode", True, "fp32", "cpu", shape,
        tokens_per_step=tokens_per_step, state_dtype=state_dtype, serving=serving,
    )  # fmt: skip


@pytest.mark.parametrize("variant", ["gated-deltanet", "kda"])
def test_a_served_request_keeps_a_state_per_value_head(variant: str) -> None:
    """HV × Dk × Dv fp32 values a request (Qwen3-Next's 32 value heads: 2 MiB at TP1, not the
    64 KiB of its 16 q/k heads), and one output head per value head."""
    work = ServingWorkload(_point(variant), CPU, steps=2)
    with torch.no_grad():
        work.prefill()
        out = work.step()
    assert work.readings()["state_bytes_per_request"] == V_HEADS * DIM * DIM * 4
    assert work.server.held_bytes == 5 * V_HEADS * DIM * DIM * 4
    assert out.shape == (2, V_HEADS, 1, DIM)


def _gate(point: Point) -> CaseResult:
    return DECODE.check(Task(job="gate", point=point, timing=TimingPolicy.for_decode(2), kind=DECODE, seed=1))


@pytest.mark.parametrize(
    ("variant", "tokens", "accept", "state_dtype"),
    [("gated-deltanet", 3, "0.5", "bf16"), ("kda", 2, "1", None)],
)
def test_the_gate_checks_a_serving_point_on_its_served_path(
    variant: str, tokens: int, accept: str, state_dtype: str | None
) -> None:
    result = _gate(_point(variant, tokens, accept, state_dtype))
    assert result.ok, result.describe()
    assert [c.name for c in result.comparisons] == ["decoded rows", "served rows"]
    assert f"served T{tokens} accept {accept}" in result.setting


def test_the_gate_fails_a_served_path_that_draws_v_at_the_q_heads(monkeypatch: pytest.MonkeyPatch) -> None:
    """The draw before value heads reached serving: v (and β, the gates) at the q/k heads. The
    plain decode gate passes such a point; the served check does not."""

    def draw_one_value_head_per_q_head(
        self: ServingWorkload, batch: int, length: int, dtype: torch.dtype | None = None
    ) -> Tokens:
        shape, dtype = self.point.shape, dtype or self.dtype

        def one(heads: int, dim: int) -> torch.Tensor:
            return torch.randn(batch, heads, length, dim, generator=self._gen, dtype=dtype)

        q, k, v = one(shape.heads, shape.dim_k), one(self.kv_heads, shape.dim_k), one(self.kv_heads, shape.dim_v)
        sizes = (batch, shape.heads, length, shape.dim_k)
        extras = draw_extra_inputs(self.declared, sizes, generator=self._extra_gen, device=CPU, dtype=dtype)
        return q, k, v, extras

    monkeypatch.setattr(ServingWorkload, "_draw", draw_one_value_head_per_q_head)
    result = _gate(_point("gated-deltanet"))
    assert not result.ok
    assert result.error is not None and f"served outputs have {HEADS} heads" in result.error
