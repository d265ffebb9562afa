"""Bad tensors raise ValueError naming the shapes; nothing is broadcast or cast silently."""

from __future__ import annotations

import pytest
import torch

import linbench


def _t(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(*shape, dtype=dtype)


@pytest.mark.parametrize(
    ("q", "k", "v", "match"),
    [
        (_t(2, 9, 8), _t(2, 9, 8), _t(2, 9, 8), r"must be 4-D .* got q \(2, 9, 8\)"),
        (_t(1, 2, 9, 8), _t(1, 2, 10, 8), _t(1, 2, 9, 8), r"agree in batch and sequence .* k \(1, 2, 10, 8\)"),
        (_t(1, 2, 9, 8), _t(1, 1, 9, 8), _t(1, 2, 9, 8), r"\(GVA\) and fewer k heads .* k \(1, 1, 9, 8\)"),
        (_t(1, 2, 9, 8), _t(1, 2, 9, 8), _t(1, 3, 9, 8), r"as many heads as k, or a multiple .* v \(1, 3, 9, 8\)"),
        (_t(1, 2, 9, 8), _t(1, 3, 9, 8), _t(1, 3, 9, 8), r"heads H_kv dividing q's heads H; .* k \(1, 3, 9, 8\)"),
        (_t(1, 3, 9, 8), _t(1, 2, 9, 8), _t(1, 2, 9, 8), r"dividing q's heads H; got q \(1, 3, 9, 8\)"),
        (_t(1, 2, 9, 8), _t(1, 4, 9, 8), _t(1, 4, 9, 8), r"dividing q's heads H"),
        (_t(2, 2, 9, 8), _t(1, 2, 9, 8), _t(2, 2, 9, 8), r"agree in batch and sequence"),
        (_t(1, 2, 9, 8), _t(1, 2, 9, 8), _t(1, 2, 8, 8), r"v \(1, 2, 8, 8\)"),
        (
            _t(1, 2, 9, 8),
            _t(1, 2, 9, 16),
            _t(1, 2, 9, 8),
            r"same head dimension Dk; got q \(1, 2, 9, 8\), k \(1, 2, 9, 16\)",
        ),
        (_t(1, 2, 0, 8), _t(1, 2, 0, 8), _t(1, 2, 0, 8), r"at least 1"),
        (_t(1, 2, 9, 8), _t(1, 2, 9, 8, dtype=torch.float64), _t(1, 2, 9, 8), r"share one dtype"),
        (torch.ones(1, 2, 9, 8, dtype=torch.long),) * 3 + (r"floating point",),
    ],
)
@pytest.mark.parametrize("variant", ["softmax", "cosine", "heinsen"])
def test_bad_shapes_raise(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, match: str, variant: str) -> None:
    with pytest.raises(ValueError, match=match):
        linbench.attention(q, k, v, variant=variant)


def test_unknown_variant_lists_variants() -> None:
    q = _t(1, 1, 4, 8)
    with pytest.raises(
        ValueError, match="unknown variant 'cosin'; variants: softmax, cosine, cosformer, heinsen, linear"
    ):
        linbench.attention(q, q, q, variant="cosin")


def test_unknown_impl_lists_impls() -> None:
    q = _t(1, 1, 4, 8)
    with pytest.raises(
        ValueError, match="variant 'cosine' has no impl 'fast'; impls: quadratic, naive, chunked, recurrent"
    ):
        linbench.attention(q, q, q, variant="cosine", impl="fast")


def test_unknown_parameter_lists_parameters() -> None:
    q = _t(1, 1, 4, 8)
    with pytest.raises(
        ValueError, match=r"unknown parameter\(s\) norm for cosine:chunked; it takes: chunk_size, norm_const, seq_len"
    ):
        linbench.attention(q, q, q, variant="cosine", norm=1.0)
