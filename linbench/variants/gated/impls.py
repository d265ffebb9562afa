"""Turn a gated variant's input preparation into its impls, stream and decoder.

Each variant reduces its inputs to one of two shapes of recurrence, then shares the forms:

- decaying: S_t = diag(e^{g_t}) S_{t−1} + k_t v_tᵀ, g of shape (B, H, S, 1) or (B, H, S, Dk)
  (retention, simple-gla, gla), by ``DecayInputs``;
- delta rule: S_t = (I − β_t k_t k_tᵀ) diag(e^{g_t}) S_{t−1} + β_t k_t v_tᵀ, g None,
  (B, H, S) or (B, H, S, Dk) (deltanet, gated-deltanet, kda), by ``DeltaInputs``;
- diagonal plus low rank: S_t = diag(e^{g_t}) S_{t−1} + b_t (a_tᵀ S_{t−1}) + k_t v_tᵀ (gdn2,
  rwkv7), by ``DplrInputs`` (dplr_recurrent.py).

A preparation takes (q, k, v, **the variant's parameters and extra inputs) and returns the
form's inputs in the compute dtype, q scaled (and normalised for the delta rule).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch

from linbench.errors import ImplUnavailableError
from linbench.variants.declarations import Decoder, Impl, ImplFn, PackedFn, Param, PrefillFn, StreamFn
from linbench.variants.gated.decay_chunked import decay_chunked_scan
from linbench.variants.gated.decay_quadratic import channel_decay_quadratic, scalar_decay_quadratic
from linbench.variants.gated.decay_recurrent import decay_scan
from linbench.variants.gated.delta_chunked import delta_chunked_scan
from linbench.variants.gated.delta_quadratic import delta_quadratic
from linbench.variants.gated.delta_recurrent import delta_scan
from linbench.variants.gated.dplr_chunked import dplr_chunked_scan, dplr_quadratic
from linbench.variants.gated.dplr_recurrent import DplrInputs, dplr_scan, dplr_step
from linbench.variants.gated.numerics import (
    GatedState,
    causal_only,
    checked_state,
    chunk_length,
    scale_problem,
)
from linbench.variants.gated.packed import decay_lockstep, delta_lockstep, lockstep, per_sequence_form
from linbench.variants.gated.recurrences import DecayInputs, DeltaInputs
from linbench.variants.impl_helpers import positive_int_problem
from linbench.variants.varlen import Segments

CHUNK_SIZE = Param(
    "chunk_size",
    64,
    "tokens per chunk: C×C products inside a chunk, a Dk×Dv state between chunks",
    check=positive_int_problem,
)
# What ``linbench check`` checks besides the default (weak) gates: gates that forget within a token.
STRONG_GATES: tuple[dict[str, Any], ...] = ({"gate_regime": "strong"},)
SCALE = Param(
    "scale", None, "the factor on q; None: Dk^-1/2, as every paper of these variants scales", check=scale_problem
)


def _initial_state_problem(value: object) -> str | None:
    if isinstance(value, torch.Tensor):
        return None  # its shape is checked against the inputs when it is used (initial_state)
    return f"must be a tensor (B, H_v, Dk, Dv), given from Python (linbench.attention); got {type(value).__name__}"


INITIAL_STATE = Param(
    "initial_state",
    None,
    "the state (B, H_v, Dk, Dv) the recurrence starts from (None: zeros); its gradient is carried",
    check=_initial_state_problem,
)


def initial_state(given: object, x: Inputs) -> GatedState | None:
    """The state a form starts from: None for zeros, else ``given`` in the compute dtype;
    ValueError, one line, unless it is (B, H_v, Dk, Dv) for these inputs."""
    state = checked_state(given, (x.k.shape[0], x.k.shape[1], x.k.shape[-1], x.v.shape[-1]))
    return None if state is None else GatedState(state.to(device=x.k.device, dtype=x.k.dtype), 0)


Inputs = DecayInputs | DeltaInputs | DplrInputs
Prepare = Callable[..., Inputs]


def _scan(x: Inputs, state: GatedState | None) -> tuple[torch.Tensor, GatedState]:
    if isinstance(x, DplrInputs):
        return dplr_scan(x, state=state)
    if isinstance(x, DecayInputs):
        return decay_scan(x.q, x.k, x.v, x.g, state=state)
    return delta_scan(x.q, x.k, x.v, x.beta, x.g, state=state)


def _chunked_scan(x: Inputs, chunk_size: int, state: GatedState | None) -> tuple[torch.Tensor, GatedState]:
    if isinstance(x, DplrInputs):
        return dplr_chunked_scan(x, chunk_size=chunk_size, state=state)
    if isinstance(x, DecayInputs):
        return decay_chunked_scan(x.q, x.k, x.v, x.g, chunk_size=chunk_size, state=state)
    return delta_chunked_scan(x.q, x.k, x.v, x.beta, x.g, chunk_size=chunk_size, state=state)


def _quadratic(x: Inputs) -> torch.Tensor:
    if isinstance(x, DplrInputs):
        return dplr_quadratic(x)
    if isinstance(x, DeltaInputs):
        return delta_quadratic(x.q, x.k, x.v, x.beta, x.g)
    if x.g.shape[-1] == 1:
        return scalar_decay_quadratic(x.q, x.k, x.v, x.g)
    return channel_decay_quadratic(x.q, x.k, x.v, x.g)


def _recurrent_impl(owner: str, prepare: Prepare) -> ImplFn:
    def recurrent(
        q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool, initial_state: Any = None, **params: Any
    ) -> torch.Tensor:
        causal_only(f"{owner}:recurrent", causal)
        x = prepare(q, k, v, **params)
        return _scan(x, _start(initial_state, x))[0]

    return recurrent


def _quadratic_impl(owner: str, prepare: Prepare) -> ImplFn:
    def quadratic(
        q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool, initial_state: Any = None, **params: Any
    ) -> torch.Tensor:
        causal_only(f"{owner}:quadratic", causal)
        if initial_state is not None:
            raise ImplUnavailableError(f"{owner}:quadratic computes from a zero state; it takes no initial_state")
        return _quadratic(prepare(q, k, v, **params))

    return quadratic


def _chunked_impl(owner: str, prepare: Prepare) -> ImplFn:
    def chunked(
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        *,
        causal: bool,
        chunk_size: int,
        initial_state: Any = None,
        **params: Any,
    ) -> torch.Tensor:
        causal_only(f"{owner}:chunked", causal)
        size = chunk_length(chunk_size)
        x = prepare(q, k, v, **params)
        return _chunked_scan(x, size, _start(initial_state, x))[0]

    return chunked


def _start(given: object, x: Inputs) -> GatedState | None:
    return initial_state(given, x)


def _lockstep(x: Inputs, segments: Segments) -> torch.Tensor:
    if isinstance(x, DplrInputs):
        return lockstep(x.q, x.k, x.v, {"a": x.a, "b": x.b, "g": x.g}, segments, dplr_step)
    if isinstance(x, DecayInputs):
        return decay_lockstep(x.q, x.k, x.v, x.g, segments)
    return delta_lockstep(x.q, x.k, x.v, x.beta, x.g, segments)


def _zero_start(owner: str, params: dict[str, Any]) -> dict[str, Any]:
    """``params`` without initial_state; a pack starts every sequence from zeros, so a given one
    is refused."""
    if params.pop("initial_state", None) is not None:
        raise ImplUnavailableError(
            f"{owner}: a pack starts every sequence from a zero state; it takes no initial_state"
        )
    return params


def _packed_recurrent(owner: str, prepare: Prepare) -> PackedFn:
    def recurrent(
        q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, segments: Segments, causal: bool, **params: Any
    ) -> torch.Tensor:
        causal_only(f"{owner}:recurrent", causal)
        return _lockstep(prepare(q, k, v, **_zero_start(owner, params)), segments)

    return recurrent


def _packed_quadratic(owner: str, prepare: Prepare) -> PackedFn:
    def quadratic(
        q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, segments: Segments, causal: bool, **params: Any
    ) -> torch.Tensor:
        causal_only(f"{owner}:quadratic", causal)
        return per_sequence_form(_quadratic, prepare(q, k, v, **_zero_start(owner, params)), segments)

    return quadratic


def _packed_chunked(owner: str, prepare: Prepare) -> PackedFn:
    def chunked(
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        *,
        segments: Segments,
        causal: bool,
        chunk_size: int,
        **params: Any,
    ) -> torch.Tensor:
        causal_only(f"{owner}:chunked", causal)
        size = chunk_length(chunk_size)
        x = prepare(q, k, v, **_zero_start(owner, params))
        return per_sequence_form(lambda part: _chunked_scan(part, size, None)[0], x, segments)

    return chunked


def gated_impls(
    owner: str, prepare: Prepare, summaries: dict[str, tuple[str, str]], copies: Mapping[str, int] | None = None
) -> tuple[Impl, ...]:
    """The recurrent, quadratic and chunked impls of ``owner``; ``summaries`` maps each form
    to (summary, memory complexity), ``copies`` a form to its measured working copies."""
    makers = {"recurrent": _recurrent_impl, "quadratic": _quadratic_impl, "chunked": _chunked_impl}
    # Their packed forms (linbench/variants/gated/packed.py): the state resets at every boundary.
    packed = {"recurrent": _packed_recurrent, "quadratic": _packed_quadratic, "chunked": _packed_chunked}
    time = {"recurrent": "O(sd²)", "quadratic": "O(s²d)", "chunked": "O(sd²)"}
    return tuple(
        Impl(
            name,
            makers[name](owner, prepare),
            summary,
            time[name],
            memory,
            params=(CHUNK_SIZE,) if name == "chunked" else (),
            packed=packed[name](owner, prepare),
            working_copies=(copies or {}).get(name),
        )
        for name, (summary, memory) in summaries.items()
    )


def gated_stream(prepare: Prepare) -> StreamFn:
    """Causal recurrent attention continuing from a carried state; the extra inputs given are
    those of the new tokens only."""

    def stream(
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        *,
        state: GatedState | None = None,
        initial_state: Any = None,
        **params: Any,
    ) -> tuple[torch.Tensor, GatedState]:
        x = prepare(q, k, v, **params)
        return _scan(x, state if state is not None else _start(initial_state, x))

    return stream


def gated_prefill(prepare: Prepare) -> PrefillFn:
    """A prompt absorbed by the chunked form, continuing from ``state`` (the state is Dk×Dv
    whatever ``capacity``)."""

    def prefill(
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        *,
        state: GatedState | None,
        capacity: int,
        initial_state: Any = None,
        **params: Any,
    ) -> GatedState:
        del capacity
        x = prepare(q, k, v, **params)
        return _chunked_scan(x, CHUNK_SIZE.default, state if state is not None else _start(initial_state, x))[1]

    return prefill


def gated_decoder(prepare: Prepare, summary: str) -> Decoder:
    """Chunked prefill into a Dk×Dv state, then one recurrent step per generated token."""
    return Decoder(
        "recurrent", summary, gated_prefill(prepare), gated_stream(prepare), state_memory="O(d²)", step_time="O(d²)"
    )
