"""Grouped-query and multi-query attention: fewer key/value heads than query heads.

Query head h reads key/value head h // G, G = H / H_kv (the grouping of SDPA's
``enable_gqa`` and of the models that use it). An impl does it one of two ways, and
``Impl.gqa`` says which:

- natively: the form keeps one state (a linear form's Dk×Dv sum, a KV cache) per key/value
  head and lets the G query heads of its group read it. ``per_kv_head`` turns a form whose
  maths broadcasts over leading axes into one that does so: q is seen as (B, H_kv, G, S, D),
  k and v as (B, H_kv, 1, S, D), and a carried state as (B, H_kv, 1, ...);
- by expanding: k and v (and the extra inputs a variant declares per key/value head) are
  repeated to H heads before the impl runs (``expand_heads``), inside the call, so a timed
  call pays for the copy as a model running that impl would.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

import torch

Form = TypeVar("Form", bound=Callable[..., Any])


def groups(q: torch.Tensor, k: torch.Tensor) -> int:
    """G, the query heads per key/value head; ValueError unless k's heads divide q's."""
    heads, kv_heads = q.shape[1], k.shape[1]
    if kv_heads < 1 or heads % kv_heads:
        raise ValueError(f"k and v must have a number of heads dividing q's {heads}; got {kv_heads}")
    return heads // kv_heads


def expand_heads(x: torch.Tensor, heads: int) -> torch.Tensor:
    """``x`` (B, H_kv, ...) with each head repeated for its group: (B, heads, ...)."""
    return x if x.shape[1] == heads else x.repeat_interleave(heads // x.shape[1], dim=1)


def expand_call(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, params: Mapping[str, Any], per_kv_head: Iterable[str]
) -> tuple[torch.Tensor, torch.Tensor, dict[str, Any]]:
    """k, v and the tensors of ``params`` named in ``per_kv_head`` (a variant's extra inputs)
    repeated to q's heads, for an impl that takes as many key/value heads as query heads."""
    heads = q.shape[1]
    named = set(per_kv_head)
    expanded = {
        name: expand_heads(value, heads) if name in named and isinstance(value, torch.Tensor) else value
        for name, value in params.items()
    }
    return expand_heads(k, heads), expand_heads(v, heads), expanded


def _map_tensors(state: Any, fn: Callable[[torch.Tensor], torch.Tensor]) -> Any:
    """A dataclass state with ``fn`` applied to each tensor field (None stays None)."""
    if isinstance(state, torch.Tensor):
        return fn(state)
    if not dataclasses.is_dataclass(state) or isinstance(state, type):
        return state
    changed = {
        f.name: fn(value)
        for f in dataclasses.fields(state)
        if isinstance(value := getattr(state, f.name), torch.Tensor)
    }
    return dataclasses.replace(state, **changed)


def _ungroup(result: Any) -> Any:
    """A grouped form's result back in heads: outputs (B, H_kv, G, S, D) → (B, H, S, D), a
    state's (B, H_kv, 1, ...) → (B, H_kv, ...)."""
    if isinstance(result, tuple):
        out, state = result
        return out.flatten(1, 2), _map_tensors(state, lambda t: t.squeeze(2))
    if isinstance(result, torch.Tensor):
        return result.flatten(1, 2)
    return _map_tensors(result, lambda t: t.squeeze(2))  # a prefill: the state alone


def per_kv_head(form: Form) -> Form:
    """``form(q, k, v, ...)`` with k and v of fewer heads than q, one state per key/value head.

    ``form`` must broadcast over the axes before (S, D), as torch's matmul does, and build any
    fresh state from k and v (their leading axes), not from q. A ``state=`` it is given and the
    state it returns keep (B, H_kv, ...) outside; inside they carry the group axis. With as many
    key/value heads as query heads the form runs as it is.
    """

    @functools.wraps(form)
    def grouped(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        kv_heads = k.shape[1]
        if q.shape[1] == kv_heads:
            return form(q, k, v, *args, **kwargs)
        groups(q, k)
        if kwargs.get("state") is not None:
            kwargs["state"] = _map_tensors(kwargs["state"], lambda t: t.unsqueeze(2))
        result = form(q.unflatten(1, (kv_heads, -1)), k.unsqueeze(2), v.unsqueeze(2), *args, **kwargs)
        return _ungroup(result)

    return grouped  # type: ignore[return-value]


# More value heads than q/k heads ("GVA", grouped value attention: Qwen3-Next's and Qwen3.5's
# Gated DeltaNet layers): v (B, H_v, S, Dv) with H_v a multiple of q's and k's H; value head j
# reads q/k head j // (H_v / H) (fla-core 0.6's kernels index ``i_h = i_hv // (HV // H)``), and
# the state, the gates and β are per value head. Only a variant whose maths defines it
# (``Variant.value_heads``) takes it; every impl of such a variant does, natively (fla's gated
# delta rule and kda kernels: ``Impl.gva``) or by repeating q and k to H_v heads inside the call.

VALUE_HEADS_REFUSED = (
    "has one value head per query head: more value heads than q/k heads (--v-heads) is defined "
    "only for the gated and delta-rule variants, whose state is per value head"
)


def value_groups(q: torch.Tensor, v: torch.Tensor) -> int:
    """G_v, the value heads per q/k head (1 without GVA); ValueError unless q's heads divide v's."""
    heads, v_heads = q.shape[1], v.shape[1]
    if heads < 1 or v_heads % heads:
        raise ValueError(f"v must have a multiple of q's {heads} heads (more value heads, GVA); got {v_heads}")
    return v_heads // heads


def check_value_heads(variant: str, takes_value_heads: bool, k: torch.Tensor, v: torch.Tensor) -> None:
    """ValueError, one line, when v has more heads than k and ``variant`` cannot take them."""
    if v.shape[1] != k.shape[1] and not takes_value_heads:
        raise ValueError(f"{variant} {VALUE_HEADS_REFUSED}; got k {tuple(k.shape)}, v {tuple(v.shape)}")


def per_value_head(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """A tensor shaped as q would be with v's heads, for checking inputs given per value head
    (gates, β) without copying q: a zero-stride view; q itself without GVA."""
    if v.shape[1] == k.shape[1]:
        return q
    return q.new_empty(()).expand(q.shape[0], v.shape[1], *q.shape[2:])


def repeat_qk(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """q and k repeated to v's heads (value head j reads q/k head j // G_v), for a form that
    takes one q/k head per value head."""
    if v.shape[1] == q.shape[1]:
        return q, k
    value_groups(q, v)
    return expand_heads(q, v.shape[1]), expand_heads(k, v.shape[1])
