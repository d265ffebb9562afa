"""What the variants' impls share: their compute dtype, causal masks, applying an explicit
score matrix (the quadratic references), and checks of their parameters."""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable

import torch

_LOW_PRECISION = (torch.float16, torch.bfloat16)


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype an impl accumulates in: fp32 for fp16/bf16 inputs, else the input's.

    Cumulative sums and S-long reductions lose the answer in 8-bit mantissas, so the
    pure-PyTorch linear forms carry their state (and do their arithmetic) in fp32.
    """
    return torch.float32 if dtype in _LOW_PRECISION else dtype


def upcast(*tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The tensors in their compute dtype (a no-op for fp32 and fp64)."""
    return tuple(t.to(compute_dtype(t.dtype)) for t in tensors)


def causal_mask(rows: int, cols: int, device: torch.device, offset: int = 0) -> torch.Tensor:
    """Boolean (rows, cols) mask, True where key j may be seen by query i: j <= i + offset."""
    return torch.ones(rows, cols, dtype=torch.bool, device=device).tril(diagonal=offset)


def apply_scores(scores: torch.Tensor, v: torch.Tensor, *, causal: bool, eps: float | None) -> torch.Tensor:
    """(scores ⊙ M) v, divided row-wise by sum_j (scores ⊙ M)_ij + eps when eps is given: an
    explicit S x S score matrix applied the way the quadratic references do."""
    if causal:
        scores = scores.tril()
    out = scores @ v
    if eps is None:
        return out
    return out / (scores.sum(-1, keepdim=True) + eps)


def as_real(value: object) -> float:
    """``value`` as a float; NaN for what is no real number (a bool, text, None)."""
    return float(value) if isinstance(value, numbers.Real) and not isinstance(value, bool) else math.nan


def positive_number(name: str, value: object) -> float:
    """``value`` as a float, or ValueError unless it is a finite positive real number."""
    problem = positive_number_problem(value)
    if problem:
        raise ValueError(f"parameter {name} {problem}")
    return as_real(value)


# Checks of a parameter's value (Param.check): what is wrong with it, or None. A --param is
# refused with it before anything runs (exit 2); linbench.attention refuses it too.
def positive_number_problem(value: object) -> str | None:
    """Not a finite number above 0 (NaN fails every comparison)."""
    return None if 0 < as_real(value) < math.inf else f"must be a positive number; got {value!r}"


def positive_int_problem(value: object) -> str | None:
    """Not a whole number above 0 (a chunk size, a length)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        return f"must be a positive integer; got {value!r}"
    return None


def finite_number_or_tensor_problem(value: object) -> str | None:
    """Neither a finite number nor a tensor (a learnable parameter: its values are the caller's)."""
    if isinstance(value, torch.Tensor) or math.isfinite(as_real(value)):
        return None
    return f"must be a finite number or a tensor; got {value!r}"


def one_of(*choices: str) -> Callable[[object], str | None]:
    """A check that takes one of ``choices``."""

    def problem(value: object) -> str | None:
        return None if value in choices else f"must be one of {', '.join(choices)}; got {value!r}"

    return problem


def positive_int(name: str, value: object) -> int:
    """``value`` as an int, or ValueError unless it is a positive integer."""
    problem = positive_int_problem(value)
    if problem:
        raise ValueError(f"parameter {name} {problem}")
    return int(value)  # type: ignore[call-overload]
