"""The gated forms on packed variable-length batches (linbench/variants/varlen.py).

A pack's q, k, v and its extra inputs (gates, β: one value per token) arrive as (1, H, T, ...)
tensors with the sequences' boundaries. The preparation (scaling, normalising q and k, making
the gates) works token by token, so it runs once over the whole pack; what comes out is cut at
the boundaries like q, k and v, and every sequence starts from an empty state:

- chunked and quadratic: the form over each sequence's view of the pack, one after another
  (one scan or one S×S product per sequence, no token of padding);
- recurrent: every sequence advances one token per step together ("lockstep", as the linear
  recurrent form does), longest first, a sequence dropping off the batch when it ends: L_max
  steps, as the padded batch takes, each over the sequences still running.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import fields, replace
from typing import TypeVar

import torch

from linbench.variants.gated.decay_recurrent import decay_step
from linbench.variants.gated.delta_recurrent import delta_step
from linbench.variants.varlen import Segments, lockstep_order

Inputs = TypeVar("Inputs")


def sequences(x: Inputs, segments: Segments) -> Iterator[Inputs]:
    """A prepared pack (``DecayInputs`` or ``DeltaInputs``, every tensor (1, H, T, ...)) as the
    prepared inputs of each sequence in turn, views cut at the boundaries."""
    present = [f.name for f in fields(x) if getattr(x, f.name) is not None]  # type: ignore[arg-type]
    parts = {name: segments.split(getattr(x, name)) for name in present}
    for i in range(segments.count):
        yield replace(x, **{name: parts[name][i] for name in present})  # type: ignore[type-var]


def per_sequence_form(form: Callable[[Inputs], torch.Tensor], x: Inputs, segments: Segments) -> torch.Tensor:
    """``form`` on each sequence of the prepared pack ``x``, outputs joined back: (1, H, T, Dv)."""
    return torch.cat([form(part) for part in sequences(x, segments)], dim=2)


def lockstep(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    per_token: dict[str, torch.Tensor | None],
    segments: Segments,
    step: Callable[..., tuple[torch.Tensor, torch.Tensor]],
) -> torch.Tensor:
    """The recurrence ``step(state, q_t, k_t, v_t, **per_token_t)`` over every sequence of a
    pack at once (module doc); (1, H, T, ...) tensors in, (1, H, T, Dv) out."""
    positions, counts, inverse = lockstep_order(segments, q.device)

    def steps(x: torch.Tensor) -> list[torch.Tensor]:
        # Step order along T, then one (n, H, ...) piece per step: one gather, one split.
        return [part.transpose(0, 1) for part in x[0].index_select(1, positions).split(counts, dim=1)]

    qs, ks, vs = steps(q), steps(k), steps(v)
    extra = {name: steps(t) if t is not None else [None] * len(counts) for name, t in per_token.items()}
    state = k.new_zeros(segments.count, k.shape[1], k.shape[-1], v.shape[-1])
    outs = []
    for t, n in enumerate(counts):
        # Longest first: the sequences still running are the state's first n rows.
        row, state = step(state[:n], qs[t], ks[t], vs[t], *(values[t] for values in extra.values()))
        outs.append(row)
    return torch.cat(outs, dim=0).index_select(0, inverse).transpose(0, 1).unsqueeze(0)


def decay_lockstep(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, segments: Segments
) -> torch.Tensor:
    """The decaying recurrence (g: (1, H, T, 1) or (1, H, T, Dk)) over a pack, in lockstep."""
    return lockstep(q, k, v, {"g": g}, segments, decay_step)


def delta_lockstep(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    beta: torch.Tensor,
    g: torch.Tensor | None,
    segments: Segments,
) -> torch.Tensor:
    """The (gated) delta rule (beta: (1, H, T); g: (1, H, T), (1, H, T, Dk) for kda, or None
    for deltanet) over a pack, in lockstep."""
    return lockstep(q, k, v, {"beta": beta, "g": g}, segments, delta_step)
