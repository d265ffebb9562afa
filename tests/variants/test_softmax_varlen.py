"""``softmax:varlen``'s mapping onto torch's varlen_attn, on the CPU with the kernel stood in by
SDPA per sequence: the output equals SDPA's; a batch's boundaries are made once, not copied
from the host in every call; the tokens reach the kernel as views of the (B, S, H, D) inputs
the runner draws for it (``layout="bshd"``), never copied inside the timed call."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
import torch
import torch.nn.functional as F

import linbench
from linbench.variants.softmax import packed as varlen
from linbench.variants.varlen import Segments

B, S, H, D = 3, 24, 2, 8


def stand_in(calls: list[dict[str, Any]]) -> Any:
    """varlen_attn's signature; SDPA on each sequence of the (T, H, D) tokens."""

    def varlen_attn(
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        cu_seq_q: torch.Tensor,
        cu_seq_k: torch.Tensor | None,
        max_q: int,
        max_k: int,
        *,
        window_size: tuple[int, int] = (-1, -1),
    ) -> torch.Tensor:
        calls.append({"query": query, "key": key, "value": value, "cu_seq_q": cu_seq_q, "max_q": max_q})
        assert cu_seq_q.dtype == torch.int32 and cu_seq_k is cu_seq_q and max_k == max_q
        bounds = cu_seq_q.tolist()
        parts = []
        for start, end in itertools.pairwise(bounds):
            q, k, v = (x[start:end].transpose(0, 1) for x in (query, key, value))
            parts.append(F.scaled_dot_product_attention(q, k, v, is_causal=window_size == (-1, 0)).transpose(0, 1))
        return torch.cat(parts)

    return varlen_attn


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    made: list[dict[str, Any]] = []
    monkeypatch.setattr(varlen, "varlen_kernel", lambda: stand_in(made))
    monkeypatch.setattr(varlen, "varlen_unavailable", lambda device: None)  # the CPU stands in for a GPU
    return made


def drawn_as_the_runner_draws(seed: int = 0) -> list[torch.Tensor]:
    """(B, H, S, D) views of (B, S, H, D) tensors, as runner/workload.py draws a bshd impl's inputs."""
    assert linbench.get_variant("softmax").impl("varlen").layout == "bshd"
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(B, S, H, D, generator=gen).transpose(1, 2) for _ in range(3)]


@pytest.mark.parametrize("causal", [True, False])
def test_a_batch_is_sdpa_on_each_sequence_its_tokens_views_and_its_boundaries_made_once(
    calls: list[dict[str, Any]], causal: bool
) -> None:
    q, k, v = drawn_as_the_runner_draws()
    first = varlen.varlen_uniform(q, k, v, causal=causal)
    second = varlen.varlen_uniform(q, k, v, causal=causal)
    torch.testing.assert_close(first, F.scaled_dot_product_attention(q, k, v, is_causal=causal))
    assert torch.equal(first, second)
    assert calls[1]["cu_seq_q"] is calls[0]["cu_seq_q"]  # made in the first call, read back after
    assert calls[0]["cu_seq_q"].tolist() == list(range(0, B * S + 1, S)) and calls[0]["max_q"] == S
    for name, x in zip(("query", "key", "value"), (q, k, v), strict=True):
        assert calls[1][name].data_ptr() == x.data_ptr() and calls[1][name].shape == (B * S, H, D)  # a view


def test_a_pack_hands_its_tokens_and_its_own_boundaries(calls: list[dict[str, Any]]) -> None:
    segments = Segments.from_lengths([5, 17, 2])
    gen = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(1, segments.total, H, D, generator=gen).transpose(1, 2) for _ in range(3))
    out = varlen.varlen_packed(q, k, v, segments=segments, causal=True)
    want = torch.cat(
        [
            F.scaled_dot_product_attention(a, b, c, is_causal=True)
            for a, b, c in zip(*map(segments.split, (q, k, v)), strict=True)
        ],
        dim=2,
    )
    torch.testing.assert_close(out, want)
    assert calls[0]["cu_seq_q"] is segments.cu_seqlens(q.device, torch.int32) and calls[0]["max_q"] == 17
    assert calls[0]["query"].data_ptr() == q.data_ptr()


def test_without_a_cuda_gpu_the_call_says_why() -> None:
    q = torch.zeros(1, H, 4, D)
    with pytest.raises(linbench.ImplUnavailableError, match="CUDA"):
        varlen.varlen_uniform(q, q, q, causal=True)
