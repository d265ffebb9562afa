"""The point a correctness gate checks: the point itself, or at long lengths the same point at the
longest length whose fp64 reference fits GATE_BUDGET_BYTES; and which points share one check."""

from __future__ import annotations

from dataclasses import replace

from linbench.sweep.points import Point

# The decode gate compares this many steps after its prefill with the reference's last rows.
GATE_STEPS = 4
# The correctness gate runs the fp64 reference, which holds a few B·H·S×S tensors; at
# long lengths it runs at the longest length whose reference fits this budget instead.
GATE_BUDGET_BYTES = 512 * 1024 * 1024
_GATE_COPIES = 4  # scores, probabilities and their gradients, in fp64
MIN_GATE_SEQ = 16


def gate_seq(point: Point) -> int:
    """The length the correctness gate runs at: the point's own, or the longest that fits."""
    shape = point.shape
    per_position_pair = shape.batch * shape.heads * 8 * _GATE_COPIES
    fits = int((GATE_BUDGET_BYTES / per_position_pair) ** 0.5)
    return min(shape.seq, max(fits, MIN_GATE_SEQ))


def gate_point(point: Point) -> Point:
    """The point the gate checks: ``point`` at ``gate_seq``."""
    return replace(point, shape=replace(point.shape, seq=gate_seq(point)))


def gate_key(point: Point) -> tuple[object, ...]:
    """Points with the same gate key share one gate run (fwd needs no gradients checked)."""
    gated = gate_point(point)
    # Each chunk size of a --chunk sweep is its own code path, checked apart; so is each way a
    # serving point is served (runner/serving_gate.py): its tokens a step, state dtype and layout.
    served = (gated.tokens_per_step, gated.state_dtype, gated.state_layout)
    point_axes = (gated.shape, gated.packing, gated.chunk, *served)
    return (*gated.series[:2], gated.mode != "fwd", gated.causal, gated.dtype, gated.device, *point_axes)
