"""``linbench run --pack``: the run kind whose points are one pack of variable-length
sequences, run packed or padded (linbench/sweep/lengths.py, linbench/variants/varlen.py).

It is a run (fwd, bwd or fwdbwd calls, timed against a budget) that differs in what a
call is and what its row says:

- the call: the impl's packed form on (1, H, T, D) tensors with the pack's boundaries, or
  the impl on the (N, H, L_max, D) batch of the sequences padded to the longest. The
  boundaries, and whatever an impl makes of them once (the lockstep order of the packed
  recurrent form, a key mask), are made untimed, once per pack, as a data loader makes
  cu_seqlens once per batch;
- the row: ``flops`` counts the useful work (each sequence's by the variant's formula, the
  same for both packings), ``tokens_per_s`` the pack's real tokens per second, and the
  pack's columns say what was run and how much of it was padding;
- the gate: the impl run the same way on the pack's first sequences, each cut to the gate's
  length, against the fp64 reference on each sequence alone (linbench/check/packed.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import torch

from linbench.api import attention_packed_prechecked, attention_padded_prechecked
from linbench.results.record import PointFacts
from linbench.runner.kind_protocol import Task, Work
from linbench.runner.run_kind import RunKind, call_flops
from linbench.runner.targets import Targets
from linbench.runner.triton_tuning import warm_up as tuned_warm_up
from linbench.runner.workload import TINY_SEQ, Workload, warm_up
from linbench.sweep import estimate
from linbench.sweep.lengths import Pack
from linbench.sweep.points import Point
from linbench.variants.registry import get_variant
from linbench.variants.varlen import Segments

if TYPE_CHECKING:
    from linbench.check.correctness import CaseResult

# The gate checks at most this many of the pack's sequences.
GATE_SEQUENCES = 8


class PackWorkload(Workload):
    """A pack point's inputs (the point's shape: packed or padded) and its call."""

    def __init__(
        self,
        point: Point,
        segments: Segments,
        device: torch.device,
        seed: int = 0,
        params: dict[str, Any] | None = None,
    ) -> None:
        self.segments = segments  # before the base draws the inputs: what it holds depends on them
        super().__init__(point, device, seed, params)

    def _segments(self) -> Segments | None:
        return self.segments if self.point.packing == "packed" else None

    def forward(self) -> torch.Tensor:
        # The extra inputs (gates, β) were drawn and checked once, for the point's shape: the
        # pack's (1, H, T) packed, the padded batch's (N, H, L_max) padded.
        p, qkv = self.point, (self.q, self.k, self.v)
        run = attention_packed_prechecked if p.packing == "packed" else attention_padded_prechecked
        params = self.params | self.extras | self._held()
        return run(*qkv, self.segments, variant=p.variant, impl=p.impl, causal=p.causal, **params)


@dataclass(frozen=True)
class PackKind(RunKind):
    """A run whose points are ``pack`` run packed or padded (module doc)."""

    pack: Pack = field(kw_only=True)
    segments: Segments = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "segments", Segments(self.pack.offsets))

    def useful_flops(self, point: Point) -> float:
        """The FLOPs of the pack's sequences, each by itself (no padding, no cross terms)."""
        variant, shape = get_variant(point.variant), point.shape
        sizes = (shape.heads, shape.dim_k, shape.dim_v)
        return sum(variant.flops(1, sizes[0], n, *sizes[1:], point.causal, point.mode) for n in self.pack.lengths)

    def facts(self, point: Point, device_name: str, params: str) -> PointFacts:
        """A run's facts with the useful FLOPs, the pack's real tokens and its columns."""
        waste = self.pack.padding_waste if point.packing == "padded" else 0.0
        columns = {
            "pack": self.pack.label,
            "packing": point.packing,
            "sequences": self.pack.sequences,
            "padding_waste": waste,
        }
        run = super().facts(point, device_name, params)
        return replace(run, flops=self.useful_flops(point), tokens=self.pack.tokens, pack=columns)

    def call_s(self, point: Point) -> float:
        """A padded call computes its padding too; a packed one the sequences alone, each by
        the impl's own count (a quadratic form's S×S FLOPs where its variant is linear: the
        time that makes it pass --timeout-s, which the estimate then counts)."""
        if point.packing == "padded":
            flops = call_flops(point)
        else:
            shape = point.shape
            flops = sum(call_flops(replace(point, shape=replace(shape, batch=1, seq=n))) for n in self.pack.lengths)
        return estimate.call_seconds(point, flops, estimate.form_rate(point))

    def gate_lengths(self, cap: int) -> tuple[int, ...]:
        """The pack's first sequences, each cut to ``cap`` tokens."""
        return tuple(min(n, cap) for n in self.pack.lengths[:GATE_SEQUENCES])

    def check(self, task: Task) -> CaseResult:
        """The impl run as the point runs it, on ``gate_lengths``, against the per-sequence
        fp64 reference (outputs, and gradients when the mode has a backward)."""
        from linbench.check.packed import check_packed
        from linbench.dtypes import torch_dtype

        point = task.point
        shape = point.shape
        return check_packed(
            get_variant(point.variant),
            point.impl,
            self.gate_lengths(shape.seq),
            shape.heads,
            shape.dim_k,
            shape.dim_v,
            packing=point.packing,
            causal=point.causal,
            dtype=torch_dtype(point.dtype),
            device=point.device,
            seed=task.seed,
            params=task.params,
            gradients=point.mode != "fwd",
        )

    def workload(self, task: Task, device: torch.device) -> tuple[Work, int | None]:
        """The pack's call, after one plain call at a tiny length (thread pools start there), or
        for a Triton impl one call of the pack itself (its kernels compile and tune on the pack:
        runner/triton_tuning.py)."""

        def call(seq: int) -> None:
            if seq < task.point.shape.seq:
                warm_up(task.point, device, seq, task.params)
                return
            warm = PackWorkload(task.point, self.segments, device, task.seed, task.params)
            warm.before()
            warm.run()

        tuned_warm_up(task.point, call, TINY_SEQ)
        return PackWorkload(task.point, self.segments, device, task.seed, task.params), None


def unpackable_reason(point: Point) -> str | None:
    """Why ``point``'s impl cannot run the pack its way (None: it can)."""
    return get_variant(point.variant).impl(point.impl).packing_reason(point.packing, point.causal)


def drop_unpackable(points: list[Point], targets: Targets) -> tuple[list[Point], Targets]:
    """The points an impl can run, and a note for each impl and way left out; ValueError when
    nothing is left."""
    kept: list[Point] = []
    notes: dict[str, None] = {}  # each once, in order
    for point in points:
        reason = unpackable_reason(point)
        if reason is None:
            kept.append(point)
        else:
            masking = "causal" if point.causal else "bidirectional"
            notes[f"{point.variant}:{point.impl} runs no {masking} pack {point.packing}: {reason}"] = None
    if points and not kept:
        raise ValueError(f"nothing to run: {'; '.join(notes)}")
    return kept, replace(targets, notes=(*targets.notes, *notes))
