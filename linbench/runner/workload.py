"""The closures a worker times: one attention call in the point's mode.

fwd runs the forward under no_grad (inference); fwdbwd runs forward and backward;
bwd builds the forward graph untimed in ``before`` and times the backward alone.
Gradients come from ``torch.autograd.grad``, which returns fresh tensors instead of
accumulating into ``.grad``: every repetition does the same work with nothing to clear.

On CPU the inputs are also placed anew between repetitions, at random offsets in an arena
faulted in once, behind randomly sized blocks, so where the inputs and the impl's temporaries
land in memory is drawn anew many times a process. Without it, a process keeps one layout for
its whole life and the layout alone decided whether a point took 2.5 or 4.5 ms on our 2-core
test machine: the same sweep run twice disagreed by 80% on single points with ±5% spread
inside each run (the idea of Curtsinger and Berger's Stabilizer: randomise layout so that
timings become a statistic of the code, not of one layout). The first scheme copied the inputs
into freshly allocated buffers before every repetition, and with it eight processes gave
medians within ±2% of each other; but each copy landed in fresh pages that faulted in every
repetition (25 ms a repetition at 4k under load, about as long as cosine:kernel's call, and
about 1.0 s of every CPU process). In the arena a placement costs one copy of the inputs, and
a placement is skipped where its copy would cost more than ``LAYOUT_SHARE`` of the calls since
the last one. (Whether the arena keeps the ±2% is still to be measured on a quiet machine:
on a shared one, both schemes' processes spread by up to 36–46% from load alone.)
"""

from __future__ import annotations

import random
import time
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
from linbench.variants.heads import per_value_head
from linbench.variants.registry import get_variant

# A new placement of the inputs costs at most this share of the time the calls take.
LAYOUT_SHARE = 0.1
# Before each placed input, a random gap of up to this many bytes, in steps of ALIGN_BYTES
# (torch's CPU allocator aligns to 64 bytes; an arena offset keeps that alignment).
GAP_BYTES = 1 << 20
ALIGN_BYTES = 64
# The arena's name of an extra input (gates, β), beside q, k, v and grad_out.
EXTRA = "extra:"
# The extra inputs (gates, β) are drawn from a CPU generator of their own, seeded from the
# workload's: the same values on every device, and q, k, v as they were before there were any.
EXTRA_SEED_OFFSET = 7919
# The length of a warm-up call that only starts thread pools and libraries.
TINY_SEQ = 16


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
        # v has the point's value heads under GVA (more than q's), and so do the output and the gates.
        self.k, self.v = draw(shape.dim_k, shape.kv_heads), draw(shape.dim_v, shape.v_tensor_heads)
        self.grad_out = draw(shape.dim_v, shape.v_heads).detach() if grad else None
        self.extras = self._draw_extras(settings, seed, grad)
        self.held = self._hold()
        self._pending: torch.Tensor | None = None
        self._shuffle_layout = device.type == "cpu"
        self._layout_rng = random.Random(seed)
        self._pads: list[torch.Tensor] = []
        self._calls = 0
        self._arena: torch.Tensor | None = None  # bytes the inputs are placed in (CPU)
        self._sources: dict[str, torch.Tensor] = {}  # the inputs as made, copied into the arena
        self._layout_s = 0.0  # what the last placement cost
        self._calls_s = 0.0  # what the calls since the last placement took
        self._ready_at: float | None = None  # when before() last returned

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
            (shape.batch, shape.v_heads, shape.seq, shape.dim_k),  # per value head under GVA
            generator=gen,
            device=self.q.device,
            dtype=self.q.dtype,
            settings=settings,
            dim_v=shape.dim_v,
        )
        like = per_value_head(self.q, self.k, self.v)
        check_extra_inputs(self.point.variant, declared, drawn, like, dim_v=shape.dim_v)
        return {
            extra.name: (seq_major(extra, drawn[extra.name]) if self._seq_major else drawn[extra.name]).requires_grad_(
                grad and extra.differentiable
            )
            for extra in declared
        }

    def _hold(self) -> dict[str, Any] | None:
        """What the impl's library takes precomputed for these inputs (``Impl.hold``: another
        library's gate space, constant tensors, a gate-floor check), made here, untimed, once."""
        impl = get_variant(self.point.variant).impl(self.point.impl)
        if impl.hold is None:
            return None
        return impl.hold(self.q, self.k, self.v, segments=self._segments(), **self.params, **self.extras)

    def _segments(self) -> Any:
        """The pack's boundaries where the call is one packed call (PackWorkload), else None."""
        return None

    def _held(self) -> dict[str, Any]:
        return {} if self.held is None else {"held": self.held}

    def leaves(self) -> tuple[torch.Tensor, ...]:
        """What a backward differentiates: q, k, v and the extra inputs gradients reach."""
        return (self.q, self.k, self.v, *(t for t in self.extras.values() if t.requires_grad))

    def forward(self) -> torch.Tensor:
        p = self.point
        return attention_prechecked(
            self.q,
            self.k,
            self.v,
            variant=p.variant,
            impl=p.impl,
            causal=p.causal,
            **self.params,
            **self.extras,
            **self._held(),
        )

    def before(self) -> None:
        """Untimed set-up of one repetition: a fresh memory layout (CPU), bwd's forward graph."""
        # The first call reads peak memory, so it runs on the layout the inputs were made
        # in: random blocks and placed copies would only blur what the impl itself holds.
        if self._shuffle_layout and self._calls > 0 and self._layout_due():
            self._layout_s, self._calls_s = self._new_layout(), 0.0
        self._calls += 1
        if self.point.mode == "bwd":
            self._pending = self.forward()
        self._ready_at = time.perf_counter()

    def _layout_due(self) -> bool:
        """Whether to place the inputs anew: the calls since the last placement (the time from
        one before() to the next is one call) took at least 1 / LAYOUT_SHARE times its cost."""
        if self._ready_at is not None:
            self._calls_s += time.perf_counter() - self._ready_at
        return self._calls_s * LAYOUT_SHARE >= self._layout_s

    def _new_layout(self) -> float:
        """The inputs copied to random offsets of the arena, after a random-sized live block
        on the heap and one among the mapped regions (their pages are never touched, so they
        cost address space, not memory): the impl's temporaries land elsewhere too. Returns
        the seconds the placement took, the arena's making aside (it is made once)."""
        arena = self._arena_bytes()
        started = time.perf_counter()
        self._pads.clear()
        rng = self._layout_rng
        self._pads.append(torch.empty(rng.randrange(1, 1 << 16), dtype=torch.uint8))
        self._pads.append(torch.empty(rng.randrange(1 << 20, 3 << 20), dtype=torch.uint8))
        grad = self.point.mode != "fwd"
        offset = 0
        for name, source in self._sources.items():
            offset += rng.randrange(0, GAP_BYTES, ALIGN_BYTES)
            size = _extent_bytes(source)
            typed = arena[offset : offset + size].view(source.dtype)
            # as_strided keeps the source's strides, so a "bshd" impl keeps its layout.
            placed = typed.as_strided(source.size(), source.stride()).copy_(source).detach()
            if name.startswith(EXTRA):  # an extra input keeps whether gradients reach it
                extra = name.removeprefix(EXTRA)
                self.extras[extra] = placed.requires_grad_(self.extras[extra].requires_grad)
            else:
                setattr(self, name, placed.requires_grad_(grad and name != "grad_out"))
            offset += -(-size // ALIGN_BYTES) * ALIGN_BYTES
        return time.perf_counter() - started

    def _arena_bytes(self) -> torch.Tensor:
        """The arena, made and faulted in on first use: room for every input and its gap."""
        if not self._sources:
            names = ("q", "k", "v", "grad_out")
            self._sources = {name: t.detach() for name in names if (t := getattr(self, name)) is not None}
            self._sources |= {EXTRA + name: t.detach() for name, t in self.extras.items()}
        if self._arena is None:
            size = sum(-(-_extent_bytes(t) // ALIGN_BYTES) * ALIGN_BYTES + GAP_BYTES for t in self._sources.values())
            self._arena = torch.zeros(size, dtype=torch.uint8)
        return self._arena

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


def _extent_bytes(tensor: torch.Tensor) -> int:
    """The bytes a tensor's elements span in its storage (a transposed view spans its base)."""
    last = sum((size - 1) * stride for size, stride in zip(tensor.size(), tensor.stride(), strict=True))
    return (last + 1) * tensor.element_size()


def warm_up(point: Point, device: torch.device, seq: int = TINY_SEQ, params: dict[str, Any] | None = None) -> None:
    """One call at length ``seq`` (a tiny one by default): thread pools, kernels and library
    handles initialise here, and it leaves no large freed buffers behind for the measured call
    to reuse (a GPU's caching allocator hands its blocks back; a CPU worker hands freed heap
    back before its measured call: execute.py)."""
    warm = Workload(replace(point, shape=replace(point.shape, seq=min(seq, point.shape.seq))), device, params=params)
    warm.before()
    warm.run()
    del warm
    if device.type == "cuda":
        torch.cuda.empty_cache()
