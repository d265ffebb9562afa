"""torch.nn.functional.scaled_dot_product_attention, optionally pinned to one backend."""

from __future__ import annotations

import contextlib
import functools
import re
import warnings
from dataclasses import dataclass
from typing import Any

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

    Which backend answers, and a pinned one's reasons for refusing, are decided once per form
    of the inputs (``_decide``: torch's choice and the warnings it raises, caught), at the first
    call of that form; a later call of the form (a benchmark's timed calls) makes neither
    torch's choice nor enters warnings.catch_warnings: it only looks its form up.
    """
    pinned = _backend(backend)
    grouped = k.shape[1] != q.shape[1]  # fewer key/value heads: SDPA's grouped-query option
    mask = None if key_mask is None else padding_mask(key_mask, causal)
    form = _form(backend, causal, q, k, v, mask)
    decided = _DECIDED.get(form) if form is not None else None
    if decided is None:
        return _decide(form, q, k, v, mask, causal, grouped, backend)
    if decided.refusal is not None:
        raise ImplUnavailableError(decided.refusal)
    note_backend(decided.label)
    try:
        with sdpa_kernel(pinned) if pinned is not None else contextlib.nullcontext():
            return _attend(q, k, v, mask, causal, grouped)
    except RuntimeError as exc:
        if pinned is None or is_out_of_memory(exc):
            raise
        raise ImplUnavailableError(_refusal(backend, q, v, str(exc).strip())) from None


@dataclass(frozen=True)
class Decision:
    """What the first call of one form of SDPA's inputs found: the backend that answered, as
    results.csv's ``backend`` names it, or a pinned backend's refusal."""

    label: str
    refusal: str | None = None


# Decisions by form of the inputs (_form); emptied when it reaches _MOST_FORMS.
_DECIDED: dict[tuple[Any, ...], Decision] = {}
_MOST_FORMS = 256


def _form(backend: str, causal: bool, *tensors: torch.Tensor | None) -> tuple[Any, ...] | None:
    """What torch's choice of backend depends on: each tensor's shape, strides, dtype, device and
    whether it needs a gradient, and grad mode. None for nested tensors (a bidirectional pack),
    whose lengths hide in them: those are decided on every call."""
    parts: list[Any] = [backend, causal, torch.is_grad_enabled()]
    for t in tensors:
        if t is not None and t.is_nested:
            return None
        parts.append(None if t is None else (t.shape, t.stride(), t.dtype, t.device, t.requires_grad))
    return tuple(parts)


def _decide(
    form: tuple[Any, ...] | None,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None,
    causal: bool,
    grouped: bool,
    backend: str,
) -> torch.Tensor:
    """The first call of a form: torch's choice of backend (auto) or the pinned one, with torch's
    warnings caught for a refusal's reasons; remembered for the form's later calls."""
    pinned = _backend(backend)
    context = sdpa_kernel(pinned) if pinned is not None else contextlib.nullcontext()
    with warnings.catch_warnings(record=True) as caught, context:
        warnings.simplefilter("always")
        label = f"torch sdpa {backend if pinned is not None else _chosen(q, k, v, mask, causal, grouped)}"
        note_backend(label)
        try:
            out = _attend(q, k, v, mask, causal, grouped)
        except RuntimeError as exc:
            if pinned is None or is_out_of_memory(exc):
                raise
            reasons = backend_refusal([str(w.message) for w in caught])
            refusal = _refusal(backend, q, v, reasons or str(exc).strip())
            if reasons:  # torch said why: the same inputs are refused the same way
                _remember(form, Decision(label, refusal))
            raise ImplUnavailableError(refusal) from None
    _remember(form, Decision(label))
    return out


def _remember(form: tuple[Any, ...] | None, decision: Decision) -> None:
    if form is None:
        return
    if len(_DECIDED) >= _MOST_FORMS:
        _DECIDED.clear()
    _DECIDED[form] = decision


def _attend(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None, causal: bool, grouped: bool
) -> torch.Tensor:
    if mask is None:
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=grouped)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=grouped)


def _refusal(backend: str, q: torch.Tensor, v: torch.Tensor, why: str) -> str:
    return f"SDPA's {backend} backend cannot run q {tuple(q.shape)}, v {tuple(v.shape)} {q.dtype} on {q.device}: {why}"


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
