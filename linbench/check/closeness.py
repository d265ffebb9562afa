"""How far a tensor is from its reference, in units of a tolerance for its dtype.

The rules every correctness check judges by (linbench/check/correctness.py for an impl or a
decoder, linbench/check/packed.py for a pack): an element-wise tolerance scaled by the
reference's RMS, and for 16-bit dtypes a norm-wise rule and a scale-error rule besides.
A result of the wrong shape, or with NaN or infinite elements, fails without a distance.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import torch

# (rtol, atol) per dtype, about ten units of the last place for fp16 and bf16 (fp32 allows
# for long accumulations); atol is scaled by the RMS of the reference tensor, so one
# tolerance fits outputs and gradients of any magnitude.
TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float64: (1e-7, 1e-7),
    torch.float32: (5e-4, 5e-4),
    torch.float16: (1e-2, 1e-2),
    torch.bfloat16: (8e-2, 8e-2),
}

# 16-bit impls get two more rules, from their unit roundoff u (half the gap between 1 and the
# next number: 2^-8 for bf16, 2^-11 for fp16).
#
# * An impl that fails the element-wise tolerance still passes when its norm-wise error
#   ‖a − e‖ / ‖e‖ is at most NORMWISE_ULPS·u and no row (last axis) is off by more than
#   ROW_ULPS·u of the typical row's norm. The element-wise rule judges each element against
#   the RMS of its own tensor; for a gradient that is a small difference of large terms (q's
#   gradient in a normalised attention: (dO·Sv − (dO·o) z) / den) any 16-bit arithmetic errs
#   by u times the terms, not u times the difference. Measured on an H100, linear (elu + 1,
#   normalised) bf16 fwd+bwd at B4 H16 S512 D64, grad q's norm-wise error was 4.7e-3 for
#   linbench's kernel, 1.1e-2 for fla's chunk kernel and 1.2e-2 for the formula evaluated
#   plainly in bf16 (1.7e-3 for the chunked form, which computes in fp32); element-wise the
#   three reach 0.25, 1.3 and 0.8 times grad q's RMS, where the old rule allows 0.08.
# * Whatever the rules above say, a 16-bit result must not be scaled against the reference:
#   its scale error ⟨a − e, e⟩ / ⟨e, e⟩ (1.01 for a gradient multiplied by 1.01) must stay
#   under u, or under three times what rounding noise alone gives (norm-wise error / √N),
#   whichever is larger. Rounding errors are uncorrelated with the result; a wrong constant,
#   a missing term or a stale scale is not.
UNIT_ROUNDOFF: dict[torch.dtype, float] = {torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8}
NORMWISE_ULPS = 8
ROW_ULPS = 32

# The TF32 tolerance: an fp32 result whose matrix products rounded their operands to TF32 (an
# fp32 tl.dot in a Triton kernel on an sm_80+ GPU, by Triton's default) is judged by fp16's
# rules, element-wise (1e-2, 1e-2) and norm-wise and scale error with u = 2^-11: TF32 keeps 10
# explicit mantissa bits, as fp16 does, so its unit roundoff is fp16's. fp32's own (5e-4, 5e-4)
# is about one TF32 unit roundoff (4.9e-4), which a sum of rounded products exceeds by design.
TF32_RULES = torch.float16


@dataclass(frozen=True)
class Closeness:
    """How far one tensor is from its reference."""

    name: str
    max_abs_error: float
    # max over elements of |actual − expected| / (atol·rms(expected) + rtol·|expected|): ≤ 1 passes.
    worst_ratio: float
    # max |actual − expected| relative to the RMS of expected (the case's scale).
    rel_error: float = math.nan
    # 16-bit dtypes only (see UNIT_ROUNDOFF): ‖a − e‖ / ‖e‖, the worst row's error over the
    # typical row's norm, and the scale error ⟨a − e, e⟩ / ⟨e, e⟩, each over its bound.
    normwise_ratio: float = math.nan
    scale_ratio: float = math.nan
    # Why no distance could be measured: "shape" (not the reference's), "NaN" or "inf" (the
    # result is not finite), with ``detail`` in words; "" when it was measured.
    problem: str = ""
    detail: str = ""

    @property
    def ratio(self) -> float:
        """Error over the bound that decides (≤ 1 passes): the element-wise rule for fp32 and
        fp64; for 16-bit dtypes the looser of it and the norm-wise rule, unless the scale
        error is worse."""
        if not math.isfinite(self.worst_ratio) or math.isnan(self.scale_ratio):
            return self.worst_ratio
        return max(min(self.worst_ratio, self.normwise_ratio), self.scale_ratio)

    @property
    def ok(self) -> bool:
        return math.isfinite(self.ratio) and self.ratio <= 1.0

    def describe(self) -> str:
        if self.problem:
            return f"{self.name} {self.detail}"
        text = f"{self.name} err {self.max_abs_error:.2e} (x{self.worst_ratio:.2f} tol"
        if not math.isnan(self.scale_ratio):
            text += f"; norm-wise x{self.normwise_ratio:.2f}, scale x{self.scale_ratio:.2f}"
        return text + ")"


def rms(t: torch.Tensor) -> float:
    return float(t.detach().to(torch.float64).square().mean().sqrt())


def compare(
    name: str,
    actual: torch.Tensor,
    expected: torch.Tensor,
    dtype: torch.dtype,
    floor_scale: float = 0.0,
    tf32: bool = False,
) -> Closeness:
    """Distance of ``actual`` from ``expected`` in units of the tolerance for ``dtype``; for an
    fp32 result computed with TF32 dots (``tf32``), of the TF32 tolerance (TF32_RULES).

    The absolute part of the tolerance scales with the RMS of ``expected``, but never with
    less than ``floor_scale``: a gradient that is exactly zero (q and k at S = 1, where a
    normalised attention returns v whatever q and k are) is computed from quantities of
    the case's size and can only be zero to within their rounding.
    """
    dtype = TF32_RULES if tf32 and dtype == torch.float32 else dtype
    rtol, atol = TOLERANCES[dtype]
    actual64, expected64 = actual.detach().to(torch.float64), expected.detach().to(torch.float64)
    unmeasurable = _unmeasurable(name, actual64, expected64)
    if unmeasurable is not None:
        return unmeasurable
    diff = (actual64 - expected64).abs()
    scale = max(rms(expected64), floor_scale, 1e-30)
    ratio = diff / (atol * scale + rtol * expected64.abs())
    result = Closeness(name, float(diff.max()), float(ratio.max()), float(diff.max()) / scale)
    if dtype not in UNIT_ROUNDOFF or expected64.numel() == 0:
        return result
    normwise, scale_error = _normwise_ratios(actual64, expected64, UNIT_ROUNDOFF[dtype], floor_scale)
    return dataclasses.replace(result, normwise_ratio=normwise, scale_ratio=scale_error)


def _unmeasurable(name: str, actual: torch.Tensor, expected: torch.Tensor) -> Closeness | None:
    """A failing comparison for a result of the wrong shape or with NaN or infinite elements
    (no distance means anything then), else None. A wrong shape is caught before it can
    broadcast: an empty output broadcasts against any reference."""
    if actual.shape != expected.shape:
        words = f"has shape {tuple(actual.shape)} where the reference has {tuple(expected.shape)}"
        return Closeness(name, math.inf, math.inf, math.inf, problem="shape", detail=words)
    nan, inf = int(actual.isnan().sum()), int(actual.isinf().sum())
    if not nan and not inf:
        return None
    problem, count, word = ("NaN", nan, "NaN") if nan else ("inf", inf, "infinite")
    words = f"is {word} at {count} of {actual.numel()} elements"
    return Closeness(name, math.inf, math.inf, math.inf, problem=problem, detail=words)


def _normwise_ratios(actual: torch.Tensor, expected: torch.Tensor, u: float, floor_scale: float) -> tuple[float, float]:
    """The norm-wise and scale-error rules of UNIT_ROUNDOFF, each as error over bound (≤ 1 passes)."""
    error = actual - expected
    count = expected.numel()
    # The same floor as the element-wise rule: a tensor that is zero to within rounding is
    # judged against the size of the quantities it was computed from.
    norm = max(float(expected.norm()), floor_scale * math.sqrt(count), 1e-150)
    normwise = float(error.norm()) / norm
    rows = error.reshape(-1, expected.shape[-1]) if expected.ndim >= 2 else error.reshape(1, -1)
    typical_row = norm / math.sqrt(rows.shape[0])
    worst_row = float(rows.norm(dim=-1).max()) / typical_row
    spread = max(normwise / (NORMWISE_ULPS * u), worst_row / (ROW_ULPS * u))
    # Divided by the norm twice rather than by its square, which underflows for tiny norms.
    scale_error = abs(float((error * expected).sum())) / norm / norm
    return spread, scale_error / max(u, 3 * normwise / math.sqrt(count))
