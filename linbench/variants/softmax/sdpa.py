"""torch.nn.functional.scaled_dot_product_attention, optionally pinned to one backend."""

from __future__ import annotations

import contextlib
import functools
import re
import warnings

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from linbench.errors import ImplUnavailableError
from linbench.oom import is_out_of_memory
from linbench.variants.backends import note_backend
from linbench.variants.declarations import Impl, ImplFn, MaskedFn

BACKENDS: dict[str, SDPBackend | None] = {
    "auto": None,
    "flash": SDPBackend.FLASH_ATTENTION,
    "efficient": SDPBackend.EFFICIENT_ATTENTION,
    "math": SDPBackend.MATH,
    "cudnn": SDPBackend.CUDNN_ATTENTION,
}


_TRIGGERED = re.compile(r"\s*\(Triggered internally at [^)]*\)\.?")


def _backend(name: object) -> SDPBackend | None:
    if name not in BACKENDS:
        raise ValueError(f"unknown SDPA backend {name!r}; backends: {', '.join(BACKENDS)}")
    return BACKENDS[name]


def sdpa(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    causal: bool,
    backend: str,
    key_mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """SDPA with is_causal; ``backend`` pins flash, efficient, math or cudnn (auto: torch picks).
    ``key_mask`` (B, S) bool, True at real tokens, keeps a padded batch's pads out of every
    row's keys (as a boolean attn_mask, combined with the causal mask when causal).

    A pinned backend that cannot take these inputs (flash with Dk != Dv on CPU, say) raises
    ImplUnavailableError carrying torch's reasons instead of a bare "No available kernel";
    an allocation failure is raised as it is, so that the point reads as out of memory.
    k and v with fewer heads than q go to SDPA as they are, with ``enable_gqa``.
    """
    pinned = _backend(backend)
    context = sdpa_kernel(pinned) if pinned is not None else contextlib.nullcontext()
    with warnings.catch_warnings(record=True) as caught, context:
        warnings.simplefilter("always")
        try:
            grouped = k.shape[1] != q.shape[1]  # fewer key/value heads: SDPA's grouped-query option
            mask = None if key_mask is None else padding_mask(key_mask, causal)
            note_backend(f"torch sdpa {backend if pinned is not None else _chosen(q, k, v, mask, causal, grouped)}")
            if mask is None:
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=grouped)
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=grouped)
        except RuntimeError as exc:
            if pinned is None or is_out_of_memory(exc):
                raise
            why = backend_refusal([str(w.message) for w in caught]) or str(exc).strip()
            raise ImplUnavailableError(
                f"SDPA's {backend} backend cannot run q {tuple(q.shape)}, v {tuple(v.shape)} "
                f"{q.dtype} on {q.device}: {why}"
            ) from None


def _chosen(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None, causal: bool, grouped: bool
) -> str:
    """The backend SDPA picks for these inputs (flash, efficient, math, cudnn), as torch's own
    dispatcher chooses it; "auto" where torch cannot say."""
    try:
        choice = torch._fused_sdp_choice(q, k, v, attn_mask=mask, is_causal=causal and mask is None, enable_gqa=grouped)
        return SDPBackend(choice).name.lower().removesuffix("_attention")
    except Exception:  # a private call of torch's: where it moved, say no more than "auto"
        return "auto"


def backend_refusal(messages: list[str]) -> str:
    """torch's reasons for refusing a pinned backend, from the warnings it raised: without the
    "(Triggered internally at …)" source locations, and without the lines about the backends
    pinning turned off ("… has been runtime disabled", "… not used because:"), which say
    nothing about these inputs."""
    reasons: list[str] = []
    for message in messages:
        text = _TRIGGERED.sub("", message).strip()
        if text and not text.endswith("because:") and "runtime disabled" not in text and text not in reasons:
            reasons.append(text)
    return "; ".join(reasons)


def padding_mask(key_mask: torch.Tensor, causal: bool) -> torch.Tensor:
    """A (B, 1, S or 1, S) boolean attn_mask: the keys ``key_mask`` keeps, up to the query when causal."""
    mask = key_mask[:, None, None, :]
    if not causal:
        return mask
    seq = key_mask.shape[-1]
    return mask & torch.ones(seq, seq, dtype=torch.bool, device=key_mask.device).tril()


def sdpa_masked(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, key_mask: torch.Tensor, causal: bool, backend: str
) -> torch.Tensor:
    """``sdpa`` on a padded batch, the pads' keys masked out."""
    return sdpa(q, k, v, causal=causal, backend=backend, key_mask=key_mask)


# One named impl per backend, so a run reports each under its own name; `sdpa` (auto) stays
# what torch picks for a user who pins nothing.
_SUMMARIES = {
    "flash": "SDPA pinned to its flash backend (FlashAttention-2 on CUDA, a tiled kernel on CPU)",
    "efficient": "SDPA pinned to its memory-efficient backend (CUDA only)",
    "cudnn": "SDPA pinned to its cuDNN backend (cuDNN's fused attention, CUDA only)",
    "math": "SDPA pinned to its math backend (plain ATen ops, the S×S scores in memory)",
}
NAMED_BACKENDS = tuple(_SUMMARIES)
# The backends handed k and v with fewer heads as they are (SDPA's enable_gqa): flash and math
# take them (tested here on the CPU); the memory-efficient and cuDNN backends are given k and v
# repeated to q's heads (results say "expanded"), since whether they accept enable_gqa depends
# on the torch version and was not measured on a GPU here.
GQA_BACKENDS = ("auto", "flash", "math")


def backend_unavailable(backend: str, device: torch.device) -> str | None:
    """Why SDPA's ``backend`` cannot run on ``device`` at all (None: it can, for some inputs).

    Whether it takes a given point (dtype, head dims) only torch knows: the impl then raises
    ImplUnavailableError carrying torch's reasons.
    """
    if backend == "math":
        return None
    if device.type == "cpu":
        return None if backend == "flash" else f"torch has no CPU kernel for SDPA's {backend} backend (CUDA only)"
    if device.type != "cuda":
        return f"SDPA's {backend} backend is not offered on {device.type}"
    if backend == "flash" and not torch.backends.cuda.is_flash_attention_available():
        return "this torch build has no flash attention kernel"
    if backend == "cudnn" and not torch.backends.cudnn.is_available():
        return "cuDNN is not available to this torch build"
    return None


def _pinned(backend: str) -> ImplFn:
    def pinned(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool) -> torch.Tensor:
        return sdpa(q, k, v, causal=causal, backend=backend)

    return pinned


def _pinned_masked(backend: str) -> MaskedFn:
    def pinned(
        q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, key_mask: torch.Tensor, causal: bool
    ) -> torch.Tensor:
        return sdpa(q, k, v, causal=causal, backend=backend, key_mask=key_mask)

    return pinned


def backend_impls() -> tuple[Impl, ...]:
    """``sdpa-flash``, ``sdpa-efficient``, ``sdpa-cudnn`` and ``sdpa-math``."""
    return tuple(
        Impl(
            f"sdpa-{backend}",
            _pinned(backend),
            summary,
            "O(s²d)",
            "O(s²)" if backend == "math" else "O(sd)",
            time_exponent=2,
            availability=functools.partial(backend_unavailable, backend),
            key_masked=_pinned_masked(backend),
            gqa=backend in GQA_BACKENDS,
        )
        for backend, summary in _SUMMARIES.items()
    )
