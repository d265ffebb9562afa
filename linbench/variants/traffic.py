"""The fewest bytes one attention call can move: its inputs read once, its outputs written once.

The roofline (report/roofline.py) divides a row's bytes by its time; a run records them per
point (results.csv's ``bytes``) from this model, so that a variant with extra inputs (a gated
variant's log-gates, the delta rule's β) is charged for them too. Per (batch, head, token):

- q, k, v and the output: ``fwd`` reads q, k (Dk each) and v (Dv), writes the output (Dv):
  2·Dk + 2·Dv; ``bwd`` reads q, k, v and dO, writes dq, dk, dv: 4·Dk + 3·Dv; ``fwdbwd`` both,
  each pass reading its inputs afresh: 6·Dk + 5·Dv. All in the run's dtype.
- each extra input, one value per token (``per_token``), Dk (``per_token_channel``) or Dv
  (``per_token_value``), in its own dtype (a gate stays fp32 for 16-bit q): read once per
  pass, and its gradient written by the backward when gradients reach it. Inputs with one
  value per head are per sequence and left out.

Intermediates (S×S scores, per-chunk states, fp32 copies of 16-bit inputs) are not counted: the
bound is what a kernel moving nothing else would need. The seed variants' bytes are exactly
what report/roofline.py's own model gives a row that does not record them.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from linbench.variants.extra_inputs import ExtraInput

# Elements of q, k, v, the output and their gradients per (batch, head, token): (× Dk, × Dv).
QKV_ELEMENTS = {"fwd": (2, 2), "bwd": (4, 3), "fwdbwd": (6, 5)}
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
    shape: tuple[int, int, int, int, int],
    dtype: torch.dtype,
    extra_inputs: Iterable[ExtraInput] = (),
) -> int | None:
    """The fewest bytes a ``mode`` call of ``shape`` (batch, heads, seq, Dk, Dv) moves; None for
    a mode without a model (decode)."""
    if mode not in QKV_ELEMENTS:
        return None
    batch, heads, seq, dim_k, dim_v = shape
    per_k, per_v = QKV_ELEMENTS[mode]
    size = torch.empty(0, dtype=dtype).element_size()
    per_token = (per_k * dim_k + per_v * dim_v) * size + extra_input_bytes(mode, extra_inputs, dim_k, dtype, dim_v)
    return batch * heads * seq * per_token
