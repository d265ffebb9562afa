"""Decoding as a serving engine runs it: a batch of requests, each at its own context.

What a server does that a plain decode loop does not, and what this module adds on top of any
variant's ``Decoder`` (its ``prefill`` and ``step``, unchanged):

- **a state pool**: the constant-size states of the requests live in a pool of ``slots``
  rows, each request naming its slot (scattered, as a server's slots are after requests come
  and go); a step gathers the requests' states by index, steps them, and writes them back;
- **multi-token steps**: T tokens per request in a step (speculative decoding's draft tokens,
  MTP), one token at a time with the state after each kept, then each request's state rolled
  back to its last accepted token (``accepted``: 1..T per request);
- **the state's own dtype**: the pool keeps the state in ``state_dtype`` (bf16, fp32) between
  steps; the step computes in the decoder's dtype;
- **the state's layout**: each head's matrix kept v-last or k-last in the pool (slot_pool.py).

A decoder whose kernel takes the pool itself (``Decoder.pooled``: kda's fla kernel, with the
slots as fla's ``ssm_state_indices``) gets the pool and the slots instead of the gather and the
write-back: T slots a request at T > 1, the state after each token in its own, the rollback the
slot the next step starts from (``num_accepted_tokens``).

A decoder whose state grows (a KV cache) keeps its requests' caches where they are (a paged
cache's block table is a server's gather): requests of one cache length step together, and a
rollback that leaves them at different lengths splits them into groups stepped apart.
A decoder whose step reads the position (cosformer's angles; ``positional``) steps the
requests of each position together, so that each request sees its own.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from linbench.shape import V_LAST
from linbench.variants.backends import amend_noted
from linbench.variants.declarations import Decoder
from linbench.variants.extra_inputs import ExtraInput, take_tokens
from linbench.variants.slot_pool import SlotPool, cast_state, select_rows, tensor_bytes, tensor_fields

# q, k, v and the extra inputs (gates, β) of some tokens of every request: (B, H, n, D).
Tokens = tuple[torch.Tensor, torch.Tensor, torch.Tensor, dict[str, Any]]
# (batch rows, start, stop) → those requests' tokens start..stop−1: how the prefill reads a
# group's context.
Draw = Callable[[torch.Tensor, int, int], Tokens]

PREFILL_BLOCK = 16384


@dataclass(frozen=True)
class Accept:
    """Which of a step's T tokens each request keeps: a fixed ``count`` (1..T, the same for
    every request) or a ``rate``: each draft token after the first is accepted with that
    probability while every one before it was (the first, the verified token, always is)."""

    count: int | None = None
    rate: float | None = None

    @classmethod
    def parse(cls, text: str | int | float | None) -> Accept:
        """``"all"``/None (every token), a count ``"3"`` or a rate ``"0.7"``; ValueError otherwise."""
        if text is None or str(text).strip() in ("", "all"):
            return cls()
        word = str(text).strip()
        try:
            number = float(word)
        except ValueError:
            raise ValueError(f"accept: {word!r} is not a count (1, 2, ...), a rate in (0, 1) or 'all'") from None
        if number.is_integer() and number >= 1 and "." not in word:
            return cls(count=int(number))
        if 0 < number < 1:
            return cls(rate=number)
        raise ValueError(f"accept: {word!r} is not a count (1, 2, ...), a rate in (0, 1) or 'all'")

    @property
    def label(self) -> str:
        return "all" if self.count is None and self.rate is None else f"{self.count or self.rate}"

    def problem(self, tokens_per_step: int) -> str | None:
        """Why this pattern cannot run with T tokens a step, or None."""
        if self.count is not None and self.count > tokens_per_step:
            return f"accept count {self.count} is above --tokens-per-step {tokens_per_step}"
        return None

    def draw(self, tokens_per_step: int, batch: int, steps: int, seed: int = 0) -> torch.Tensor:
        """(steps, batch) accepted counts in 1..T, the same for the same seed on every machine."""
        problem = self.problem(tokens_per_step)
        if problem:
            raise ValueError(problem)
        if self.rate is None:
            return torch.full((steps, batch), self.count or tokens_per_step, dtype=torch.long)
        rng = random.Random(seed)

        def one() -> int:
            kept = 1
            while kept < tokens_per_step and rng.random() < (self.rate or 0.0):
                kept += 1
            return kept

        return torch.tensor([[one() for _ in range(batch)] for _ in range(steps)], dtype=torch.long)


@dataclass
class _Group:
    """Requests (batch rows) whose grown state (a KV cache) is one batched state."""

    rows: torch.Tensor
    state: Any


class Server:
    """A batch of requests decoding with one decoder: their contexts, slots and states."""

    def __init__(
        self,
        decoder: Decoder,
        params: dict[str, Any],
        declared: Sequence[ExtraInput],
        contexts: Sequence[int],
        *,
        slots: int,
        dtype: torch.dtype,
        state_dtype: torch.dtype | None = None,
        state_layout: str = V_LAST,
        positional: bool = False,
        tokens_per_step: int = 1,
        seed: int = 0,
    ) -> None:
        # A kernel that takes the pool keeps the state after each of a step's T tokens in a slot
        # of its own (fla's speculative decoding): T slots a request.
        self.per_request = pool_slots_per_request(decoder, tokens_per_step)
        needed = len(contexts) * self.per_request
        if slots < needed:
            raise ValueError(
                f"a pool of {slots} slots cannot hold {pool_need(decoder, len(contexts), tokens_per_step)}"
            )
        if decoder.state_grows and state_dtype not in (None, dtype):
            raise ValueError(f"{decoder.name} keeps keys and values in the compute dtype, no other state dtype")
        self.decoder, self.params, self.declared = decoder, params, tuple(declared)
        self.contexts = tuple(contexts)
        self.dtype, self.state_dtype, self.positional = dtype, state_dtype, positional
        self.state_layout = state_layout
        self.batch, self.slot_count = len(contexts), slots
        # Requests hold scattered slots, as a server's do once requests have come and gone.
        order = torch.randperm(slots, generator=torch.Generator().manual_seed(seed))
        self.slots = order[: self.batch]
        # A pool-taking kernel's: request b's slot for its step's token t (column 0: ``slots``),
        # and the tokens each request kept last step (its state is in slot [b, kept − 1]).
        self.token_slots = order[:needed].view(self.per_request, self.batch).t().contiguous()
        self.kept = torch.ones(self.batch, dtype=torch.long)
        self.positions = list(self.contexts)
        self.pool: SlotPool | None = None
        self.groups: list[_Group] = []

    def prefill(self, draw: Draw, capacity: int) -> None:
        """Every request's context absorbed (requests of one context together, in blocks)."""
        for context in sorted(set(self.contexts)):
            rows = torch.tensor([b for b, c in enumerate(self.contexts) if c == context], dtype=torch.long)
            state = None
            for start in range(0, context, PREFILL_BLOCK):
                q, k, v, extras = draw(rows, start, min(start + PREFILL_BLOCK, context))
                state = self.decoder.prefill(q, k, v, state=state, capacity=capacity, **self.params, **extras)
            if state is None:
                raise ValueError("every request needs a context of at least one token")
            self._keep(rows, state)

    def _keep(self, rows: torch.Tensor, state: Any) -> None:
        if self.decoder.state_grows:
            self.groups.append(_Group(rows, state))
            return
        if self.pool is None:
            self.pool = SlotPool(state, self.slot_count, self.state_dtype, self.state_layout)
        self.pool.put(self.slots[rows], state)

    def _pooled_groups(self) -> list[torch.Tensor]:
        """Batch rows stepped together: all, or those of one position where the step reads it."""
        if not self.positional:
            return [torch.arange(self.batch)]
        by_position: dict[int, list[int]] = {}
        for row, position in enumerate(self.positions):
            by_position.setdefault(position, []).append(row)
        return [torch.tensor(rows, dtype=torch.long) for rows in by_position.values()]

    def step(self, tokens: Tokens, accepted: torch.Tensor) -> torch.Tensor:
        """T tokens of every request (q (B, H, T, Dk)...), each request's state then rolled back
        to its ``accepted[b]``-th token; the outputs (B, H, T, Dv) of every token (H: the value
        heads under GVA)."""
        if self.decoder.pooled is not None and not self.positional:
            return self._kernel_step(tokens, accepted)
        q, v = tokens[0], tokens[2]
        # One output head per query head, or per value head under GVA (more value heads).
        out = v.new_empty(q.shape[0], max(q.shape[1], v.shape[1]), q.shape[2], v.shape[-1])
        groups = self.groups if self.decoder.state_grows else [_Group(rows, None) for rows in self._pooled_groups()]
        self.groups = []
        for group in groups:
            whole = len(group.rows) == self.batch
            mine = tokens if whole else _cut(tokens, self.declared, group.rows)
            state = group.state if self.decoder.state_grows else self._take(group.rows)
            states = []
            for t in range(q.shape[-2]):
                row, state = self._one(mine, t, state)
                if whole:
                    out[..., t : t + 1, :] = row
                else:
                    out[group.rows.to(out.device), :, t : t + 1, :] = row
                states.append(state)
            self._roll_back(group.rows, states, accepted[group.rows])
        if self.pool is not None:
            amend_noted("(pool gathered by linbench)")  # a library's kernel stepped the gathered states
        return out

    def _kernel_step(self, tokens: Tokens, accepted: torch.Tensor) -> torch.Tensor:
        """The pool and the slots handed to the decoder's kernel, which gathers the states,
        steps them and writes each token's state back in place; the rollback is which slot
        the next step reads (``kept``)."""
        assert self.pool is not None and self.decoder.pooled is not None
        q, k, v, extras = tokens
        device, count = q.device, q.shape[-2]
        if count > self.per_request:
            raise ValueError(f"{count} tokens a step: the server was made for {self.per_request}")
        slots = self.token_slots[:, :count] if self.per_request > 1 else self.slots
        previous = self.kept.to(device) if self.per_request > 1 else None
        out = self.decoder.pooled(
            self.pool.matrix, slots.to(device), previous, q, k, v, k_last=self.pool.k_last, **self.params, **extras
        )
        before = self._current()
        self.kept = accepted.to(torch.long).cpu().clone()
        self.pool.moved(before, self._current(), self.kept)
        self.positions = [p + int(n) for p, n in zip(self.positions, self.kept, strict=True)]
        return out

    def _current(self) -> torch.Tensor:
        """Each request's slot now: that of the last token it kept."""
        return self.token_slots[torch.arange(self.batch), self.kept - 1]

    def _take(self, rows: torch.Tensor) -> Any:
        assert self.pool is not None
        return self.pool.take(self._current()[rows])

    def _one(self, tokens: Tokens, t: int, state: Any) -> tuple[torch.Tensor, Any]:
        q, k, v, extras = tokens
        cut = take_tokens(self.declared, extras, t, t + 1)
        token = slice(t, t + 1)
        step = self.decoder.step
        return step(q[..., token, :], k[..., token, :], v[..., token, :], state=state, **self.params, **cut)

    def _roll_back(self, rows: torch.Tensor, states: list[Any], accepted: torch.Tensor) -> None:
        """Each request's state as it was after its last accepted token."""
        for count in sorted(set(accepted.tolist())):
            local = (accepted == count).nonzero().flatten()
            kept = states[count - 1] if len(local) == len(rows) else select_rows(states[count - 1], local)
            self._keep(rows[local], kept)
            for row in rows[local].tolist():
                self.positions[row] += count

    def state(self, rows: torch.Tensor) -> Any:
        """The current states of batch rows ``rows`` (a pooled decoder's, in its own dtype)."""
        return self._take(rows)

    @property
    def bytes_per_request(self) -> int:
        """What one request holds between steps: its pool slot, or its cache at its context."""
        if self.pool is not None:
            return self.pool.slot_bytes * self.per_request
        held = sum(tensor_bytes(g.state) for g in self.groups)
        return held // max(self.batch, 1)

    @property
    def held_bytes(self) -> int:
        """The pool (every slot) or every cache."""
        if self.pool is not None:
            return self.pool.nbytes
        return sum(tensor_bytes(g.state) for g in self.groups)


def pool_slots_per_request(decoder: Decoder, tokens_per_step: int) -> int:
    """The slots one request holds: T where the decoder's kernel keeps each token's state."""
    return tokens_per_step if decoder.pooled is not None else 1


def pool_need(decoder: Decoder, batch: int, tokens_per_step: int, owner: str | None = None) -> str:
    """What a pool must hold for ``batch`` requests, as the end of a sentence (``owner``: the
    decoder's full name, VARIANT:DECODER)."""
    if decoder.pooled is None or tokens_per_step == 1:
        return f"{batch} requests (pool ≥ batch)"
    return (
        f"{batch} requests of {tokens_per_step} tokens a step with {owner or decoder.name}, whose kernel keeps each "
        f"token's state in a slot of its own (pool ≥ batch × tokens per step = {batch * tokens_per_step})"
    )


def _cut(tokens: Tokens, declared: Sequence[ExtraInput], rows: torch.Tensor) -> Tokens:
    """The tokens of batch rows ``rows`` (the extra inputs too: each has the batch first)."""
    q, k, v, extras = tokens
    rows = rows.to(q.device)  # the bookkeeping's indices live on the CPU
    names = {extra.name for extra in declared}
    picked = {
        name: value.index_select(0, rows.to(value.device))
        if name in names and isinstance(value, torch.Tensor)
        else value
        for name, value in extras.items()
    }
    return q.index_select(0, rows), k.index_select(0, rows), v.index_select(0, rows), picked


def state_drift(
    decoder: Decoder,
    params: dict[str, Any],
    declared: Sequence[ExtraInput],
    start: Any,
    tokens: Tokens,
    dtype: torch.dtype,
    state_dtype: torch.dtype | None,
    exact_decoder: Decoder | None = None,
) -> float:
    """How far the last of ``tokens``' steps (fp64 tokens, one a step) lands from the fp64 decode
    from the same ``start`` state when the state is kept in ``state_dtype`` between steps (None:
    the decoder's own) and the step computes in ``dtype``: max |o − o₆₄| / max |o₆₄|. The fp64
    decode is ``exact_decoder``'s where given (a kernel with no fp64 form: the same recurrence
    in PyTorch), else ``decoder``'s."""
    q, k, v, extras = tokens
    exact, kept = cast_state(start, torch.float64), start
    cut = {name: t.to(dtype) if torch.is_tensor(t) else t for name, t in extras.items()}
    low = (q.to(dtype), k.to(dtype), v.to(dtype), cut)
    row = row64 = q.new_zeros(0)
    for t in range(q.shape[-2]):
        row, stepped = _single(decoder, params, declared, low, t, kept)
        own = tensor_fields(stepped)
        kept = cast_state(cast_state(stepped, state_dtype), next(iter(own.values())).dtype) if state_dtype else stepped
        row64, exact = _single(exact_decoder or decoder, params, declared, tokens, t, exact)
    scale = row64.abs().max().clamp_min(torch.finfo(torch.float64).tiny)
    return float((row.to(torch.float64) - row64).abs().max() / scale)


def _single(
    decoder: Decoder, params: dict[str, Any], declared: Sequence[ExtraInput], tokens: Tokens, t: int, state: Any
) -> tuple[torch.Tensor, Any]:
    q, k, v, extras = tokens
    cut = take_tokens(declared, extras, t, t + 1)
    token = slice(t, t + 1)
    return decoder.step(q[..., token, :], k[..., token, :], v[..., token, :], state=state, **params, **cut)


def rotations_to_miss_l2(pool_bytes: int, l2_bytes: int, free_bytes: int, most: int = 256) -> int:
    """How many copies of a pool a rotation needs so that each step reads its pool cold: the
    pools between two visits of one (R − 1 of them) hold at least twice the L2, within a
    quarter of the free memory and ``most``; at least 2."""
    if pool_bytes <= 0:
        return 2
    wanted = math.ceil(2 * l2_bytes / pool_bytes) + 1
    room = max(free_bytes // (4 * pool_bytes), 2)
    return int(max(2, min(wanted, room, most)))


def pooled_step(
    decoder: Decoder,
    params: dict[str, Any],
    declared: Sequence[ExtraInput],
    pool: SlotPool,
    slots: torch.Tensor,
    tokens: Tokens,
    accepted: int,
) -> Callable[[], None]:
    """One step of every request over ``pool`` with fixed ``tokens``, each request keeping its
    first ``accepted`` tokens: the gather, the T token steps and the write-back, with nothing
    read back to the host (what a CUDA graph captures; ``slots`` on the pool's device)."""

    def step() -> None:
        state = pool.take(slots)
        states = []
        for t in range(tokens[0].shape[-2]):
            _, state = _single(decoder, params, declared, tokens, t, state)
            states.append(state)
        pool.put(slots, states[accepted - 1], counters=False)

    return step


def kernel_step(
    decoder: Decoder,
    params: dict[str, Any],
    pool: SlotPool,
    slots: torch.Tensor,
    kept: torch.Tensor | None,
    tokens: Tokens,
) -> Callable[[], None]:
    """``pooled_step`` for a decoder whose kernel takes the pool: one call, reading each request's
    state from slot [b, kept[b] − 1] (``kept`` None: ``slots`` (B,), one a request) and writing
    every token's state back into ``slots``."""
    q, k, v, extras = tokens

    def step() -> None:
        assert decoder.pooled is not None
        decoder.pooled(pool.matrix, slots, kept, q, k, v, k_last=pool.k_last, **params, **extras)

    return step
