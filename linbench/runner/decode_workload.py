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
from linbench.runner.workload import EXTRA_SEED_OFFSET
from linbench.sweep.points import Point
from linbench.variants.extra_inputs import check_extra_inputs, draw_extra_inputs, split_draw_settings, take_tokens
from linbench.variants.heads import per_value_head
from linbench.variants.registry import get_variant

Tokens = tuple[torch.Tensor, torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]

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
        # The variant's extra inputs (gates, β) are drawn with each block of tokens, in the
        # settings given (gate_regime), and cut per step like q, k and v.
        self.declared, self.owner = variant.extra_inputs, variant.name
        self.settings, params = split_draw_settings(params or {})
        self.shape = point.shape
        self.dtype = torch_dtype(point.dtype)
        self.device = device
        self.context = point.shape.seq
        # ``spare``: one token more than the steps, for repeatable_step (a cache has room for it).
        self.total = self.context + steps + int(spare)
        # Length-derived parameters (cosine's seq_len, cosformer's M) span the whole generation.
        self.params = variant.length_params(self.total, params)
        self._gen = torch.Generator(device=device).manual_seed(seed)
        self._extra_gen = torch.Generator().manual_seed(seed + EXTRA_SEED_OFFSET)
        self.state: Any = None
        self._tokens = self._draw(self.total - self.context)
        self._next = 0
        self._trim_heap = device.type == "cpu"

    def _draw(self, length: int) -> Tokens:
        """q, k, v and the extra inputs of ``length`` tokens (the extra inputs checked: a draw
        that does not fit is a one-line error before anything is timed)."""
        b, h, _, dim_k, dim_v = self.shape.sizes()

        def one(dim: int, heads: int = h) -> torch.Tensor:
            return torch.randn(b, heads, length, dim, generator=self._gen, device=self.device, dtype=self.dtype)

        # k and v with the point's key/value heads: a grouped decoder's state is that much smaller.
        # v with the point's value heads under GVA (h, the output's heads, is then v's too).
        heads = self.shape.heads
        q, k, v = one(dim_k, heads), one(dim_k, self.shape.kv_heads), one(dim_v, self.shape.v_tensor_heads)
        extras = draw_extra_inputs(
            self.declared,
            (b, h, length, dim_k),
            generator=self._extra_gen,
            device=self.device,
            dtype=self.dtype,
            settings=self.settings,
            dim_v=dim_v,
        )
        check_extra_inputs(self.owner, self.declared, extras, per_value_head(q, k, v), dim_v=dim_v)
        return q, k, v, extras

    def prefill(self) -> None:
        """Absorb the context, block by block, with the decoder's parallel form."""
        for start in range(0, self.context, PREFILL_BLOCK):
            q, k, v, extras = self._draw(min(PREFILL_BLOCK, self.context - start))
            self.state = self.decoder.prefill(q, k, v, state=self.state, capacity=self.total, **self.params, **extras)
            del q, k, v, extras  # free the block before the next is drawn

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
        q, k, v, extras = self._token(n)
        _, self.state = self.decoder.step(q, k, v, state=self.state, **self.params, **extras)

    def _token(self, n: int) -> Tokens:
        """Generated token ``n``: its q, k, v and extra inputs (each cut along the sequence)."""
        q, k, v, extras = self._tokens
        cut = take_tokens(self.declared, extras, n, n + 1)
        return q[..., n : n + 1, :], k[..., n : n + 1, :], v[..., n : n + 1, :], cut

    def repeatable_step(self) -> Callable[[], None]:
        """A step with the last drawn token from the current state, which it leaves as it is:
        calling it again repeats the same step at the same context (a recurrent state is
        replaced, not changed; a cache slot past the filled ones is written again). This is
        what a CUDA graph captures and replays."""
        q, k, v, extras = self._token(self._tokens[0].shape[-2] - 1)
        state, params, step = self.state, self.params, self.decoder.step

        def again() -> None:
            step(q, k, v, state=state, **params, **extras)

        return again


def warm_up(point: Point, device: torch.device, context: int = 16, params: dict[str, Any] | None = None) -> None:
    """A tiny prefill and two steps: thread pools and kernels initialise here, not in a measured step."""
    tiny_point = replace(point, shape=replace(point.shape, seq=min(context, point.shape.seq)))
    tiny = DecodeWorkload(tiny_point, device, 2, params=params)
    tiny.prefill()
    tiny.step()
    tiny.step()
