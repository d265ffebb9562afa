"""The closures a serving decode point times: one step of every request, after their prefills.

A serving point (sweep/serving.py) is a batch of requests at their own contexts, their states
in a pool of slots, T tokens a step rolled back to each request's accepted ones, the state
kept in its own dtype (linbench/variants/serving.py does the stepping). The prefill is
untimed; each timed call is one step of the whole batch. What one request holds, the accepted
tokens per step, the drift of the kept state against fp64 and the memory budget are read
here, once per process.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from linbench.dtypes import torch_dtype
from linbench.machine.facts import device_memory_bytes
from linbench.measure.memory import release_free_heap
from linbench.runner.workload import EXTRA_SEED_OFFSET
from linbench.shape import V_LAST
from linbench.sweep.points import Point
from linbench.sweep.serving import Serving
from linbench.variants.extra_inputs import draw_extra_inputs, split_draw_settings
from linbench.variants.registry import get_variant
from linbench.variants.serving import (
    Accept,
    Server,
    Tokens,
    kernel_step,
    pool_slots_per_request,
    pooled_step,
    state_drift,
)


class ServingWorkload:
    """A serving point's requests, prefilled, and ``steps`` steps of theirs to time."""

    def __init__(
        self,
        point: Point,
        device: torch.device,
        steps: int,
        seed: int = 0,
        params: dict[str, Any] | None = None,
        contexts: tuple[int, ...] | None = None,
    ) -> None:
        """``contexts``: the requests' contexts (the gate's short ones), else the point's."""
        variant = get_variant(point.variant)
        self.decoder = variant.decoder(point.impl)
        self.declared = variant.extra_inputs
        self.settings, given = split_draw_settings(params or {})
        self.serving = point.serving or Serving()
        self.point, self.device, self.steps = point, device, steps
        self.dtype = torch_dtype(point.dtype)
        self.state_dtype = torch_dtype(point.state_dtype) if point.state_dtype else None
        self.per_step = point.tokens_per_step or 1
        batch = point.shape.batch
        self.contexts = contexts or self.serving.request_contexts(batch, point.shape.seq)
        # A cache holds every token a request may reach: its context and every step's drafts.
        self.capacity = max(self.contexts) + (steps + 1) * self.per_step
        self.params = variant.length_params(self.capacity, given)
        # k and v repeated to q's heads for a decoder that keeps no state per key/value head;
        # v with the point's value heads under GVA, its state then per value head.
        shape = point.shape
        self.kv_heads = shape.kv_heads if self.decoder.gqa else shape.heads
        self.v_heads = shape.v_heads if shape.value_grouped else self.kv_heads
        self._gen = torch.Generator(device=device).manual_seed(seed)
        self._extra_gen = torch.Generator().manual_seed(seed + EXTRA_SEED_OFFSET)
        # A kernel with no fp64 form drifts against the same recurrence in PyTorch, in fp64.
        self.exact = variant.decoders.get("recurrent") if self.decoder.library else None
        self.server = Server(
            self.decoder,
            self.params,
            self.declared,
            self.contexts,
            slots=self.serving.slots(batch, pool_slots_per_request(self.decoder, self.per_step)),
            dtype=self.dtype,
            state_dtype=self.state_dtype,
            state_layout=point.state_layout or V_LAST,
            positional=any(spec.from_length for spec in variant.param_specs),
            tokens_per_step=self.per_step,
            seed=seed,
        )
        self.accepted = Accept.parse(self.serving.accept).draw(self.per_step, batch, steps, seed)
        self._tokens = self._draw(batch, steps * self.per_step)
        self._next = 0
        self._start: Any = None
        self._trim_heap = device.type == "cpu"
        # The correctness gate's record of what each prefill drew: (batch rows, tokens).
        self.drawn: list[tuple[torch.Tensor, Tokens]] | None = None

    def _draw(self, batch: int, length: int, dtype: torch.dtype | None = None) -> Tokens:
        """q, k, v and the extra inputs of ``length`` tokens of ``batch`` requests."""
        shape, dtype = self.point.shape, dtype or self.dtype

        def one(heads: int, dim: int) -> torch.Tensor:
            return torch.randn(batch, heads, length, dim, generator=self._gen, device=self.device, dtype=dtype)

        q = one(shape.heads, shape.dim_k)
        k, v = one(self.kv_heads, shape.dim_k), one(self.v_heads, shape.dim_v)
        sizes = (batch, shape.v_heads, length, shape.dim_k)  # gates and β per value head
        extras = draw_extra_inputs(
            self.declared,
            sizes,
            generator=self._extra_gen,
            device=self.device,
            dtype=dtype,
            settings=self.settings,
            dim_v=shape.dim_v,
        )
        return q, k, v, extras

    def prefill(self) -> None:
        """Every request's context, untimed; the first request's state kept for the drift."""

        def draw(rows: torch.Tensor, start: int, stop: int) -> Tokens:
            tokens = self._draw(len(rows), stop - start)
            if self.drawn is not None:
                self.drawn.append((rows, tokens))
            return tokens

        self.server.prefill(draw, self.capacity)
        if not self.decoder.state_grows:
            self._start = self.server.state(torch.tensor([0]))

    def before(self) -> None:
        """Before the first step, whose peak memory is read, the heap the prefill freed is handed back."""
        if self._trim_heap:
            release_free_heap()
            self._trim_heap = False

    def run(self) -> None:
        """The timed work: one step of every request."""
        self.step()

    def step(self) -> torch.Tensor:
        """One step of every request: the outputs (B, H, T, Dv) of its T tokens."""
        n = self._next
        if n >= self.steps:
            raise RuntimeError(f"all {self.steps} steps were taken; no step is left")
        self._next += 1
        q, k, v, extras = self._tokens
        part = slice(n * self.per_step, (n + 1) * self.per_step)
        cut = {name: e.tokens(extras[e.name], part.start, part.stop) for name, e in self._extras().items()}
        return self.server.step((q[..., part, :], k[..., part, :], v[..., part, :], cut), self.accepted[n])

    @property
    def step_tokens(self) -> Tokens:
        """The tokens of every step, drawn up front: (B, H, steps · T, D) each."""
        return self._tokens

    def _extras(self) -> dict[str, Any]:
        return {extra.name: extra for extra in self.declared}

    def readings(self) -> dict[str, Any]:
        """What one request holds, the tokens kept a step, the drift and the memory budget."""
        budget = self.serving.memory_budget or _device_memory(self.device)
        drift = self._drift() if self._start is not None else None
        return {
            "state_bytes_per_request": self.server.bytes_per_request,
            "accepted_per_step": float(self.accepted[: max(self._next, 1)].float().mean()),
            "state_drift": drift,
            "drift_steps": self.serving.drift_steps if drift is not None else None,
            "memory_budget_bytes": budget,
        }

    def graph_steps(self, rotations: int) -> list[Callable[[], None]]:
        """One capturable step (gather, T tokens, write-back) over each of ``rotations`` copies
        of the pool, the first step's tokens fixed: replayed in turn, each reads its pool cold.
        ValueError, saying why, for a step that is not one graph: a KV cache's, one grouped by
        position, or acceptance that differs by request (host decisions each step)."""
        pool = self.server.pool
        if pool is None or self.server.positional:
            raise ValueError("a serving step of a KV cache or by position is not one graph")
        if Accept.parse(self.serving.accept).rate is not None:
            raise ValueError("an accept rate splits the requests each step: give a count to capture the step")
        q, k, v, extras = self._tokens
        part = slice(0, self.per_step)
        cut = {name: e.tokens(extras[e.name], 0, self.per_step) for name, e in self._extras().items()}
        tokens = (q[..., part, :], k[..., part, :], v[..., part, :], cut)
        pools = [pool, *(pool.copy() for _ in range(rotations - 1))]
        count = int(self.accepted[0, 0])
        server = self.server
        if self.decoder.pooled is not None:
            many = server.per_request > 1
            slots = (server.token_slots if many else server.slots).to(self.device)
            kept = torch.full((server.batch,), count, dtype=torch.long, device=self.device) if many else None
            return [kernel_step(self.decoder, self.params, p, slots, kept, tokens) for p in pools]
        slots = server.slots.to(self.device)
        return [pooled_step(self.decoder, self.params, self.declared, p, slots, tokens, count) for p in pools]

    def _drift(self) -> float:
        tokens = self._draw(1, self.serving.drift_steps, torch.float64)
        return state_drift(
            self.decoder, self.params, self.declared, self._start, tokens, self.dtype, self.state_dtype, self.exact
        )


def _device_memory(device: torch.device) -> int:
    """The device's memory (a CPU's: the machine's RAM, the same in every process)."""
    return device_memory_bytes(device)
