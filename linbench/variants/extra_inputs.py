"""Inputs a variant takes beside q, k and v: a gated variant's log-gates, the delta rule's β.

They are declared as data, so that whatever draws a workload (a benchmark run, the correctness
gate, a test) can draw them, check them and cut them into pieces without knowing the variant's
maths: the keyword the impls take the tensor by, its shape relative to q's (B, H, S, Dk), the
dtype it comes in, how realistic values are drawn, whether gradients reach it, and the range it
must lie in. Like q, k and v, an extra input is (batch, heads) first and sequence next.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import torch

# Shape names and the (B, H, S, Dk) axes each keeps.
SHAPES: Mapping[str, str] = {"per_head": "(B, H)", "per_token": "(B, H, S)", "per_token_channel": "(B, H, S, Dk)"}
# "like_q": the dtype under test. "fp32_or_wider": fp32 for fp16/bf16 q, else q's dtype, since a
# log-gate is summed over the sequence and 8 bits of mantissa lose the sum (the kernels that
# train these models keep their gates in fp32 for the same reason).
DTYPE_RULES = ("like_q", "fp32_or_wider")
# How strongly a gate forgets: every draw function takes one of these (those of an input that
# does not depend on it ignore it).
REGIMES = ("weak", "strong")

# Draws an input of the given sizes: fp64 on the CPU from the generator, so that a workload is
# the same on every device; ``ExtraInput.draw`` moves it to the device and dtype.
DrawFn = Callable[[tuple[int, ...], torch.Generator, str], torch.Tensor]
# None when every value is in range, else what is wrong, as the end of a sentence naming the input.
RangeFn = Callable[[torch.Tensor], "str | None"]


@dataclass(frozen=True)
class ExtraInput:
    """One tensor a variant takes beside q, k and v, by keyword ``name``."""

    name: str
    shape: str  # a key of SHAPES
    summary: str  # what it is and the range it lies in, for listings and errors
    draw_fn: DrawFn
    range_fn: RangeFn
    dtype_rule: str = "like_q"
    differentiable: bool = True  # gradients reach it (the correctness gate checks them)
    distribution: str = ""  # how draw_fn draws it, per regime, for the docs

    def __post_init__(self) -> None:
        if self.shape not in SHAPES:
            raise ValueError(f"extra input {self.name!r}: shape {self.shape!r} is not one of {', '.join(SHAPES)}")
        if self.dtype_rule not in DTYPE_RULES:
            raise ValueError(f"extra input {self.name!r}: dtype rule {self.dtype_rule!r} is not one of {DTYPE_RULES}")

    def sizes(self, batch: int, heads: int, seq: int, dim_k: int) -> tuple[int, ...]:
        """The input's shape for q of shape (batch, heads, seq, dim_k)."""
        return {"per_head": (batch, heads), "per_token": (batch, heads, seq)}.get(
            self.shape, (batch, heads, seq, dim_k)
        )

    def dtype_for(self, q_dtype: torch.dtype) -> torch.dtype:
        """The dtype the input comes in when q is ``q_dtype``."""
        if self.dtype_rule == "fp32_or_wider" and q_dtype in (torch.float16, torch.bfloat16):
            return torch.float32
        return q_dtype

    def draw(
        self,
        batch: int,
        heads: int,
        seq: int,
        dim_k: int,
        *,
        generator: torch.Generator,
        device: torch.device | str,
        dtype: torch.dtype,
        regime: str = "weak",
    ) -> torch.Tensor:
        """Realistic values for q of this shape and ``dtype`` (see ``distribution``)."""
        if regime not in REGIMES:
            raise ValueError(f"unknown regime {regime!r} for {self.name}; regimes: {', '.join(REGIMES)}")
        values = self.draw_fn(self.sizes(batch, heads, seq, dim_k), generator, regime)
        return values.to(device=device, dtype=self.dtype_for(dtype))

    def problem(self, value: object, q: torch.Tensor) -> str | None:
        """None when ``value`` can go with ``q``, else one line saying what is wrong."""
        if not isinstance(value, torch.Tensor):
            return f"{self.name} must be a torch.Tensor, got {type(value).__name__}"
        want = self.sizes(*q.shape)
        if tuple(value.shape) != want:
            return f"{self.name} must have shape {SHAPES[self.shape]} = {want}; got {tuple(value.shape)}"
        if value.dtype != self.dtype_for(q.dtype):
            return f"{self.name} must be {self.dtype_for(q.dtype)} for {q.dtype} q; got {value.dtype}"
        if value.device != q.device:
            return f"{self.name} must be on q's device {q.device}; got {value.device}"
        complaint = self.range_fn(value.detach())
        return f"{self.name} {complaint}" if complaint else None

    def tokens(self, value: torch.Tensor, start: int, stop: int) -> torch.Tensor:
        """The part of ``value`` that goes with tokens start..stop−1 (all of it when per head)."""
        if self.shape == "per_head":
            return value
        if self.shape == "per_token":
            return value[..., start:stop]
        return value[..., start:stop, :]


def check_extra_inputs(
    owner: str, declared: Iterable[ExtraInput], given: Mapping[str, object], q: torch.Tensor
) -> None:
    """Raise ValueError, one line, unless ``given`` holds every declared input, each fit for ``q``.

    Reading the values' range costs a device synchronisation: call it once per workload, not
    inside a timed loop.
    """
    inputs = tuple(declared)
    missing = [extra for extra in inputs if given.get(extra.name) is None]
    if missing:
        wanted = "; ".join(f"{extra.name}: {extra.summary}" for extra in missing)
        raise ValueError(f"{owner} needs the extra input(s) {wanted}")
    for extra in inputs:
        problem = extra.problem(given[extra.name], q)
        if problem:
            raise ValueError(f"{owner}: {problem}")


def take_tokens(
    declared: Iterable[ExtraInput], given: Mapping[str, object], start: int, stop: int
) -> dict[str, object]:
    """``given`` with every declared extra input cut to tokens start..stop−1; other entries as they are.

    How a decoder feeds a sequence in pieces: q, k and v are cut along S, and so must the inputs
    that have one value per token.
    """
    by_name = {extra.name: extra for extra in declared}
    return {
        name: by_name[name].tokens(value, start, stop) if name in by_name and isinstance(value, torch.Tensor) else value
        for name, value in given.items()
    }
