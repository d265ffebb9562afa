"""What every gated form shares: the compute dtype, q's scale, the state, chunks and decay masks."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from linbench.errors import ImplUnavailableError
from linbench.variants.impl_helpers import positive_int

_LOW_PRECISION = (torch.float16, torch.bfloat16)


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """fp32 for fp16/bf16 inputs, else the input's: a state summed over the whole sequence
    and a cumulative log-gate lose the answer in 8 bits of mantissa."""
    return torch.float32 if dtype in _LOW_PRECISION else dtype


def upcast(*tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The tensors in the compute dtype of the first (a no-op for fp32 and fp64)."""
    dtype = compute_dtype(tensors[0].dtype)
    return tuple(t.to(dtype) for t in tensors)


def scale_problem(scale: object) -> str | None:
    """What is wrong with a scale on q, or None (None itself is Dk^-1/2)."""
    if scale is None:
        return None
    if isinstance(scale, bool) or not isinstance(scale, numbers.Real) or not math.isfinite(scale) or scale <= 0:
        return f"must be a positive number or None (Dk^-1/2); got {scale!r}"
    return None


def resolve_scale(scale: object, dim_k: int) -> float:
    """The factor on q: Dk^-1/2 when None (RetNet, GLA and DeltaNet all scale so), else ``scale``."""
    problem = scale_problem(scale)
    if problem:
        raise ValueError(f"parameter scale {problem}")
    return dim_k**-0.5 if scale is None else float(scale)  # type: ignore[arg-type]


def chunk_length(chunk_size: object) -> int:
    """``chunk_size`` as an int, or ValueError unless it is a positive integer."""
    return positive_int("chunk_size", chunk_size)


def causal_only(owner: str, causal: bool) -> None:
    """A gate or a delta rule orders the tokens: there is no bidirectional form to run."""
    if not causal:
        raise ImplUnavailableError(f"{owner} is causal only: its state decays or is overwritten in token order")


@dataclass
class GatedState:
    """What a gated or delta-rule attention remembers: one Dk×Dv matrix per head."""

    matrix: torch.Tensor  # (B, H, Dk, Dv)
    position: int  # tokens absorbed so far

    @classmethod
    def empty(cls, k: torch.Tensor, v: torch.Tensor) -> GatedState:
        batch, heads, _, dim_k = k.shape
        return cls(k.new_zeros(batch, heads, dim_k, v.shape[-1]), 0)


def to_chunks(x: torch.Tensor, size: int, seq_dim: int = -2) -> torch.Tensor:
    """``x`` zero-padded along its sequence axis to whole chunks, that axis split into
    (chunks, size). Zero keys, values, gates and β change no state: a padded tail is a run of
    tokens that neither decay nor write, after every real one."""
    dim = seq_dim % x.ndim
    pad = (-x.shape[dim]) % size
    if pad:
        widths = [0, 0] * (x.ndim - 1 - dim) + [0, pad]
        x = F.pad(x, widths)
    return x.unflatten(dim, (x.shape[dim] // size, size))


def decay_matrix(log_decay: torch.Tensor) -> torch.Tensor:
    """exp(b_t − b_s) for s ≤ t, else 0, from cumulative log-decays b (..., C) → (..., C, C).

    Each entry is exponentiated from its own difference, which is ≤ 0 where it is kept, so
    nothing overflows however strong the decay; the entries above the diagonal are set to −∞
    before exp, not after, for the same reason.
    """
    size = log_decay.shape[-1]
    keep = torch.ones(size, size, dtype=torch.bool, device=log_decay.device).tril()
    diff = log_decay.unsqueeze(-1) - log_decay.unsqueeze(-2)
    return diff.masked_fill(~keep, float("-inf")).exp()


def lower_mask(size: int, device: torch.device, diagonal: int = 0) -> torch.Tensor:
    """Boolean (size, size) mask, True where s ≤ t + diagonal."""
    return torch.ones(size, size, dtype=torch.bool, device=device).tril(diagonal)


class Rows:
    """The outputs of a token-by-token scan, one (B, H, Dv) row per token, as (B, H, S, Dv).

    Where autograd records the scan, the rows are kept and stacked at the end (writing them
    into one tensor would give every token's backward a full-length gradient). Where it does
    not, each row is copied into the output as it comes: a list of small live rows between
    the per-token temporaries fragmented the CPU heap so that peak memory grew by one
    Dk×Dv state per token (537 MiB at 4k tokens, B1 H8 D64) in a form whose state is constant.
    """

    def __init__(self, like: torch.Tensor, seq: int, *inputs: torch.Tensor) -> None:
        self._recorded = torch.is_grad_enabled() and any(t.requires_grad for t in inputs)
        self._rows: list[torch.Tensor] = []
        self._out = None if self._recorded else like.new_empty(*like.shape[:-2], seq, like.shape[-1])
        self._count = 0

    def add(self, row: torch.Tensor) -> None:
        if self._out is None:
            self._rows.append(row)
        else:
            self._out[..., self._count, :] = row
        self._count += 1

    def stacked(self, like: torch.Tensor) -> torch.Tensor:
        if self._out is not None:
            return self._out
        return torch.stack(self._rows, dim=-2) if self._rows else like.new_empty(like.shape)


def checked_state(given: object, want: tuple[int, int, int, int]) -> torch.Tensor | None:
    """An initial state as given (None: the recurrence starts from zeros) once it is a tensor of
    shape ``want``, (B, H_v, Dk, Dv); else ValueError, one line, naming both shapes."""
    if given is None:
        return None
    if not isinstance(given, torch.Tensor) or tuple(given.shape) != want:
        got = tuple(given.shape) if isinstance(given, torch.Tensor) else type(given).__name__
        raise ValueError(f"parameter initial_state must have shape (B, H_v, Dk, Dv) = {want}; got {got}")
    return given
