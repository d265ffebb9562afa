"""A pack run's kind: what the estimate takes a pack call to cost (CPU, nothing runs)."""

from __future__ import annotations

from dataclasses import replace

import torch

from linbench.runner.pack_kind import PackKind
from linbench.runner.plan import make_plan
from linbench.runner.run_kind import call_flops
from linbench.sweep import estimate
from linbench.sweep.request import SweepRequest
from linbench.sweep.spec import build_spec


def test_a_packed_quadratic_form_is_estimated_at_its_s_by_s_work_per_sequence() -> None:
    """kda:quadratic packed computes each sequence's S×S product (linbench/variants/gated/
    packed.py), not kda's linear count: at the pack's 9 sequences its call is estimated as the
    sum of their quadratic FLOPs (it was kda's linear count, which put a packed call far under the
    time limit it then ran into)."""
    request = SweepRequest(
        pack="lognormal:mean=1k", tokens=(8192,), variants=("kda:quadratic",), no_against=True, device="cpu"
    )
    plan = make_plan(build_spec(request), torch.device("cpu"), "test cpu")
    kind = plan.kind
    assert isinstance(kind, PackKind)
    packed = next(point for point in plan.points if point.packing == "packed")
    each = [replace(packed, shape=replace(packed.shape, batch=1, seq=n)) for n in kind.pack.lengths]
    flops = sum(call_flops(point) for point in each)
    assert flops > 10 * kind.useful_flops(packed)  # the S×S work, not the variant's linear count
    assert kind.call_s(packed) == estimate.call_seconds(packed, flops, estimate.form_rate(packed))
