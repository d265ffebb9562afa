"""linear on the csrc kernel, φ = elu + 1 applied to q and k as the kernel loads them."""

from __future__ import annotations

from typing import Any

import torch

from linbench.kernels import ops as kernel_ops
from linbench.variants.impl_helpers import positive_int, positive_number


def kernel(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool, chunk_size: int, eps: Any
) -> torch.Tensor:
    size = positive_int("chunk_size", chunk_size)
    return kernel_ops.linear_attention(
        q, k, v, causal=causal, eps=positive_number("eps", eps), chunk=size, feature_map="elu1"
    )
