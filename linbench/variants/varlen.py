"""Packed variable-length batches: sequence boundaries, and padding a pack to its longest sequence.

A packed batch holds N sequences one after another along S: q and k are (1, H, T, Dk), v is
(1, H, T, Dv), T the sum of the lengths, and ``cu_seqlens`` (0, L1, L1 + L2, ..., T) says where
each one starts, as flash-attention's and fla's varlen kernels take them. Attention never
crosses a boundary: each sequence is attended as if it were alone.

An impl runs a pack one of two ways (``Impl.packed``, ``Impl.key_masked``):

- packed: its ``packed`` form takes the packed tensors and the ``Segments``;
- padded: every sequence padded at its end to the longest, an (N, H, L_max, D) batch. Causal
  attention of a right-padded sequence gives the real tokens their true outputs (no real
  query sees a later position); bidirectional attention needs the pads' keys masked out, which
  an impl does with its ``key_masked`` form, given a (N, L_max) mask that is True at real tokens.

Parameters derived from the length (cosine's ``seq_len``, cosFormer's ``M``) are, in a pack,
fixed to its longest sequence: what a padded batch gives them, and what cosFormer asks of M
(at least every length).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F

from linbench.variants.declarations import MaskedFn, PackedFn
from linbench.variants.extra_inputs import ExtraInput, take_tokens
from linbench.variants.impl_helpers import as_real


@dataclass(frozen=True)
class Segments:
    """Where each sequence of a packed batch starts and ends (``offsets`` is cu_seqlens)."""

    offsets: tuple[int, ...]
    # Tensors made from the offsets, by what they are and the device they are on: made once
    # per pack, not per call.
    _cache: dict[tuple[str, str], Any] = field(default_factory=dict, compare=False, hash=False, repr=False)

    def __post_init__(self) -> None:
        offsets = self.offsets
        if len(offsets) < 2 or offsets[0] != 0:
            raise ValueError(f"cu_seqlens must start at 0 and name one sequence at least; got {list(offsets)}")
        if any(b <= a for a, b in itertools.pairwise(offsets)):
            raise ValueError(f"cu_seqlens must increase: every sequence holds a token at least; got {list(offsets)}")

    @classmethod
    def of(cls, cu_seqlens: torch.Tensor | Sequence[int]) -> Segments:
        """The segments of ``cu_seqlens`` (a 1-D tensor or a list of offsets); ValueError, one
        line, for anything else."""
        if isinstance(cu_seqlens, torch.Tensor):
            if cu_seqlens.dim() != 1 or cu_seqlens.is_floating_point():
                raise ValueError(
                    f"cu_seqlens must be a 1-D integer tensor; got {cu_seqlens.dim()}-D {cu_seqlens.dtype}"
                )
            values: list[Any] = cu_seqlens.tolist()
        elif isinstance(cu_seqlens, (str, bytes)) or not isinstance(cu_seqlens, Sequence):
            raise ValueError(f"cu_seqlens must be a 1-D integer tensor or a list of offsets; got {cu_seqlens!r}")
        else:
            values = list(cu_seqlens)
        return cls(tuple(_whole("cu_seqlens", v) for v in values))

    @classmethod
    def from_lengths(cls, lengths: Sequence[int]) -> Segments:
        """The segments of sequences of ``lengths`` tokens each; ValueError for a length that is
        not a whole number of at least one token."""
        ends = [0]
        for length in lengths:
            tokens = _whole("lengths", length)
            if tokens < 1:
                raise ValueError(f"lengths must be whole numbers of tokens, 1 or more; got {list(lengths)}")
            ends.append(ends[-1] + tokens)
        return cls(tuple(ends))

    @property
    def lengths(self) -> tuple[int, ...]:
        return tuple(b - a for a, b in zip(self.offsets, self.offsets[1:], strict=False))

    @property
    def count(self) -> int:
        return len(self.offsets) - 1

    @property
    def total(self) -> int:
        return self.offsets[-1]

    @property
    def longest(self) -> int:
        return max(self.lengths)

    def cached(self, what: str, device: torch.device | str, make: Callable[[], Any]) -> Any:
        """``make()``, made once per pack, ``what`` and device: what an impl derives from the
        boundaries (a mask, an order) is made on its first call, as a data loader makes
        cu_seqlens once per batch."""
        key = (what, str(device))
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    def cu_seqlens(self, device: torch.device | str, dtype: torch.dtype = torch.int64) -> torch.Tensor:
        """The offsets as a tensor on ``device`` (made once per device and dtype)."""
        made: torch.Tensor = self.cached(
            f"cu_seqlens {dtype}", device, lambda: torch.tensor(self.offsets, dtype=dtype, device=device)
        )
        return made

    def split(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """A packed tensor's sequences, as views along S (dim 2). Split, never sliced one by one:
        under autograd split's backward is one cat, where each slice would cost a full-size
        gradient."""
        return x.split(list(self.lengths), dim=2)

    def key_mask(self, device: torch.device | str) -> torch.Tensor:
        """(N, L_max) bool: True at each sequence's real tokens, False at its pads."""

        def make() -> torch.Tensor:
            positions = torch.arange(self.longest, device=device)
            return positions.unsqueeze(0) < torch.tensor(self.lengths, device=device).unsqueeze(1)

        mask: torch.Tensor = self.cached("key_mask", device, make)
        return mask

    def check_packed(self, q: torch.Tensor) -> None:
        """ValueError unless ``q`` is a packed batch of these segments: (1, H, T, D)."""
        if q.shape[0] != 1 or q.shape[2] != self.total:
            raise ValueError(
                f"a packed batch is (1, H, T, D) with T = cu_seqlens[-1] = {self.total}; got {tuple(q.shape)}"
            )


def _whole(name: str, value: object) -> int:
    """``value`` as an int where it is a whole number (7.5 is not: it was cut to 7)."""
    number = as_real(value)
    if not number.is_integer():  # nan and inf are not either
        raise ValueError(f"{name} must hold whole numbers; got {value!r}")
    return int(number)


def pad(x: torch.Tensor, segments: Segments) -> torch.Tensor:
    """A packed (1, H, T, D) tensor as a padded (N, H, L_max, D) batch, zeros after each
    sequence (differentiable: gradients flow back to the packed tensor)."""
    longest = segments.longest
    return torch.cat([F.pad(part, (0, 0, 0, longest - part.shape[2])) for part in segments.split(x)], dim=0)


def pad_extra_inputs(declared: Iterable[ExtraInput], given: dict[str, Any], segments: Segments) -> dict[str, Any]:
    """``given`` with every declared extra input of a pack (gates, β: batch 1, the pack's T
    tokens) made the padded batch's, as ``pad`` makes q's: per-token values cut at the
    boundaries and zero-padded to the longest sequence (a zero log-gate keeps the state, a zero
    β writes nothing; causal attention never reads the pads anyway), a per-head value repeated
    for every sequence. Other entries are as they are."""
    longest, padded = segments.longest, dict(given)
    for extra in declared:
        value = given.get(extra.name)
        if not isinstance(value, torch.Tensor):
            continue
        if extra.shape == "per_head":
            padded[extra.name] = value.expand(segments.count, *value.shape[1:])
        elif extra.shape == "per_token":
            parts = value.split(list(segments.lengths), dim=2)
            padded[extra.name] = torch.cat([F.pad(part, (0, longest - part.shape[2])) for part in parts], dim=0)
        else:
            padded[extra.name] = pad(value, segments)
    return padded


def unpad(y: torch.Tensor, segments: Segments) -> torch.Tensor:
    """A padded (N, H, L_max, D) batch's real tokens, packed: (1, H, T, D)."""
    parts = [row[:, :length] for row, length in zip(y.unbind(0), segments.lengths, strict=True)]
    return torch.cat(parts, dim=1).unsqueeze(0)


def lockstep_order(segments: Segments, device: torch.device) -> tuple[torch.Tensor, list[int], torch.Tensor]:
    """(the packed position of each token in step order, how many sequences run at each step,
    the step-order position of each packed token). Step t holds token t of every sequence
    longer than t, longest sequences first."""

    def make() -> tuple[torch.Tensor, list[int], torch.Tensor]:
        lengths, starts = segments.lengths, segments.offsets
        order = sorted(range(segments.count), key=lambda i: (-lengths[i], i))
        index: list[int] = []
        counts: list[int] = []
        running = segments.count
        for step in range(segments.longest):
            while lengths[order[running - 1]] <= step:
                running -= 1
            counts.append(running)
            index.extend(starts[i] + step for i in order[:running])
        positions = torch.tensor(index, dtype=torch.int64, device=device)
        inverse = torch.empty_like(positions)
        inverse[positions] = torch.arange(len(index), device=device)
        return positions, counts, inverse

    made: tuple[torch.Tensor, list[int], torch.Tensor] = segments.cached("lockstep", device, make)
    return made


def per_sequence(fn: Callable[..., torch.Tensor], extra_inputs: Iterable[ExtraInput] = ()) -> PackedFn:
    """The packed form that calls ``fn`` (an impl function) on each sequence of the pack in
    turn, over views of the packed tensors, and joins the outputs: no token of padding is
    computed, and each sequence starts from nothing (a linear form's state resets at every
    boundary). The ``extra_inputs`` given (gates, β) are cut at the boundaries as q, k and v
    are. The cost beside the tokens is one call per sequence."""
    declared = tuple(extra_inputs)

    def packed(
        q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, segments: Segments, causal: bool, **params: Any
    ) -> torch.Tensor:
        parts = zip(segments.split(q), segments.split(k), segments.split(v), strict=True)
        starts = zip(segments.offsets, segments.offsets[1:], strict=False)
        outs = [
            fn(qi, ki, vi, causal=causal, **take_tokens(declared, params, start, stop))
            for (qi, ki, vi), (start, stop) in zip(parts, starts, strict=True)
        ]
        return torch.cat(outs, dim=2)

    return packed


__all__ = ["MaskedFn", "PackedFn", "Segments", "lockstep_order", "pad", "pad_extra_inputs", "per_sequence", "unpad"]
