"""The closures a worker times: one attention call in the point's mode.

fwd runs the forward under no_grad (inference); fwdbwd runs forward and backward;
bwd builds the forward graph untimed in ``before`` and times the backward alone.
Gradients come from ``torch.autograd.grad``, which returns fresh tensors instead of
accumulating into ``.grad``: every repetition does the same work with nothing to clear.

On CPU every repetition also gets its inputs in freshly allocated buffers behind a
randomly sized block, so where the buffers and the impl's temporaries land in memory is
drawn anew each time. Without it, a process keeps one layout for its whole life and the
layout alone decided whether a point took 2.5 or 4.5 ms on our 2-core test machine: the
same sweep run twice disagreed by 80% on single points with ±5% spread inside each run.
With it, eight processes gave medians within ±2% of each other (the idea of Curtsinger
and Berger's Stabilizer: randomise layout so that timings become a statistic of the code,
not of one layout).
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import torch

from linbench.api import attention_prechecked
from linbench.dtypes import torch_dtype
from linbench.sweep.points import Point
from linbench.variants.extra_inputs import (
    check_extra_inputs,
    draw_extra_inputs,
    seq_major,
    split_draw_settings,
)
from linbench.variants.registry import get_variant

# The extra inputs (gates, β) are drawn from a CPU generator of their own, seeded from the
# workload's: the same values on every device, and q, k, v as they were before there were any.
EXTRA_SEED_OFFSET = 7919


class Workload:
    """Inputs for ``point`` on ``device`` and the ``before``/``run`` pair the timers take."""

    def __init__(self, point: Point, device: torch.device, seed: int = 0, params: dict[str, Any] | None = None) -> None:
        self.point = point
        variant = get_variant(point.variant)
        # --param values: the draw settings of the extra inputs (gate_regime), the rest for the impl.
        settings, self.params = split_draw_settings(params or {})
        shape, dtype = point.shape, torch_dtype(point.dtype)
        gen = torch.Generator(device=device).manual_seed(seed)
        grad = point.mode != "fwd"
        # fla keeps (B, S, H, D): its inputs are made so here, untimed, and seen through views.
        self._seq_major = variant.impl(point.impl).layout == "bshd"

        def draw(dim: int, heads: int = shape.heads) -> torch.Tensor:
            if self._seq_major:
                size = (shape.batch, shape.seq, heads, dim)
                return torch.randn(size, generator=gen, device=device, dtype=dtype).transpose(1, 2).requires_grad_(grad)
            size = (shape.batch, heads, shape.seq, dim)
            return torch.randn(size, generator=gen, device=device, dtype=dtype).requires_grad_(grad)

        # k and v have the point's key/value heads (fewer than q's: grouped-query attention).
        self.q = draw(shape.dim_k)
        self.k, self.v = draw(shape.dim_k, shape.kv_heads), draw(shape.dim_v, shape.kv_heads)
        self.grad_out = draw(shape.dim_v).detach() if grad else None
        self.extras = self._draw_extras(settings, seed, grad)
        self._pending: torch.Tensor | None = None
        self._shuffle_layout = device.type == "cpu"
        self._layout_rng = random.Random(seed)
        self._pads: list[torch.Tensor] = []
        self._calls = 0

    def _draw_extras(self, settings: Any, seed: int, grad: bool) -> dict[str, torch.Tensor]:
        """The variant's extra inputs (gates, β), drawn and checked here, untimed, once: the
        timed calls do not read their values again. Gradients reach the differentiable ones in
        a backward, as in training."""
        declared = get_variant(self.point.variant).extra_inputs
        if not declared:
            return {}
        gen = torch.Generator().manual_seed(seed + EXTRA_SEED_OFFSET)
        shape = self.point.shape
        drawn = draw_extra_inputs(
            declared,
            (shape.batch, shape.heads, shape.seq, shape.dim_k),
            generator=gen,
            device=self.q.device,
            dtype=self.q.dtype,
            settings=settings,
        )
        check_extra_inputs(self.point.variant, declared, drawn, self.q)
        return {
            extra.name: (seq_major(extra, drawn[extra.name]) if self._seq_major else drawn[extra.name]).requires_grad_(
                grad and extra.differentiable
            )
            for extra in declared
        }

    def leaves(self) -> tuple[torch.Tensor, ...]:
        """What a backward differentiates: q, k, v and the extra inputs gradients reach."""
        return (self.q, self.k, self.v, *(t for t in self.extras.values() if t.requires_grad))

    def forward(self) -> torch.Tensor:
        p = self.point
        return attention_prechecked(
            self.q, self.k, self.v, variant=p.variant, impl=p.impl, causal=p.causal, **self.params, **self.extras
        )

    def before(self) -> None:
        """Untimed set-up of one repetition: a fresh memory layout (CPU), bwd's forward graph."""
        # The first call reads peak memory, so it runs on the layout the inputs were made
        # in: random blocks and freed copies would only blur what the impl itself holds.
        if self._shuffle_layout and self._calls > 0:
            self._new_layout()
        self._calls += 1
        if self.point.mode == "bwd":
            self._pending = self.forward()

    def _new_layout(self) -> None:
        """Inputs copied into new buffers placed after a random-sized live block (its pages
        are never touched, so it costs address space, not memory)."""
        self._pads.clear()
        rng = self._layout_rng
        self._pads.append(torch.empty(rng.randrange(1, 1 << 16), dtype=torch.uint8))
        self._pads.append(torch.empty(rng.randrange(1 << 20, 3 << 20), dtype=torch.uint8))
        grad = self.point.mode != "fwd"
        # clone() keeps the strides of these dense tensors, so a "bshd" impl keeps its layout.
        self.q, self.k, self.v = (t.detach().clone().requires_grad_(grad) for t in (self.q, self.k, self.v))
        self.extras = {name: t.detach().clone().requires_grad_(t.requires_grad) for name, t in self.extras.items()}
        if self.grad_out is not None:
            self.grad_out = self.grad_out.clone()

    def run(self) -> None:
        """The timed work of one repetition."""
        mode = self.point.mode
        if mode == "fwd":
            with torch.no_grad():
                self.forward()
            return
        out = self.forward() if mode == "fwdbwd" else self._take_pending()
        torch.autograd.grad(out, self.leaves(), self.grad_out)

    def _take_pending(self) -> torch.Tensor:
        out, self._pending = self._pending, None
        if out is None:
            raise RuntimeError("bwd repetition without its forward: call before() first")
        return out


def warm_up(point: Point, device: torch.device, seq: int = 16, params: dict[str, Any] | None = None) -> None:
    """One call at a tiny length: thread pools, kernels and library handles initialise
    here, and it leaves no large freed buffers behind for the measured call to reuse."""
    tiny = Workload(replace(point, shape=replace(point.shape, seq=min(seq, point.shape.seq))), device, params=params)
    tiny.before()
    tiny.run()
