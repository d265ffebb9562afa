"""Error against length: how far an impl's output drifts from the fp64 answer as sequences grow.

The correctness gate (linbench/check/correctness.py) says pass or fail at a reduced length, fast.
This measures instead, at the full length asked for: each impl's output in fp32, bf16 or
fp16 against the fp64 answer on the same inputs (rounded to the dtype for both sides, so
what is measured is the impl's arithmetic, not the rounding of its inputs), as two numbers:

- ``rel_err``: max |a − e| over the RMS of e (the gate's ``rel_err`` column);
- ``normwise_err``: ‖a − e‖ / ‖e‖ over the whole output.

The fp64 answer is the variant's reference impl where its S×S scores fit ``REFERENCE_BYTES``
(B·H·S²·8 bytes, four times over: scores, weights and their temporaries); past that, the fp64
run of the variant's first memory-light impl in its auto order (softmax: sdpa; the linear
forms: chunked), which the tests hold to the reference within 1e-12, far below the errors of
the dtypes measured. Each row says which answered (``reference``). Outputs only: a backward
at 16k in fp64 costs more than the forward it would judge.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from linbench.api import attention
from linbench.check.correctness import make_inputs
from linbench.shape import Shape
from linbench.variants.variant import Variant

REFERENCE_BYTES = 1 << 30
_REFERENCE_COPIES = 4

__all__ = ["ErrorAtLength", "error_at_length", "reference_at"]


@dataclass(frozen=True)
class ErrorAtLength:
    """One impl's output error at one length, dtype and masking."""

    variant: str
    impl: str
    dtype: str
    causal: bool
    seq: int
    rel_err: float
    normwise_err: float
    reference: str  # the impl whose fp64 run gave the answer
    error: str = ""  # why nothing was measured (the impl raised, or cannot run here)

    def row(self) -> dict[str, Any]:
        return dict(self.__dict__)


def reference_at(variant: Variant, shape: Shape, device: torch.device) -> str:
    """The impl whose fp64 run is the answer at ``shape`` (module doc)."""
    quadratic = shape.batch * shape.heads * shape.seq * shape.seq * 8 * _REFERENCE_COPIES
    if quadratic <= REFERENCE_BYTES:
        return variant.reference
    for name in variant.auto_order or tuple(variant.impls):
        impl = variant.impls[name]
        if "s²" not in impl.memory_complexity and impl.unavailable_reason(device) is None:
            return name
    return variant.reference


def error_at_length(
    variant: Variant,
    impl: str,
    shape: Shape,
    *,
    dtype: torch.dtype,
    dtype_name: str,
    causal: bool,
    device: torch.device,
    seed: int = 0,
    expected: torch.Tensor | None = None,
) -> tuple[ErrorAtLength, torch.Tensor | None]:
    """``impl``'s output error at ``shape`` in ``dtype``; returns the fp64 answer too, so the
    impls of one variant at one length and dtype share it (pass it back as ``expected``)."""
    q, k, v, _ = make_inputs(variant, shape, device, seed)
    inputs = [t.to(dtype).to(torch.float64) for t in (q, k, v)]
    reference = reference_at(variant, shape, device)

    def row(rel: float, normwise: float, error: str = "") -> ErrorAtLength:
        return ErrorAtLength(variant.name, impl, dtype_name, causal, shape.seq, rel, normwise, reference, error)

    with torch.no_grad():
        if expected is None:
            expected = attention(*inputs, variant=variant.name, impl=reference, causal=causal)
        try:
            actual = attention(*(t.to(dtype) for t in inputs), variant=variant.name, impl=impl, causal=causal)
        except Exception as exc:  # an impl that cannot answer here is a row saying why, not a crash
            return row(float("nan"), float("nan"), f"{type(exc).__name__}: {exc}"), expected
    diff = actual.to(torch.float64) - expected
    rms = float(expected.square().mean().sqrt())
    rel = float(diff.abs().max()) / max(rms, 1e-300)
    return row(rel, float(diff.norm()) / max(float(expected.norm()), 1e-300)), expected
