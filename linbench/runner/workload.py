"""The closures a worker times: one attention call in the point's mode.

fwd runs the forward under no_grad (inference); fwdbwd runs forward and backward;
bwd builds the forward graph untimed in ``before`` and times the backward alone.
Gradients come from ``torch.autograd.grad``, which returns fresh tensors instead of
accumulating into ``.grad``: every repetition does the same work with nothing to clear.
"""

from __future__ import annotations

from dataclasses import replace

import torch

from linbench.api import attention
from linbench.dtypes import torch_dtype
from linbench.sweep.points import Point


class Workload:
    """Inputs for ``point`` on ``device`` and the ``before``/``run`` pair the timers take."""

    def __init__(self, point: Point, device: torch.device, seed: int = 0) -> None:
        self.point = point
        shape, dtype = point.shape, torch_dtype(point.dtype)
        gen = torch.Generator(device=device).manual_seed(seed)
        grad = point.mode != "fwd"

        def draw(dim: int) -> torch.Tensor:
            size = (shape.batch, shape.heads, shape.seq, dim)
            return torch.randn(size, generator=gen, device=device, dtype=dtype).requires_grad_(grad)

        self.q, self.k, self.v = draw(shape.dim_k), draw(shape.dim_k), draw(shape.dim_v)
        self.grad_out = draw(shape.dim_v).detach() if grad else None
        self._pending: torch.Tensor | None = None

    def forward(self) -> torch.Tensor:
        p = self.point
        return attention(self.q, self.k, self.v, variant=p.variant, impl=p.impl, causal=p.causal)

    def before(self) -> None:
        """Untimed set-up of one repetition: bwd's forward graph."""
        if self.point.mode == "bwd":
            self._pending = self.forward()

    def run(self) -> None:
        """The timed work of one repetition."""
        mode = self.point.mode
        if mode == "fwd":
            with torch.no_grad():
                self.forward()
            return
        out = self.forward() if mode == "fwdbwd" else self._take_pending()
        torch.autograd.grad(out, (self.q, self.k, self.v), self.grad_out)

    def _take_pending(self) -> torch.Tensor:
        out, self._pending = self._pending, None
        if out is None:
            raise RuntimeError("bwd repetition without its forward: call before() first")
        return out


def warm_up(point: Point, device: torch.device, seq: int = 16) -> None:
    """One call at a tiny length: thread pools, kernels and library handles initialise
    here, and it leaves no large freed buffers behind for the measured call to reuse."""
    tiny = Workload(replace(point, shape=replace(point.shape, seq=min(seq, point.shape.seq))), device)
    tiny.before()
    tiny.run()
