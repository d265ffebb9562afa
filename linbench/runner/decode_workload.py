"""The closures a decode point times: one generated token per call, after a prefill.

The context is drawn and prefilled in blocks, so what the process holds afterwards is
the decoder's state and nothing of the context itself: a recurrent state's constant size
is then what the memory figures show, not the prompt's tensors. The tokens to generate
are drawn up front (a few rows), so a step does nothing but attend.

Unlike ``linbench run`` the inputs are not moved to fresh buffers between repetitions:
each step carries the state of the one before, and what it reads is that state.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import torch

from linbench.dtypes import torch_dtype
from linbench.measure.memory import release_free_heap
from linbench.sweep.points import Point
from linbench.variants.registry import get_variant

# Tokens drawn and prefilled at a time: a 1m-token context never exists as one tensor.
PREFILL_BLOCK = 16384


class DecodeWorkload:
    """A context of ``point.shape.seq`` tokens to prefill and ``steps`` tokens to generate."""

    def __init__(
        self,
        point: Point,
        device: torch.device,
        steps: int,
        seed: int = 0,
        spare: bool = False,
        params: dict[str, Any] | None = None,
    ) -> None:
        variant = get_variant(point.variant)
        self.decoder = variant.decoder(point.impl)
        self.shape = point.shape
        self.dtype = torch_dtype(point.dtype)
        self.device = device
        self.context = point.shape.seq
        # ``spare``: one token more than the steps, for repeatable_step (a cache has room for it).
        self.total = self.context + steps + int(spare)
        # Length-derived parameters (cosine's seq_len, cosformer's M) span the whole generation.
        self.params = variant.length_params(self.total, params or {})
        self._gen = torch.Generator(device=device).manual_seed(seed)
        self.state: Any = None
        self._tokens = self._draw(self.total - self.context)
        self._next = 0
        self._trim_heap = device.type == "cpu"

    def _draw(self, length: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        b, h, _, dim_k, dim_v = self.shape.sizes()

        def one(dim: int, heads: int = h) -> torch.Tensor:
            return torch.randn(b, heads, length, dim, generator=self._gen, device=self.device, dtype=self.dtype)

        # k and v with the point's key/value heads: a grouped decoder's state is that much smaller.
        return one(dim_k), one(dim_k, self.shape.kv_heads), one(dim_v, self.shape.kv_heads)

    def prefill(self) -> None:
        """Absorb the context, block by block, with the decoder's parallel form."""
        for start in range(0, self.context, PREFILL_BLOCK):
            q, k, v = self._draw(min(PREFILL_BLOCK, self.context - start))
            self.state = self.decoder.prefill(q, k, v, state=self.state, capacity=self.total, **self.params)
            del q, k, v  # free the block before the next is drawn

    def before(self) -> None:
        """Untimed set-up of a step. Before the first, whose peak memory is read, the heap the
        prefill freed is handed back, so that the step's own allocations show in peak RSS."""
        if self._trim_heap:
            release_free_heap()
            self._trim_heap = False

    def run(self) -> None:
        """The timed work: one step."""
        self.step()

    def step(self) -> None:
        """Generate the next token: its attention over everything so far."""
        n = self._next
        if n >= self.total - self.context:
            raise RuntimeError(f"all {self.total - self.context} tokens were generated; no step is left")
        self._next += 1
        q, k, v = (t[..., n : n + 1, :] for t in self._tokens)
        _, self.state = self.decoder.step(q, k, v, state=self.state, **self.params)

    def repeatable_step(self) -> Callable[[], None]:
        """A step with the last drawn token from the current state, which it leaves as it is:
        calling it again repeats the same step at the same context (a recurrent state is
        replaced, not changed; a cache slot past the filled ones is written again). This is
        what a CUDA graph captures and replays."""
        q, k, v = (t[..., -1:, :] for t in self._tokens)
        state, params, step = self.state, self.params, self.decoder.step

        def again() -> None:
            step(q, k, v, state=state, **params)

        return again


def warm_up(point: Point, device: torch.device, context: int = 16, params: dict[str, Any] | None = None) -> None:
    """A tiny prefill and two steps: thread pools and kernels initialise here, not in a measured step."""
    tiny_point = replace(point, shape=replace(point.shape, seq=min(context, point.shape.seq)))
    tiny = DecodeWorkload(tiny_point, device, 2, params=params)
    tiny.prefill()
    tiny.step()
    tiny.step()
