"""Mamba2's D skip around the decaying forms: every impl, packed form, stream and decoder of
the shared gated machinery computes y = Sᵀ C from the prepared inputs, and the wrapped one
adds D·x (inputs.skip), taking ``D`` out of the parameters the core sees."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import torch

from linbench.variants.declarations import Decoder, Impl
from linbench.variants.gated.mamba2.inputs import SKIP, skip


def with_skip(fn: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    """An impl (or packed form) returning y + D·x for the ``fn`` returning y."""

    def call(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, **params: Any) -> torch.Tensor:
        d = params.pop(SKIP.name, None)
        return skip(fn(q, k, v, **params), v, d)

    return call


def stream_with_skip(stream: Callable[..., tuple[torch.Tensor, Any]]) -> Callable[..., tuple[torch.Tensor, Any]]:
    """A stream (out, state) whose out has the skip added; the state is the core's."""

    def call(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, **params: Any) -> tuple[torch.Tensor, Any]:
        d = params.pop(SKIP.name, None)
        out, state = stream(q, k, v, **params)
        return skip(out, v, d), state

    return call


def without_skip(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` (a prefill: it returns a state, which the skip does not touch) with ``D`` dropped."""

    def call(*args: Any, **params: Any) -> Any:
        params.pop(SKIP.name, None)
        return fn(*args, **params)

    return call


def impl_with_skip(impl: Impl) -> Impl:
    """``impl`` and its packed form with the skip."""
    packed = with_skip(impl.packed) if impl.packed is not None else None
    return replace(impl, fn=with_skip(impl.fn), packed=packed)


def decoder_with_skip(decoder: Decoder) -> Decoder:
    """``decoder`` whose steps add the skip (its prefill returns a state only)."""
    return replace(decoder, prefill=without_skip(decoder.prefill), step=stream_with_skip(decoder.step))
