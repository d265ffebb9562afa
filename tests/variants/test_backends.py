"""results.csv's ``backend``: which library and kernel answered a call (CPU; fla stood in)."""

from __future__ import annotations

import pytest
import torch
from fla_stand_ins import Kernels

import linbench
from linbench.measure.timing_policy import TimingPolicy
from linbench.runner.execute import run_measure
from linbench.runner.kind_protocol import Task
from linbench.runner.kinds import RUN
from linbench.shape import Shape
from linbench.sweep.points import Point
from linbench.variants import backends
from linbench.variants.feature_forms import fla as fla_common
from linbench.variants.gated import fla as gated_fla

TIMING = TimingPolicy.for_device("cpu", budget_s=0.01)
SHAPE = Shape(1, 2, 16, 8, 8)


def _measured_backend(variant: str, impl: str) -> str | None:
    point = Point(variant, impl, "fwd", True, "fp32", "cpu", SHAPE)
    result = run_measure(Task(job="measure", point=point, timing=TIMING, kind=RUN, threads=1))
    assert result.status == "ok", result.error
    return result.backend


def test_a_row_names_sdpa_s_pinned_backend_and_the_one_torch_picks() -> None:
    assert _measured_backend("softmax", "sdpa-math") == "torch sdpa math"
    # On a CPU torch picks its flash kernel for causal fp32 attention with equal head dims.
    assert _measured_backend("softmax", "sdpa") == "torch sdpa flash"


def test_an_impl_that_notes_nothing_runs_what_it_declares() -> None:
    assert _measured_backend("cosine", "recurrent") == "torch eager"
    assert backends.declared_backend(linbench.get_variant("cosine").impl("kernel")) == "linbench csrc"
    assert backends.declared_backend(linbench.get_variant("cosine").impl("compiled")) == "torch compile (inductor)"
    assert backends.declared_backend(None) == "torch eager"


def test_an_earlier_call_s_note_is_not_the_point_s(monkeypatch: pytest.MonkeyPatch) -> None:
    backends.note_backend("fla-triton chunk_gla")  # a check run earlier in the worker
    assert _measured_backend("cosine", "recurrent") == "torch eager"


def test_an_fla_row_names_fla_s_own_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """Dispatch off: the kernel named is fla's Triton one, by the name linbench called."""
    fake = Kernels()
    monkeypatch.setattr(gated_fla, "fla_kernel", fake.lookup)
    monkeypatch.setattr(fla_common, "fla_unavailable", lambda *args: None)
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    assert _measured_backend("gated-deltanet", "fla") == "fla-triton chunk_gated_delta_rule"
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    q = torch.randn(1, 2, 8, 8)
    linbench.attention(q, q, q, variant="gla", impl="fla", g=torch.zeros(1, 2, 8, 8))
    assert backends.take_noted() == "fla-triton (interpreted) chunk_gla"
