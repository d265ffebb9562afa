"""``linbench check``'s matrix: each impl in each dtype and masking (a cell), judged against
its variant's fp64 reference over a few shapes chosen to catch the usual bugs: a single token,
Dk ≠ Dv, and a length that is not a multiple of any chunk size (and, for a kernel that takes
none of those head sizes, the libraries' 128). cli/check_cmd.py runs the
cells and cli/check_display.py shows them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from linbench.check.correctness import CaseResult, Shape, check_impl
from linbench.dtypes import torch_dtype

if TYPE_CHECKING:
    import torch

    from linbench.variants.variant import Variant

__all__ = ["LIBRARY_SHAPE", "SHAPES", "Cell", "Row", "run_cell", "shapes_for"]


@dataclass
class Cell:
    """One impl in one dtype and masking, over every checked shape."""

    cases: list[CaseResult] = field(default_factory=list)
    unavailable: str | None = None  # why it cannot run here; not a failure
    skipped: str | None = None  # the variant does not compute this masking (Variant.masking)
    # Why its gradients were not checked (a forward-only kernel): its outputs alone were.
    outputs_only: str | None = None

    @property
    def failures(self) -> list[CaseResult]:
        if self.unavailable or self.skipped:
            return []
        return [case for case in self.cases if not case.ok and not case.unavailable]

    @property
    def not_run(self) -> list[CaseResult]:
        """The shapes this impl declared or proved it cannot take, in a cell judged on the rest."""
        return [case for case in self.cases if case.unavailable]

    @property
    def worst_ratio(self) -> float:
        return max((case.worst.ratio for case in self.cases if case.worst), default=0.0)

    @property
    def problem(self) -> str:
        """Why a failing result could not be measured ("shape", "NaN", "inf"), or ""."""
        return next((case.worst.problem for case in self.failures if case.worst and case.worst.problem), "")


@dataclass
class Row:
    """One variant:impl across every (dtype, masking) column."""

    variant: str
    impl: str
    is_reference: bool
    cells: list[Cell]

    @property
    def label(self) -> str:
        return f"{self.variant}:{self.impl}" + (" (ref)" if self.is_reference else "")


# (batch, heads, seq, dim_k, dim_v); Shape itself lives with torch, so it is built late.
SHAPES = ((1, 2, 1, 8, 8), (2, 3, 100, 16, 24), (1, 2, 257, 32, 32))
# The head size the kernel libraries fix (FlashQLA, FlashKDA, cuLA, FlashInfer's KDA: K = V =
# 128), checked only for an impl that takes none of SHAPES, so that it is proven at all; 70
# tokens are more than one chunk of 64 and no multiple of one.
LIBRARY_SHAPE = (1, 2, 70, 128, 128)
# For a variant that takes more value heads than q/k heads (Variant.value_heads): 2 q/k heads
# (Mamba2's groups) serving 6 value heads, over a length no multiple of any chunk.
VALUE_HEADS_SHAPE = (1, 2, 70, 16, 8, 0, 6)


def shapes_for(variant: Variant, impl: str, dtype_name: str, device_type: str) -> tuple[tuple[int, ...], ...]:
    """SHAPES (and VALUE_HEADS_SHAPE for a variant with value heads), and LIBRARY_SHAPE besides
    for an impl that declares it takes none of them."""
    declared = variant.impls[impl].unsupported_reason
    takes_one = any(declared(dims[3], dims[4], dtype_name, device_type) is None for dims in SHAPES)
    shapes = (*SHAPES, VALUE_HEADS_SHAPE) if variant.value_heads else SHAPES
    return shapes if takes_one else (*shapes, LIBRARY_SHAPE)


def run_cell(
    variant: Variant,
    impl: str,
    dtype_name: str,
    causal: bool,
    device: torch.device,
    shapes: tuple[tuple[int, ...], ...] | None = None,
) -> Cell:
    """Every shape for one impl, dtype and masking (``shapes`` in place of SHAPES and
    LIBRARY_SHAPE where given: ``check --shape``); unavailable impls, and maskings the variant
    does not compute, are not run."""
    reason = variant.impls[impl].unavailable_reason(device)
    if reason is not None:
        return Cell(unavailable=reason)
    if variant.masking_reason(causal) is not None:
        masking = "causal" if causal else "bidirectional"
        return Cell(skipped=f"{variant.name}: {variant.masking[0]} only; its {masking} cells are not checked")
    cases: list[CaseResult] = []
    outputs_only = None
    # The defaults, then each setting the variant asks to be checked at (a gated variant's
    # strong gates), at every shape.
    for params in ({}, *variant.check_params):
        for dims in shapes or shapes_for(variant, impl, dtype_name, device.type):
            shape, dtype = Shape(*dims), torch_dtype(dtype_name)
            # Head dims or a dtype the impl declares it cannot take (flash attention: fp16 and
            # bf16, one head dim) are not run at all; the other shapes still are.
            declared = variant.impls[impl].unsupported_reason(shape.dim_k, shape.dim_v, dtype_name, device.type)
            if declared is not None:
                cases.append(CaseResult(variant.name, impl, shape, causal, dtype, unavailable=declared))
                continue
            case = check_impl(variant, impl, shape, causal=causal, dtype=dtype, device=device, params=dict(params))
            if case.unavailable is not None:  # a forward-only kernel refuses the gradients: prove its outputs
                outputs = check_impl(
                    variant,
                    impl,
                    shape,
                    causal=causal,
                    dtype=dtype,
                    device=device,
                    params=dict(params),
                    gradients=False,
                )
                if outputs.unavailable is None:
                    outputs_only, case = case.unavailable, outputs
            cases.append(case)
    # A backend that takes some of the shapes (flash attention: one head dim) is judged on
    # those; only when it takes none is the whole cell unavailable.
    if all(case.unavailable for case in cases):
        return Cell(unavailable=cases[0].unavailable)
    return Cell(cases=cases, outputs_only=outputs_only)
