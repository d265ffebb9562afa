"""Error against length (linbench/check/accuracy.py): the fp64 answer it measures against. CPU."""

from __future__ import annotations

import pytest
import torch

from linbench.check import accuracy
from linbench.check.accuracy import error_at_length, reference_at
from linbench.shape import Shape
from linbench.variants.registry import get_variant

CPU = torch.device("cpu")


def test_the_reference_answers_while_its_scores_fit_then_a_memory_light_impl(monkeypatch: pytest.MonkeyPatch) -> None:
    softmax, cosine = get_variant("softmax"), get_variant("cosine")
    assert reference_at(softmax, Shape(1, 2, 64, 8, 8), CPU) == "naive"
    monkeypatch.setattr(accuracy, "REFERENCE_BYTES", 1024)
    assert reference_at(softmax, Shape(1, 2, 64, 8, 8), CPU) == "sdpa"
    assert reference_at(cosine, Shape(1, 2, 64, 8, 8), CPU) == "chunked"


def test_the_memory_light_answer_agrees_with_the_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    shape = Shape(1, 2, 300, 8, 8)
    for name in ("softmax", "cosine"):
        variant = get_variant(name)
        kw = {"dtype": torch.float64, "dtype_name": "fp64", "causal": True, "device": CPU}
        _, exact = error_at_length(variant, variant.reference, shape, **kw)
        monkeypatch.setattr(accuracy, "REFERENCE_BYTES", 0)
        result, light = error_at_length(variant, variant.reference, shape, **kw)
        monkeypatch.undo()
        assert result.reference != variant.reference
        assert light is not None and exact is not None
        assert torch.allclose(light, exact, rtol=1e-12, atol=1e-12)


def test_an_impl_that_raises_is_a_row_saying_why() -> None:
    variant = get_variant("softmax")
    kw = {"dtype": torch.float32, "dtype_name": "fp32", "causal": True, "device": CPU}
    result, _ = error_at_length(variant, "sdpa-cudnn", Shape(1, 2, 16, 8, 8), **kw)
    assert result.error and result.rel_err != result.rel_err  # NaN: nothing measured
