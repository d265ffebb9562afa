"""The correctness gate of a serving decode point: its decoder checked on the path it is timed on.

The plain decode gate (check/correctness.py's ``check_decoder``) steps one batch of identical
sequences from inputs it draws itself. A serving point is timed on another path: the serving
workload's own draw of every request's tokens (runner/serving_workload.py), a pool of slots,
T tokens a step rolled back to the accepted ones, a state dtype and layout
(variants/serving.py). A wrong draw there (v at the q/k heads while the point says more value
heads) leaves the plain gate passing. So a serving point is also gated here, on that path:
the point's own workload, at a few short mixed contexts and ``GATE_STEPS`` steps, with the
point's heads, tokens per step, accept pattern, state dtype and layout, and

- the outputs must have the point's output heads (its value heads under GVA);
- each request's every token, accepted or not, must equal the fp64 reference over that
  request's own tokens: its prefilled context, the tokens it kept, then the step's.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch

from linbench.check.closeness import compare
from linbench.check.correctness import CaseResult
from linbench.dtypes import torch_dtype
from linbench.oom import is_out_of_memory
from linbench.runner.gate_point import GATE_STEPS
from linbench.runner.serving_workload import ServingWorkload
from linbench.sweep.points import Point
from linbench.sweep.serving import Serving
from linbench.variants.extra_inputs import ExtraInput
from linbench.variants.heads import expand_heads
from linbench.variants.registry import get_variant
from linbench.variants.serving import Tokens, pool_slots_per_request
from linbench.variants.variant import Variant

# The gate checks the serving path, not the length: a few requests at short contexts, two of
# them different (so requests of one context prefill together and others apart).
SERVED_GATE_BATCH = 3
SERVED_GATE_CONTEXT = 12


def check_served(point: Point, device: torch.device, seed: int, params: dict[str, Any] | None) -> CaseResult:
    """The serving path of ``point`` against the fp64 reference, request by request (module doc)."""
    variant = get_variant(point.variant)
    decoder = variant.decoder(point.impl)
    batch = min(point.shape.batch, SERVED_GATE_BATCH)
    longest = min(point.shape.seq, SERVED_GATE_CONTEXT)
    contexts = tuple(longest if b % 2 == 0 else max(longest // 2, 1) for b in range(batch))
    per_step = point.tokens_per_step or 1
    # A slot more than the requests need, so that theirs are scattered in the pool.
    pool = batch * pool_slots_per_request(decoder, per_step) + 1
    serving = replace(point.serving or Serving(), pool=pool, contexts=None)
    small = replace(point, shape=replace(point.shape, batch=batch, seq=longest), serving=serving)
    dtype = torch_dtype(point.dtype)
    result = CaseResult(variant.name, point.impl, small.shape, True, dtype, setting=_setting(point))
    try:
        with torch.no_grad():
            work = ServingWorkload(small, device, GATE_STEPS, seed, params, contexts=contexts)
            work.drawn = []
            work.prefill()
            outputs = [work.step() for _ in range(GATE_STEPS)]
    except Exception as exc:  # whatever the served decoder raises is its failure
        result.error = f"{type(exc).__name__}: {exc}"
        result.out_of_memory = is_out_of_memory(exc)
        return result
    heads = point.shape.v_heads  # the output's heads: q's, or v's under GVA
    if outputs[0].shape[1] != heads:
        result.error = f"served outputs have {outputs[0].shape[1]} heads where {point.shape.label} has {heads}"
        return result
    actual, expected = _served_and_expected(variant, work, outputs)
    # A state kept coarser than the compute is judged by the coarser dtype's rules.
    judged = _coarser(dtype, torch_dtype(point.state_dtype) if point.state_dtype else dtype)
    result.comparisons = [compare("served rows", actual, expected, judged)]
    return result


def _served_and_expected(
    variant: Variant, work: ServingWorkload, outputs: list[torch.Tensor]
) -> tuple[torch.Tensor, torch.Tensor]:
    """Every request's served rows of every step, and the fp64 reference's rows for the same
    tokens, each (steps · B, H, T, Dv)."""
    assert work.drawn is not None
    declared = variant.extra_inputs
    history: dict[int, list[Tokens]] = {}
    for rows, tokens in work.drawn:  # the prefills, block by block
        for index, row in enumerate(rows.tolist()):
            history.setdefault(row, []).append(_request(tokens, index, declared))
    q, k, v, extras = work.step_tokens
    served, expected = [], []
    for n, out in enumerate(outputs):
        part = slice(n * work.per_step, (n + 1) * work.per_step)
        step = (q[..., part, :], k[..., part, :], v[..., part, :], _cut_extras(declared, extras, part))
        for row in range(len(work.contexts)):
            mine = _request(step, row, declared)
            whole = _join([*history[row], mine], declared)
            reference = _reference(variant, whole, work.params)
            served.append(out[row])
            expected.append(reference[0, :, -work.per_step :, :])
            kept = int(work.accepted[n, row])
            history[row].append(_cut_tokens(mine, declared, slice(0, kept)))
    return torch.stack(served), torch.stack(expected)


def _reference(variant: Variant, tokens: Tokens, params: dict[str, Any]) -> torch.Tensor:
    """The variant's fp64 reference over one request's tokens (1, H, S, Dv): q and k repeated
    to v's heads (GVA), or k and v to q's (grouped-query)."""
    from linbench.api import attention

    q, k, v = (t.to(torch.float64) for t in tokens[:3])
    extras = {name: value.to(torch.float64) for name, value in tokens[3].items()}
    if v.shape[1] > k.shape[1]:
        q, k = expand_heads(q, v.shape[1]), expand_heads(k, v.shape[1])
    else:
        k, v = expand_heads(k, q.shape[1]), expand_heads(v, q.shape[1])
    return attention(q, k, v, variant=variant.name, impl=variant.reference, causal=True, **params, **extras)


def _request(tokens: Tokens, index: int, declared: tuple[ExtraInput, ...]) -> Tokens:
    """Request ``index``'s tokens of a batch's, kept as a batch of one."""
    q, k, v, extras = tokens
    one = slice(index, index + 1)
    return q[one], k[one], v[one], {e.name: extras[e.name][one] for e in declared}


def _cut_extras(declared: tuple[ExtraInput, ...], extras: dict[str, Any], part: slice) -> dict[str, Any]:
    return {e.name: e.tokens(extras[e.name], part.start, part.stop) for e in declared}


def _cut_tokens(tokens: Tokens, declared: tuple[ExtraInput, ...], part: slice) -> Tokens:
    q, k, v, extras = tokens
    return q[..., part, :], k[..., part, :], v[..., part, :], _cut_extras(declared, extras, part)


def _join(pieces: list[Tokens], declared: tuple[ExtraInput, ...]) -> Tokens:
    """Pieces of one request's tokens, in order, as one sequence."""
    q = torch.cat([piece[0] for piece in pieces], dim=-2)
    k = torch.cat([piece[1] for piece in pieces], dim=-2)
    v = torch.cat([piece[2] for piece in pieces], dim=-2)
    extras = {}
    for extra in declared:
        parts = [piece[3][extra.name] for piece in pieces]
        if extra.shape == "per_head":
            extras[extra.name] = parts[0]
        else:
            extras[extra.name] = torch.cat(parts, dim=-1 if extra.shape == "per_token" else -2)
    return q, k, v, extras


def _coarser(a: torch.dtype, b: torch.dtype) -> torch.dtype:
    return a if torch.finfo(a).eps >= torch.finfo(b).eps else b


def _setting(point: Point) -> str:
    """What the served check ran with: ``served T2 accept 0.5 state bf16 k-last``."""
    serving = point.serving or Serving()
    words = ["served", f"T{point.tokens_per_step or 1}", f"accept {serving.accept}"]
    words += [f"state {point.state_dtype}"] if point.state_dtype else []
    words += [point.state_layout] if point.state_layout else []
    return " ".join(words)
