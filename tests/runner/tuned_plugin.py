"""A test plugin: a variant whose one impl runs a small autotuned Triton kernel, for the CPU
under Triton's interpreter (TRITON_INTERPRET=1 before this file is loaded).

The kernel doubles v. Its autotune key is the head dim alone, leaving the length out as fla's
keys do, and its per-config benchmark is stood in (the interpreter has nothing to time) by one
that prefers BLOCK=16 below 64 tokens and BLOCK=64 from 64 on, as a GPU might: a row's
``triton_configs`` then says at which length its config was chosen.
"""

from __future__ import annotations

from typing import Any

import torch
import triton
import triton.language as tl

from linbench import Impl, Variant, register_variant
from linbench.variants.flops import quadratic_flops

LONG_FROM = 64  # tokens from which BLOCK=64 "benchmarks" faster


@triton.autotune(
    configs=[triton.Config({"BLOCK": 16}, num_warps=1), triton.Config({"BLOCK": 64}, num_warps=2)], key=["D"]
)
@triton.jit
def _double(x, y, N, S, D, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y + i, tl.load(x + i, mask=i < N) * 2, mask=i < N)


def _benchmark_by_length(self: Any, *args: Any, config: Any, **meta: Any) -> list[float]:
    best = 16 if int(self.nargs["S"]) < LONG_FROM else 64
    return [0.0 if config.kwargs["BLOCK"] == best else 1.0] * 3


_double._bench = _benchmark_by_length.__get__(_double)


def doubled(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool) -> torch.Tensor:
    return 2 * v


def tuned(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool) -> torch.Tensor:
    x = v.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    _double[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, n, x.shape[-2], x.shape[-1])
    return y


register_variant(
    Variant(
        name="tuned",
        summary="v doubled, by an autotuned Triton kernel whose key leaves the length out",
        impl_list=(
            Impl("doubled", doubled, "2·v in PyTorch", "O(sd)", "O(sd)"),
            Impl("triton", tuned, "2·v by an autotuned Triton kernel", "O(sd)", "O(sd)"),
        ),
        reference="doubled",
        param_specs=(),
        flop_formula=quadratic_flops,
        time_complexity="O(sd)",
        memory_complexity="O(sd)",
    ),
    replace=True,
)
