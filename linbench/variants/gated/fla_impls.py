"""The gated families' fla impls: which fla kernel each variant's ``fla`` and ``fla-recurrent``
(and ``fla-dispatch``) impl runs, with its summary, availability, dtype support, packs through
fla's ``cu_seqlens`` and value heads (native or q and k repeated). The kernel calls themselves,
and the mapping of linbench's inputs onto fla's arguments, are in fla.py."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

import torch

from linbench.variants.declarations import Impl, PackedFn
from linbench.variants.extra_inputs import ExtraInput
from linbench.variants.feature_forms import fla as fla_common
from linbench.variants.gated.fla import (
    CHUNK,
    FP32_REFUSED,
    RECURRENT,
    delta_fla,
    gla_fla,
    kda_fla,
    lightning_fla,
    retention_fla,
    simple_gla_fla,
)
from linbench.variants.gated.fla_dispatch import DISPATCH
from linbench.variants.heads import repeat_qk
from linbench.variants.varlen import Segments


def _dtype_support(refuse_fp32: bool) -> Callable[[int, int, str], str | None]:
    def support(dim_k: int, dim_v: int, dtype: str) -> str | None:
        if refuse_fp32 and dtype == "fp32":
            return FP32_REFUSED
        return fla_common.fla_dtype_support(dim_k, dim_v, dtype)

    return support


def _availability(module: str) -> Callable[[torch.device], str | None]:
    def availability(device: torch.device) -> str | None:
        return fla_common.fla_unavailable(device, f"fla.ops.{module}")  # looked up per call: tests stand fla in

    return availability


# Per variant: fla's module, the impl function, and each kernel's summary.
KERNELS: dict[str, tuple[str, Callable[..., torch.Tensor], dict[str, str]]] = {
    "retention": (
        "retention",
        retention_fla,
        {
            CHUNK: "fla-core's chunk_retention (chunk_simple_gla with g_gamma = log γ for a given γ)",
            RECURRENT: "fla-core's fused_recurrent_retention (fused_recurrent_simple_gla, g_gamma, for a given γ)",
        },
    ),
    "lightning": (
        "lightning_attn",
        lightning_fla,
        {
            CHUNK: "fla-core's chunk_lightning_attn (chunk_simple_gla with the layer's g_gamma)",
            RECURRENT: "fla-core's fused_recurrent_lightning_attn (fused_recurrent_simple_gla, g_gamma)",
        },
    ),
    "simple-gla": (
        "simple_gla",
        simple_gla_fla,
        {CHUNK: "fla-core's chunk_simple_gla (g per head)", RECURRENT: "fla-core's fused_recurrent_simple_gla"},
    ),
    "gla": (
        "gla",
        gla_fla,
        {CHUNK: "fla-core's chunk_gla (g per key channel)", RECURRENT: "fla-core's fused_recurrent_gla (gk = g)"},
    ),
    "deltanet": (
        "delta_rule",
        delta_fla,
        {
            CHUNK: "fla-core's chunk_delta_rule, L2 norms in the kernel; fp16/bf16 only",
            RECURRENT: "fla-core's fused_recurrent_delta_rule, L2 norms in the kernel",
        },
    ),
    "gated-deltanet": (
        "gated_delta_rule",
        delta_fla,
        {
            CHUNK: "fla-core's chunk_gated_delta_rule, L2 norms in the kernel",
            RECURRENT: "fla-core's fused_recurrent_gated_delta_rule: forward only (fla has no backward)",
            DISPATCH: "chunk_gated_delta_rule as fla's dispatch runs it (FlashQLA where it takes the call)",
        },
    ),
    "kda": (
        "kda",
        kda_fla,
        {
            CHUNK: "fla-core's chunk_kda (g per key channel), L2 norms in the kernel",
            RECURRENT: "fla-core's fused_recurrent_kda: forward only (fla has no backward)",
            DISPATCH: "chunk_kda as fla's dispatch runs it (FlashKDA takes only an in-kernel gate: not linbench's)",
        },
    ),
}


def _varlen(fn: Callable[..., torch.Tensor], kernel: str) -> PackedFn:
    """A pack (1, H, T, D) in one kernel call with its boundaries: fla's ``cu_seqlens``, the
    state starting afresh at each (proven under Triton's interpreter by the tests)."""

    def packed(
        q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, segments: Segments, causal: bool, **params: Any
    ) -> torch.Tensor:
        return fn(q, k, v, causal=causal, kernel=kernel, cu_seqlens=segments.cu_seqlens(q.device), **params)

    return packed


# fla-core 0.6's kernels that take v (B, T, HV, V) with HV a multiple of q's and k's H themselves.
NATIVE_VALUE_HEADS = ("gated-deltanet", "kda")


def _value_heads_repeated(fn: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    """An fla impl whose kernel takes one q/k head per value head: q and k repeated to v's heads
    first (inside the timed call, as a model running that kernel would)."""

    def call(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, **params: Any) -> torch.Tensor:
        q, k = repeat_qk(q, k, v)
        return fn(q, k, v, **params)

    return call


def gated_fla_impls(variant: str, extra_inputs: Iterable[ExtraInput] = ()) -> tuple[Impl, ...]:
    """The ``fla``, ``fla-recurrent`` (and ``fla-dispatch``) impls of ``variant``; they run where
    fla-core 0.6 and a Triton GPU are (or on a CPU under Triton's interpreter, for ``check``),
    and are left out with the reason elsewhere. A pack runs as one kernel call with fla's
    ``cu_seqlens``."""
    del extra_inputs  # the pack's gates and β go to the kernel whole, cut by cu_seqlens
    module, kernel_fn, summaries = KERNELS[variant]
    native = variant in NATIVE_VALUE_HEADS
    fn = kernel_fn if native else _value_heads_repeated(kernel_fn)
    return tuple(
        Impl(
            kernel,
            partial(fn, kernel=kernel),
            summary + "; fla's (B, S, H, D) layout made untimed; unverified on a GPU here",
            "O(sd²)",
            "O(sd)" if kernel != RECURRENT else "O(d²)",
            time_exponent=1,
            availability=_availability(module),
            shape_support=_dtype_support(variant == "deltanet" and kernel == CHUNK),
            optional=True,
            layout="bshd",
            library=fla_common.DISTRIBUTION,
            packed=_varlen(fn, kernel),
            gva=native,
        )
        for kernel, summary in summaries.items()
    )
