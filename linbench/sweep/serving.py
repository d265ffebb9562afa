"""A decode sweep's serving settings: the pool, the accept pattern, the requests' contexts,
the drift measurement and the memory budget (docs/decode.md, "Serving").

A decode point is a *serving* point when any of them, ``tokens_per_step`` or ``state_dtype``
is given; without them ``linbench decode`` measures as it always has (one batch of identical
sequences, one token a step, the state in the compute dtype).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from linbench.sweep.lengths import PackError, draw_lengths
from linbench.sweep.settings import SERVING_KEYS
from linbench.sweep.values import SpecError, optional, positive_int
from linbench.units import SizeError, parse_size

DEFAULT_DRIFT_STEPS = 256
# The most drift steps a point takes: their fp64 inputs are drawn whole (B·steps·H·D·8 bytes) and
# stepped one by one, so a million would be gigabytes and hours; where a state's dtype drifts
# shows within hundreds.
MOST_DRIFT_STEPS = 1 << 16


@dataclass(frozen=True)
class Serving:
    """How a serving point's requests are held and stepped (the same for every point of a sweep)."""

    pool: int | None = None  # slots; None: as many as the batch (× T where a kernel keeps T a request)
    accept: str = "all"  # all, a count (1..T) or a rate in (0, 1)
    contexts: str | None = None  # a length distribution ("lognormal:mean=2k"); None: the context axis
    drift_steps: int = DEFAULT_DRIFT_STEPS
    memory_budget: int | None = None  # bytes requests_fit counts against; None: the device's memory

    def slots(self, batch: int, per_request: int = 1) -> int:
        """The pool's slots: ``pool``, else a slot for each request (``per_request`` each)."""
        return self.pool if self.pool is not None else batch * per_request

    def request_contexts(self, batch: int, context: int) -> tuple[int, ...]:
        """The contexts of a batch's requests: drawn from ``contexts``, or ``context`` each."""
        if self.contexts is None:
            return (context,) * batch
        return draw_lengths(self.contexts, batch)[1]


def read_serving(settings: Mapping[str, Any]) -> Serving | None:
    """The serving settings given (None: none), each checked; SpecError, one line, otherwise."""
    if all(settings.get(key) is None for key in SERVING_KEYS):
        return None
    accept = settings.get("accept")
    contexts = settings.get("contexts")
    if contexts is not None:
        try:
            contexts = draw_lengths(str(contexts), 1)[0]
        except (PackError, SizeError) as exc:
            raise SpecError(f"contexts: {exc}") from None
    drift = optional(positive_int, "drift_steps", settings.get("drift_steps"))
    return Serving(
        pool=optional(positive_int, "pool", settings.get("pool")),
        accept="all" if accept is None else _accept_text(accept),
        contexts=contexts,
        drift_steps=DEFAULT_DRIFT_STEPS if drift is None else drift,
        memory_budget=_budget(settings.get("memory_budget")),
    )


def _accept_text(value: Any) -> str:
    """``all``, a count (1, 2, ...) or a rate in (0, 1), as text; SpecError otherwise."""
    word = str(value).strip()
    if word == "all":
        return word
    try:
        number = float(word)
    except ValueError:
        number = -1.0
    if (number.is_integer() and number >= 1 and "." not in word) or 0 < number < 1:
        return word
    raise SpecError(f"accept: {word!r} is not a count (1, 2, ...), a rate in (0, 1) or 'all'")


def _budget(value: Any) -> int | None:
    """``80GiB``, ``80g``, ``512m``, bytes: the memory budget in bytes."""
    if value is None:
        return None
    text = str(value).strip().lower().removesuffix("ib").removesuffix("b")
    scale = 1024**3 if text.endswith("g") else 1
    try:
        return parse_size(text.removesuffix("g")) * scale
    except SizeError:
        raise SpecError(f"memory_budget: {value!r} is not a size (80GiB, 512m, 1000000)") from None


def check_serving(serving: Serving | None, batches: tuple[int, ...], steps: tuple[int, ...] | None) -> None:
    """A pool smaller than a batch, or an accept count above a step's tokens: SpecError."""
    if serving is None:
        return
    if serving.pool is not None and serving.pool < max(batches):
        raise SpecError(f"pool: {serving.pool} slots cannot hold a batch of {max(batches)} requests (pool ≥ batch)")
    if serving.accept not in ("all",) and "." not in serving.accept:
        most = min(steps or (1,))
        if int(serving.accept) > most:
            raise SpecError(f"accept: a count of {serving.accept} is above --tokens-per-step {most}")


def check_new_serving(serving: Serving | None, steps: list[tuple[int, ...] | None]) -> None:
    """What a new sweep may not ask (a recorded run resumes as it was): an accept pattern where
    no block steps more than one token (no draft to keep or reject), or more drift steps than
    MOST_DRIFT_STEPS. SpecError, one line."""
    if serving is None:
        return
    if serving.accept != "all" and max(max(s or (1,)) for s in steps) == 1:
        raise SpecError(
            f"accept: {serving.accept} with one token a step: there is no draft token to accept or reject "
            "(give --tokens-per-step 2 or more)"
        )
    if serving.drift_steps > MOST_DRIFT_STEPS:
        raise SpecError(
            f"drift_steps: {serving.drift_steps} is past {MOST_DRIFT_STEPS}: its fp64 inputs are drawn whole and "
            f"stepped one by one (the default, {DEFAULT_DRIFT_STEPS}, shows a state dtype's drift)"
        )
