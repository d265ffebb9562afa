"""Packed batches' boundaries, padding a pack, and the packed entry points' refusals. CPU."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from linbench.api import attention_packed, attention_padded
from linbench.errors import ImplUnavailableError
from linbench.variants.varlen import Segments, pad, unpad


def test_segments_from_lengths_and_back() -> None:
    segments = Segments.from_lengths((1, 7, 100))
    assert segments.offsets == (0, 1, 8, 108) and segments.lengths == (1, 7, 100)
    assert (segments.count, segments.total, segments.longest) == (3, 108, 100)
    assert Segments.of(torch.tensor([0, 1, 8, 108])) == segments
    assert segments.key_mask("cpu").sum(dim=1).tolist() == [1, 7, 100]


@pytest.mark.parametrize("offsets", [(0,), (1, 5), (0, 4, 4), (0, 5, 3)])
def test_segments_refuse_offsets_that_name_no_sequence_or_an_empty_one(offsets: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match="cu_seqlens"):
        Segments(offsets)


def test_pad_then_unpad_gives_the_pack_back_with_zeros_after_each_sequence() -> None:
    segments = Segments.from_lengths((2, 5, 1))
    x = torch.randn(1, 3, 8, 4)
    padded = pad(x, segments)
    assert padded.shape == (3, 3, 5, 4)
    assert torch.equal(padded[0, :, 2:], torch.zeros(3, 3, 4))
    assert torch.equal(unpad(padded, segments), x)


def test_a_packed_call_refuses_a_batch_that_is_not_its_pack() -> None:
    q = torch.randn(2, 2, 8, 4)
    with pytest.raises(ValueError, match=r"\(1, H, T, D\) with T = cu_seqlens\[-1\] = 8"):
        attention_packed(q, q, q, [0, 3, 8], variant="cosine", impl="chunked")


def test_an_impl_without_a_packed_form_says_to_run_it_padded() -> None:
    q = torch.randn(1, 2, 8, 4)
    with pytest.raises(ImplUnavailableError, match="no packed form; run it padded"):
        attention_packed(q, q, q, [0, 3, 8], variant="heinsen", impl="chunked")


def test_a_padded_call_refuses_lengths_that_do_not_fit() -> None:
    q = torch.randn(2, 2, 8, 4)
    with pytest.raises(ValueError, match="do not fit a padded batch"):
        attention_padded(q, q, q, [3, 9], variant="cosine", impl="chunked")


def test_padded_bidirectional_masks_the_pads_keys() -> None:
    """The pads' values are large: any weight on them would show in the outputs."""
    segments = Segments.from_lengths((3, 8))
    q = torch.randn(1, 2, 11, 4, dtype=torch.float64)
    padded = [pad(x, segments) for x in (q, q, q)]
    padded[2][0, :, 3:] = 1e6
    out = attention_padded(*padded, segments, variant="softmax", impl="sdpa", causal=False)
    alone = attention_packed(q, q, q, segments, variant="softmax", impl="naive", causal=False)
    assert torch.allclose(unpad(out, segments), alone)


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda: Segments.of(None), "cu_seqlens must be a 1-D integer tensor or a list of offsets; got None"),
        (lambda: Segments.of("x"), "got 'x'"),  # it said: invalid literal for int() with base 10
        (lambda: Segments.of(torch.zeros(2, 2, dtype=torch.long)), "must be a 1-D integer tensor; got 2-D"),
        (lambda: Segments.from_lengths([16, 0]), "lengths must be whole numbers of tokens, 1 or more; got [16, 0]"),
        (lambda: Segments.from_lengths([16, 7.5]), "lengths must hold whole numbers; got 7.5"),  # cut to 7
    ],
)
def test_boundaries_that_are_no_pack_s_are_one_line(make: Any, words: str) -> None:
    with pytest.raises(ValueError) as raised:
        make()
    assert words in str(raised.value)
