"""The fewest bytes one attention call can move: its inputs read once, its outputs written once.

The roofline (report/roofline.py) divides a row's bytes by its time; a run records them per
point (results.csv's ``bytes``) from this model, so that a variant with extra inputs (a gated
variant's log-gates, the delta rule's β) is charged for them too. Each tensor counts at its own
heads (grouped-query attention's k and v at the key/value heads, GVA's v at the value heads;
linbench/shape.py's ``Shape.qkvo_elements``), per (batch, token, head of its own):

- q, k, v and the output: ``fwd`` reads q, k (Dk each) and v (Dv), writes the output (Dv);
  ``bwd`` reads q, k, v and dO, writes dq, dk, dv; ``fwdbwd`` both, each pass reading its
  inputs afresh. With every head count equal that is 2·Dk + 2·Dv, 4·Dk + 3·Dv and 6·Dk + 5·Dv
  elements per (batch, head, token). All in the run's dtype.
- each extra input, one value per token (``per_token``), Dk (``per_token_channel``) or Dv
  (``per_token_value``) of each value head (the gates and β are per value head under GVA, per
  head otherwise), in its own dtype (a gate stays fp32 for 16-bit q): read once per pass, and
  its gradient written by the backward when gradients reach it. Inputs with one value per head
  are per sequence and left out.

Intermediates (S×S scores, per-chunk states, fp32 copies of 16-bit inputs) are not counted: the
bound is what a kernel moving nothing else would need. The seed variants' bytes are exactly
what report/roofline.py's own model gives a row that does not record them.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from linbench.shape import Shape
from linbench.variants.extra_inputs import ExtraInput

# Passes that read an input, and passes that write its gradient.
PASSES = {"fwd": (1, 0), "bwd": (1, 1), "fwdbwd": (2, 1)}


def extra_input_bytes(
    mode: str, inputs: Iterable[ExtraInput], dim_k: int, dtype: torch.dtype, dim_v: int | None = None
) -> int:
    """Bytes of the extra inputs a ``mode`` pass moves per (batch, head, token)."""
    reads, writes = PASSES[mode]
    total = 0
    for extra in inputs:
        width = {"per_token": 1, "per_token_channel": dim_k, "per_token_value": dim_v or dim_k}.get(extra.shape, 0)
        size = torch.empty(0, dtype=extra.dtype_for(dtype)).element_size()
        total += width * size * (reads + (writes if extra.differentiable else 0))
    return total


def minimal_bytes(
    mode: str,
    shape: Shape,
    dtype: torch.dtype,
    extra_inputs: Iterable[ExtraInput] = (),
) -> int | None:
    """The fewest bytes a ``mode`` call of ``shape`` moves, each tensor at its own heads; None
    for a mode without a model (decode)."""
    elements = shape.qkvo_elements(mode)
    if elements is None:
        return None
    size = torch.empty(0, dtype=dtype).element_size()
    per_token = extra_input_bytes(mode, extra_inputs, shape.dim_k, dtype, shape.dim_v)
    return elements * size + shape.batch * shape.v_heads * shape.seq * per_token
