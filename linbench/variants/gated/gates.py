"""The gated variants' extra inputs (log-gates, β), retention's fixed per-head decay γ and
lightning's per-layer one.

Draws follow what trained models feed these kernels:

- a log-gate is g = log σ(x) / τ with x ~ N(0, 1) pre-activations: τ = 16 in the ``weak``
  regime (fla's GLA and simple-GLA layers divide by ``gate_logit_normalizer = 16``; mean
  g ≈ −0.05, a memory of ~20 tokens), τ = 1 in the ``strong`` regime (mean g ≈ −0.8, a
  memory of about one token, the far end of Mamba2's A·Δt range, up to 16 × 0.1 = 1.6);
- β = σ(x), x ~ N(0, 1) (DeltaNet's and Gated DeltaNet's sigmoid of a projection), in
  either regime.
"""

from __future__ import annotations

import math
import numbers

import torch
import torch.nn.functional as F

from linbench.variants.extra_inputs import ExtraInput

GATE_TEMPERATURE = {"weak": 16.0, "strong": 1.0}


def _draw_log_gate(sizes: tuple[int, ...], generator: torch.Generator, regime: str) -> torch.Tensor:
    pre = torch.randn(*sizes, generator=generator, dtype=torch.float64)
    return F.logsigmoid(pre) / GATE_TEMPERATURE[regime]


def _draw_beta(sizes: tuple[int, ...], generator: torch.Generator, regime: str) -> torch.Tensor:
    del regime  # how much a token overwrites does not depend on how fast the state forgets
    return torch.randn(*sizes, generator=generator, dtype=torch.float64).sigmoid()


def _log_gate_problem(g: torch.Tensor) -> str | None:
    if not bool(torch.isfinite(g).all()):
        return "must be finite (a log-gate); it has inf or nan values"
    top = float(g.max()) if g.numel() else 0.0
    return None if top <= 0 else f"must be ≤ 0 (a log-gate, log of a decay in (0, 1]); its largest value is {top:g}"


def _beta_problem(beta: torch.Tensor) -> str | None:
    if not bool(torch.isfinite(beta).all()):
        return "must lie in [0, 1]; it has inf or nan values"
    low, high = (float(beta.min()), float(beta.max())) if beta.numel() else (0.0, 0.0)
    return None if low >= 0 and high <= 1 else f"must lie in [0, 1]; its values run from {low:g} to {high:g}"


_GATE_DISTRIBUTION = "log σ(x)/τ, x ~ N(0, 1); τ = 16 (weak) or 1 (strong)"

HEAD_GATE = ExtraInput(
    "g",
    "per_token",
    "log-gate ≤ 0 per head and token (the state decays by e^g)",
    _draw_log_gate,
    _log_gate_problem,
    dtype_rule="fp32_or_wider",
    distribution=_GATE_DISTRIBUTION,
)
CHANNEL_GATE = ExtraInput(
    "g",
    "per_token_channel",
    "log-gate ≤ 0 per head, token and key channel (row c of the state decays by e^g_c)",
    _draw_log_gate,
    _log_gate_problem,
    dtype_rule="fp32_or_wider",
    distribution=_GATE_DISTRIBUTION,
)
BETA = ExtraInput(
    "beta",
    "per_token",
    "writing strength β in [0, 1] per head and token",
    _draw_beta,
    _beta_problem,
    distribution="σ(x), x ~ N(0, 1), in either regime",
    follows_regime=False,
)


def retnet_decays(heads: int) -> list[float]:
    """RetNet's per-head decays γ_h = 1 − 2^(−5−h), h = 0..H−1 (Sun et al. 2023; the
    official torchscale code and fla's retention build exactly this)."""
    return [1.0 - 2.0 ** (-5 - h) for h in range(heads)]


def gamma_problem(gamma: object) -> str | None:
    """What is wrong with a decay γ given as a number (a --param), or None; a tensor's range is
    checked when it is used (retention_log_decay)."""
    if isinstance(gamma, numbers.Real) and not isinstance(gamma, bool):
        return None if 0 < float(gamma) < 1 else f"must lie in (0, 1) (a decay per token); got {gamma!r}"
    if isinstance(gamma, torch.Tensor):
        return None
    return f"must be a number, a tensor of shape (H,) or None; got {type(gamma).__name__}"


def retention_log_decay(gamma: object, heads: int, like: torch.Tensor) -> torch.Tensor:
    """log γ per head, (H,), in ``like``'s dtype and device; ValueError unless every γ is in (0, 1).

    ``gamma`` is None (RetNet's schedule), one number for every head, or a tensor of shape (H,).
    """
    if gamma is None:
        return torch.tensor([math.log(g) for g in retnet_decays(heads)], dtype=like.dtype, device=like.device)
    if isinstance(gamma, numbers.Real) and not isinstance(gamma, bool):
        if not 0 < float(gamma) < 1:
            raise ValueError(f"parameter gamma must lie in (0, 1) (a decay per token); got {gamma!r}")
        return torch.full((heads,), math.log(gamma), dtype=like.dtype, device=like.device)
    if not isinstance(gamma, torch.Tensor) or tuple(gamma.shape) != (heads,):
        shape = tuple(gamma.shape) if isinstance(gamma, torch.Tensor) else type(gamma).__name__
        raise ValueError(f"parameter gamma must be a number, a tensor of shape (H,) = ({heads},) or None; got {shape}")
    if not bool(((gamma > 0) & (gamma < 1)).all()):
        low, high = float(gamma.min()), float(gamma.max())
        span = f"its values run from {low:g} to {high:g}"
        raise ValueError(f"parameter gamma must lie in (0, 1) (a decay per token); {span}")
    return gamma.to(device=like.device, dtype=like.dtype).log()


def lightning_log_decays(heads: int, layer: int, layers: int) -> list[float]:
    """Lightning attention's per-head log-decay, −(8/H)(1 − layer/layers)·h for h = 0..H−1: the
    schedule fla-core 0.6 builds in ``chunk_lightning_attn`` (layer counted from 0; head 0 does
    not decay, and the decays weaken linearly with depth, MiniMax-01's design, arXiv:2501.08313)."""
    return [-(8 / heads) * (1 - layer / layers) * h for h in range(heads)]


def layer_problem(layer: object) -> str | None:
    """What is wrong with a layer index (counted from 0), or None."""
    if isinstance(layer, bool) or not isinstance(layer, numbers.Integral) or layer < 0:
        return f"must be an integer ≥ 0 (the layer's index, counted from 0); got {layer!r}"
    return None


def layers_problem(layers: object) -> str | None:
    """What is wrong with a layer count, or None."""
    if isinstance(layers, bool) or not isinstance(layers, numbers.Integral) or layers < 1:
        return f"must be a positive integer (the model's number of layers); got {layers!r}"
    return None


def lightning_log_decay(layer: object, layers: object, heads: int, like: torch.Tensor) -> torch.Tensor:
    """Lightning attention's log-decay per head, (H,), in ``like``'s dtype and device;
    ValueError unless 0 ≤ layer < layers."""
    for name, value, check in (("layer", layer, layer_problem), ("layers", layers, layers_problem)):
        problem = check(value)
        if problem:
            raise ValueError(f"parameter {name} {problem}")
    if layer >= layers:  # type: ignore[operator]
        raise ValueError(f"parameter layer must be below layers (counted from 0); got layer={layer}, layers={layers}")
    decays = lightning_log_decays(heads, int(layer), int(layers))  # type: ignore[call-overload]
    return torch.tensor(decays, dtype=like.dtype, device=like.device)
