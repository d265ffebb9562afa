"""The fla impls on packs: fla's cu_seqlens where the installed chunk_linear_attn takes them,
against a stand-in for fla's kernel (fla's Triton kernels need a GPU). CPU."""

from __future__ import annotations

import itertools

import pytest
import torch

import linbench
from linbench.check.packed import check_packed
from linbench.variants.feature_forms import fla

FLA_EPS = 1e-10


def varlen_stand_in(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    scale: float | None = None,
    normalize: bool = True,
    cu_seqlens: torch.Tensor | None = None,
) -> tuple[torch.Tensor, None]:
    """fla's chunk_linear_attn in plain PyTorch on (B, S, H, D), each cu_seqlens sequence alone."""
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    ends = cu_seqlens.tolist() if cu_seqlens is not None else [0, q.shape[1]]
    outs = []
    for start, end in itertools.pairwise(ends):
        qh, kh, vh = (t[:, start:end].transpose(1, 2) for t in (q, k, v))
        scores = ((qh * scale) @ kh.transpose(-1, -2)).tril()
        out = scores @ vh
        if normalize:
            out = out / (scores.sum(-1, keepdim=True) + FLA_EPS)
        outs.append(out.transpose(1, 2))
    return torch.cat(outs, dim=1), None


@pytest.mark.parametrize("name", ["cosine", "linear"])
def test_fla_runs_a_pack_through_cu_seqlens(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    calls: list[object] = []

    def kernel(
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        scale: float | None = None,
        normalize: bool = True,
        cu_seqlens: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, None]:
        calls.append(cu_seqlens)
        return varlen_stand_in(q, k, v, scale, normalize, cu_seqlens)

    monkeypatch.setattr(fla, "chunk_linear_attn", lambda: kernel)
    monkeypatch.setattr(fla, "fla_unavailable", lambda device: None)
    variant = linbench.get_variant(name)
    result = check_packed(variant, "fla", (1, 7, 100, 513), 2, 8, 8, packing="packed", causal=True, dtype=torch.float32)
    assert result.ok, result.describe()
    assert calls and all(c is not None and c.tolist() == [0, 1, 8, 108, 621] for c in calls)


def test_an_fla_without_cu_seqlens_says_it_runs_packs_padded(monkeypatch: pytest.MonkeyPatch) -> None:
    def old_kernel(
        q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float | None = None, normalize: bool = True
    ):  # type: ignore[no-untyped-def]
        return varlen_stand_in(q, k, v, scale, normalize)

    monkeypatch.setattr(fla, "chunk_linear_attn", lambda: old_kernel)
    monkeypatch.setattr(fla, "fla_unavailable", lambda device: None)
    result = check_packed(linbench.get_variant("cosine"), "fla", (3, 5), 2, 8, 8, packing="packed", causal=True)
    assert result.unavailable and "takes no cu_seqlens" in result.unavailable
