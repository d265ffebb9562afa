"""The gated variants' extra inputs (log-gates, β), retention's fixed per-head decay γ and
lightning's per-layer one.

Draws follow what trained models feed these kernels:

- a log-gate is g = log σ(x) / τ with x ~ N(0, 1) pre-activations: τ = 16 in the ``weak``
  regime (fla's GLA and simple-GLA layers divide by ``gate_logit_normalizer = 16``; mean
  g ≈ −0.05, a memory of ~20 tokens), τ = 1 in the ``strong`` regime (mean g ≈ −0.8, a
  memory of about one token, the far end of Mamba2's A·Δt range, up to 16 × 0.1 = 1.6);
- β = σ(x), x ~ N(0, 1) (DeltaNet's and Gated DeltaNet's sigmoid of a projection), in
  either regime.

Two more profiles draw the gate as the models compute it from a projection x ~ N(0, 1) and
two learned parameters, drawn at their initialisation ranges:

- ``production`` (simple-gla, gated-deltanet, kda): g = −e^{A_log}·softplus(x + dt_bias), as
  Mamba2 (Dao and Gu 2024, arXiv:2405.21060), Gated DeltaNet (arXiv:2412.06464) and Kimi
  Linear (arXiv:2510.26692; fla-core's ``naive_kda_gate``) compute it; A = e^{A_log} ~ U(1, 16)
  per head and dt_bias = softplus⁻¹(dt), dt log-uniform in [0.001, 0.1] (mamba_ssm's Mamba2
  defaults A_init_range = (1, 16), dt_min = 0.001, dt_max = 0.1, which fla's Gated DeltaNet
  and KDA layers copy), per head (per head and key channel for kda);
- ``lower-bound`` (kda): g = −5·σ(e^{A_log}·(x + dt_bias)), in (−5, 0), KDA's gate bounded
  below (fla-core's ``kda_gate`` with ``lower_bound = −5``, the bound of Kimi K3 and
  GLM-5.3-Flash), the same A_log, dt_bias at 0: large A saturates σ, so many gates sit near
  −5, where a kernel's exponentials of cumulated gates are at their hardest (a kernel that
  returned NaN at this bound was found by such inputs: cudnn-frontend issue 1017).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import replace

import torch
import torch.nn.functional as F

from linbench.variants.device_constants import device_constant
from linbench.variants.extra_inputs import ExtraInput

GATE_TEMPERATURE = {"weak": 16.0, "strong": 1.0}


def _draw_log_gate(sizes: tuple[int, ...], generator: torch.Generator, regime: str) -> torch.Tensor:
    pre = torch.randn(*sizes, generator=generator, dtype=torch.float64)
    return F.logsigmoid(pre) / GATE_TEMPERATURE[regime]


# Mamba2's initialisation (mamba_ssm Mamba2: A_init_range, dt_min, dt_max), which fla's Gated
# DeltaNet and KDA layers copy; KDA's lower bound (fla-core kda_gate, Kimi K3, GLM-5.3-Flash).
A_RANGE, DT_RANGE, LOWER_BOUND = (1.0, 16.0), (0.001, 0.1), -5.0


def _uniform(sizes: tuple[int, ...], low: float, high: float, generator: torch.Generator) -> torch.Tensor:
    return low + (high - low) * torch.rand(*sizes, generator=generator, dtype=torch.float64)


def _model_gate_parts(sizes: tuple[int, ...], generator: torch.Generator) -> tuple[torch.Tensor, ...]:
    """A = e^{A_log} per head, dt_bias per head (and key channel for a per-channel gate), both
    broadcast over batch and tokens, and the projection x ~ N(0, 1) of every token."""
    heads, channel = sizes[1], len(sizes) == 4
    a = _uniform((heads,), *A_RANGE, generator)
    low, high = math.log(DT_RANGE[0]), math.log(DT_RANGE[1])
    log_dt = _uniform((heads, sizes[3]) if channel else (heads,), low, high, generator)
    dt = log_dt.exp()
    dt_bias = dt + torch.log(-torch.expm1(-dt))  # softplus⁻¹(dt)
    view = (1, heads, 1, -1) if channel else (1, heads, 1)
    x = torch.randn(*sizes, generator=generator, dtype=torch.float64)
    return a.view(*view[:-1], 1) if channel else a.view(*view), dt_bias.view(*view), x


def _draw_model_gate(sizes: tuple[int, ...], generator: torch.Generator, regime: str) -> torch.Tensor:
    """A gate of ``regime``: weak or strong (log σ(x)/τ), production or lower-bound (as models
    compute it from A_log and dt_bias)."""
    if regime in GATE_TEMPERATURE:
        return _draw_log_gate(sizes, generator, regime)
    a, dt_bias, x = _model_gate_parts(sizes, generator)
    if regime == "production":
        return -a * F.softplus(x + dt_bias)
    # dt_bias left out (0): Mamba2's (about −4.6) would keep σ near 0, and the profile is there
    # to reach the bound (with A up to 16, about 40% of the gates lie below −4.5).
    return LOWER_BOUND * torch.sigmoid(a * x)


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
_PRODUCTION = "; production: −e^{A_log}·softplus(x + dt_bias), A ~ U(1, 16), dt ~ logU(0.001, 0.1) (Mamba2's init)"
_LOWER_BOUND = "; lower-bound: −5·σ(e^{A_log}·x) (KDA's bounded gate, dt_bias 0)"

HEAD_GATE = ExtraInput(
    "g",
    "per_token",
    "log-gate ≤ 0 per head and token (the state decays by e^g)",
    _draw_model_gate,
    _log_gate_problem,
    dtype_rule="fp32_or_wider",
    distribution=_GATE_DISTRIBUTION + _PRODUCTION,
    regimes=("weak", "strong", "production"),
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
# kda's gate: gla's, and the two ways Kimi Linear (production) and Kimi K3 / GLM-5.3-Flash
# (lower-bound) compute it.
KDA_GATE = replace(
    CHANNEL_GATE,
    draw_fn=_draw_model_gate,
    distribution=_GATE_DISTRIBUTION + _PRODUCTION + _LOWER_BOUND,
    regimes=("weak", "strong", "production", "lower-bound"),
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
    A schedule or a number is a device constant (device_constants.py), made once, not per call.
    """
    if gamma is None:
        return device_constant(("retnet log decays", heads), like, lambda: [math.log(g) for g in retnet_decays(heads)])
    if isinstance(gamma, numbers.Real) and not isinstance(gamma, bool):
        if not 0 < float(gamma) < 1:
            raise ValueError(f"parameter gamma must lie in (0, 1) (a decay per token); got {gamma!r}")
        return device_constant(("retention log decay", float(gamma), heads), like, lambda: [math.log(gamma)] * heads)
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


def check_layer(layer: object, layers: object) -> tuple[int, int]:
    """(layer, layers) as integers; ValueError unless 0 ≤ layer < layers."""
    for name, value, check in (("layer", layer, layer_problem), ("layers", layers, layers_problem)):
        problem = check(value)
        if problem:
            raise ValueError(f"parameter {name} {problem}")
    if layer >= layers:  # type: ignore[operator]
        raise ValueError(f"parameter layer must be below layers (counted from 0); got layer={layer}, layers={layers}")
    return int(layer), int(layers)  # type: ignore[call-overload]


def lightning_log_decay(layer: object, layers: object, heads: int, like: torch.Tensor) -> torch.Tensor:
    """Lightning attention's log-decay per head, (H,), in ``like``'s dtype and device, a device
    constant (made once, not per call); ValueError unless 0 ≤ layer < layers."""
    index, count = check_layer(layer, layers)
    return device_constant(
        ("lightning log decays", heads, index, count), like, lambda: lightning_log_decays(heads, index, count)
    )
