"""linear:fla: elu + 1 linear attention on fla-core's chunk kernel (linbench/variants/feature_forms/fla.py
loads fla and maps its layout): q and k through elu + 1 in PyTorch, ``normalize=True`` with
``scale=1``; fla adds 1e-10 to the normaliser where the variant adds eps, so another eps than
the default is refused."""

from __future__ import annotations

from typing import Any

import torch

from linbench.variants.feature_forms.fla import FLA_EPS, causal_only, run_fla
from linbench.variants.impl_helpers import positive_number
from linbench.variants.linear.features import elu_plus_one

LINEAR_DEFAULT_EPS = 1e-6
LINEAR_SUMMARY = (
    "fla-core's Triton chunk kernel (chunk_linear_attn, normalize=True, scale=1) on elu + 1 features; "
    "fla's normaliser adds 1e-10, not eps (only the default eps is accepted); its layout made untimed"
)


def linear_fla(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool, eps: Any, segments: Any = None
) -> torch.Tensor:
    """elu + 1 linear attention on fla, with fla's own normaliser (a pack's: ``segments``)."""
    causal_only("linear:fla", causal)
    given = positive_number("eps", eps)
    if given != LINEAR_DEFAULT_EPS:
        raise ValueError(
            f"linear:fla cannot take eps={given:g}: fla adds its own {FLA_EPS:g} to the normaliser "
            f"(the default {LINEAR_DEFAULT_EPS:g} is accepted: it moves no output by more than rounding)"
        )
    return run_fla(elu_plus_one(q), elu_plus_one(k), v, scale=1.0, normalize=True, segments=segments)
