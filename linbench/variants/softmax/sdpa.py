"""torch.nn.functional.scaled_dot_product_attention, optionally pinned to one backend."""

from __future__ import annotations

import contextlib
import warnings

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from linbench.variants.registry import ImplUnavailableError

BACKENDS: dict[str, SDPBackend | None] = {
    "auto": None,
    "flash": SDPBackend.FLASH_ATTENTION,
    "efficient": SDPBackend.EFFICIENT_ATTENTION,
    "math": SDPBackend.MATH,
    "cudnn": SDPBackend.CUDNN_ATTENTION,
}


def _backend(name: object) -> SDPBackend | None:
    if name not in BACKENDS:
        raise ValueError(f"unknown SDPA backend {name!r}; backends: {', '.join(BACKENDS)}")
    return BACKENDS[name]  # type: ignore[index]


def sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool, backend: str) -> torch.Tensor:
    """SDPA with is_causal; ``backend`` pins flash, efficient, math or cudnn (auto: torch picks).

    A pinned backend that cannot take these inputs (flash with Dk != Dv on CPU, say) raises
    ImplUnavailableError carrying torch's reasons instead of a bare "No available kernel".
    """
    pinned = _backend(backend)
    context = sdpa_kernel(pinned) if pinned is not None else contextlib.nullcontext()
    with warnings.catch_warnings(record=True) as caught, context:
        warnings.simplefilter("always")
        try:
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        except RuntimeError as exc:
            if pinned is None:
                raise
            why = "; ".join(str(w.message).strip() for w in caught) or str(exc).strip()
            raise ImplUnavailableError(
                f"softmax:sdpa backend {backend!r} cannot run q {tuple(q.shape)}, v {tuple(v.shape)} "
                f"{q.dtype} on {q.device}: {why}"
            ) from None
