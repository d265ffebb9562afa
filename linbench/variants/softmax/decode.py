"""Generating with softmax attention: a KV cache, or recomputing everything (Cottention Fig. 2).

Softmax attention has no fixed-size state: every new query attends to every earlier key,
so a decoder keeps the keys and values of all tokens so far. ``kvcache`` attends one new
query to the cache (O(s·d) per token, the cache O(s·d)). ``recompute`` is the naive case
of Cottention's Figure 2: each step re-runs full causal attention over the whole prefix,
its S×S scores included, and keeps the last row (O(s²·d) per token, O(s²) memory while
it runs); it holds the queries too, since full attention needs every one of them.

The cache is allocated once for the ``capacity`` announced at prefill, as serving engines
do, so a step writes one slot instead of copying the whole cache; it still grows
(doubling) when more tokens arrive than announced.

A step's attention runs on SDPA's flash, memory-efficient or math backend, never on cuDNN:
cuDNN builds an execution plan for every new key length, and in decoding every step has a
new one. On an H100 (torch 2.11) SDPA's default choice, cuDNN, spent 38-57 ms of host time
per step building plans for 13 us of GPU work; flash took 0.056 ms per step at 1k-16k of
context (one query, B1 H8 D64 bf16, CUDA events around 100 steps).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from linbench.variants.impl_helpers import causal_mask
from linbench.variants.softmax.naive import naive

# The backends a step may use, in torch's order of preference; cuDNN is left out (see above).
STEP_BACKENDS = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]


@dataclass
class KVCache:
    """Keys and values (and, for recompute, queries) of every token so far, in buffers of
    ``capacity`` tokens of which the first ``length`` are filled.

    A step writes into the buffers in place, as a serving cache does: once a state has been
    stepped from, that earlier state must not be stepped from again (and no gradient flows
    through the cache; decoding runs without autograd).
    """

    keys: torch.Tensor  # (B, H_kv, capacity, Dk): one per key/value head
    values: torch.Tensor  # (B, H_kv, capacity, Dv)
    queries: torch.Tensor | None  # (B, H, capacity, Dk) when the decoder recomputes
    length: int

    @property
    def position(self) -> int:
        """Tokens absorbed so far (the offset of the next token), as the recurrent states say."""
        return self.length

    def filled(self, buffer: torch.Tensor) -> torch.Tensor:
        """The filled part of one of the buffers (a view)."""
        return buffer[..., : self.length, :]


def _buffer(new: torch.Tensor, capacity: int) -> torch.Tensor:
    return new.new_empty(*new.shape[:2], capacity, new.shape[-1])


def _write(buffer: torch.Tensor | None, new: torch.Tensor, length: int, capacity: int) -> torch.Tensor:
    """``buffer`` holding ``new`` at positions length.., grown (doubled) first when it is full."""
    end = length + new.shape[-2]
    if buffer is None:
        buffer = _buffer(new, max(capacity, end))
    elif end > buffer.shape[-2]:
        grown = _buffer(new, max(2 * buffer.shape[-2], end))
        grown[..., :length, :] = buffer[..., :length, :]
        buffer = grown
    buffer[..., length:end, :] = new
    return buffer


def _append(
    state: KVCache | None, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, capacity: int, with_queries: bool
) -> KVCache:
    length = 0 if state is None else state.length
    old_k, old_v, old_q = (None, None, None) if state is None else (state.keys, state.values, state.queries)
    keys = _write(old_k, k, length, capacity)
    values = _write(old_v, v, length, capacity)
    queries = _write(old_q, q, length, capacity) if with_queries else None
    return KVCache(keys, values, queries, length + k.shape[-2])


def kvcache_prefill(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, state: KVCache | None, capacity: int
) -> KVCache:
    """The prompt's keys and values copied into the cache; nothing else is computed."""
    return _append(state, q, k, v, capacity, with_queries=False)


def kvcache_step(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, state: KVCache | None
) -> tuple[torch.Tensor, KVCache]:
    """The new tokens' attention over the cache, their own keys included (SDPA)."""
    state = _append(state, q, k, v, capacity=0, with_queries=False)
    keys, values = state.filled(state.keys), state.filled(state.values)
    new = q.shape[-2]
    # One query sees every cached key; several new queries see the cache and the new keys up to their own.
    mask = None if new == 1 else causal_mask(new, state.length, q.device, offset=state.length - new)
    with sdpa_kernel(STEP_BACKENDS):
        grouped = keys.shape[1] != q.shape[1]  # a cache of fewer key/value heads than query heads
        return F.scaled_dot_product_attention(q, keys, values, attn_mask=mask, enable_gqa=grouped), state


def recompute_prefill(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, state: KVCache | None, capacity: int
) -> KVCache:
    """The prompt's queries, keys and values kept for the steps to recompute over."""
    return _append(state, q, k, v, capacity, with_queries=True)


def recompute_step(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, state: KVCache | None
) -> tuple[torch.Tensor, KVCache]:
    """Full causal attention over every token so far (the naive S×S form); the new rows."""
    state = _append(state, q, k, v, capacity=0, with_queries=True)
    assert state.queries is not None  # _append with_queries=True always keeps them
    queries = state.filled(state.queries)
    out = naive(queries, state.filled(state.keys), state.filled(state.values), causal=True)
    return out[..., -q.shape[-2] :, :], state
