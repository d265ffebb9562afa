"""Mamba2's own inputs, as a Mamba2 layer computes them, and their reduction to a decaying
recurrence.

A Mamba2 layer (Dao and Gu 2024, arXiv:2405.21060; mamba_ssm's ``Mamba2``) hands its SSD
core, per head h of H and token t: x_t (P = head dim), the raw step dt_t (one projection per
head), B_t and C_t (N = d_state each, shared by a group of H/G heads), and four learned
per-head parameters: A = −e^{A_log}, dt_bias, D. The core computes

    Δ_t = softplus(dt_t + dt_bias),   S_t = e^{Δ_t A} S_{t−1} + Δ_t B_t x_tᵀ,   y_t = S_tᵀ C_t + D x_t

with an N×P state per head. linbench's q, k, v are C, B, x: q and k have G heads (the
groups), v has H (value heads, GVA: head h reads group h // (H/G), as mamba_ssm repeats B
and C). The reduction to linbench's decaying recurrence is g_t = Δ_t A, k̃_t = Δ_t B_t, and the
D skip added to the output; there is no scale on C (Mamba2 has none). The short convolution
before the core and the gate z after it stay outside, as fla's and mamba_ssm's layers keep them.

A_log, dt_bias and D are parameters: ``init`` (A_log's and dt_bias's default) is Mamba2's
initialisation spread evenly over the heads (A_h at the midpoints of H equal parts of [1, 16],
Δ_h log-evenly over [0.001, 0.1], dt_bias = softplus⁻¹(Δ_h): mamba_ssm's A_init_range, dt_min
and dt_max; D's default is its init, 1), a number for every head, or a tensor (H,) given from
Python, whose gradient is carried (the
correctness gate draws them so, ``Param.learnable``).
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import torch
import torch.nn.functional as F

from linbench.variants.declarations import Param
from linbench.variants.device_constants import device_constant
from linbench.variants.extra_inputs import ExtraInput
from linbench.variants.gated.gates import A_RANGE, DT_RANGE
from linbench.variants.gated.numerics import upcast
from linbench.variants.gated.recurrences import DecayInputs


def _draw_step(sizes: tuple[int, ...], generator: torch.Generator, regime: str) -> torch.Tensor:
    del regime  # a projection, not a gate: the regimes do not apply
    return torch.randn(*sizes, generator=generator, dtype=torch.float64)


def _finite_problem(dt: torch.Tensor) -> str | None:
    return None if bool(torch.isfinite(dt).all()) else "must be finite; it has inf or nan values"


DT = ExtraInput(
    "dt",
    "per_token",
    "the raw step per head and token, before dt_bias and softplus (Δ = softplus(dt + dt_bias))",
    _draw_step,
    _finite_problem,
    distribution="N(0, 1): the in-projection's output, as in a Mamba2 layer",
    follows_regime=False,
)


INIT = "init"  # Mamba2's initialisation, spread over the heads


def _per_head_problem(value: object) -> str | None:
    if isinstance(value, torch.Tensor) or value == INIT:
        return None  # a tensor's shape is checked against the inputs when it is used
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value):
        return None
    return f"must be {INIT!r} (Mamba2's init), a finite number or a tensor (H,); got {value!r}"


def _spread(heads: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """H points in (0, 1): the midpoints of H equal parts, or uniform draws given a generator."""
    if generator is not None:
        return torch.rand(heads, generator=generator, dtype=torch.float64)
    return (torch.arange(heads, dtype=torch.float64) + 0.5) / heads


def a_log_values(heads: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """log A, A in Mamba2's A_init_range [1, 16]."""
    low, high = A_RANGE
    return (low + (high - low) * _spread(heads, generator)).log()


def dt_bias_values(heads: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """softplus⁻¹(Δ), Δ log-uniform over Mamba2's [dt_min, dt_max] = [0.001, 0.1]."""
    low, high = math.log(DT_RANGE[0]), math.log(DT_RANGE[1])
    step = (low + (high - low) * _spread(heads, generator)).exp()
    return step + torch.log(-torch.expm1(-step))


def _skip_values(heads: int, generator: torch.Generator | None = None) -> torch.Tensor:
    if generator is not None:  # around Mamba2's 1, so that a wrong skip shows in the check
        return 1.0 + 0.5 * torch.randn(heads, generator=generator, dtype=torch.float64)
    return torch.ones(heads, dtype=torch.float64)


A_LOG = Param(
    "A_log",
    INIT,
    "log of −A per head (A = −e^{A_log}); init: Mamba2's init [1, 16] spread over the heads; learnable",
    check=_per_head_problem,
    learnable=lambda heads, gen: a_log_values(heads, gen),
)
DT_BIAS = Param(
    "dt_bias",
    INIT,
    "the step's bias per head; init: softplus⁻¹ of [0.001, 0.1] spread over the heads; learnable",
    check=_per_head_problem,
    learnable=lambda heads, gen: dt_bias_values(heads, gen),
)
SKIP = Param(
    "D",
    1.0,
    "the skip D per head (y += D·x); 1.0: Mamba2's init; learnable",
    check=_per_head_problem,
    learnable=_skip_values,
)
DEFAULTS = {A_LOG.name: a_log_values, DT_BIAS.name: dt_bias_values, SKIP.name: _skip_values}


def per_head(name: str, value: Any, heads: int, like: torch.Tensor) -> torch.Tensor:
    """Parameter ``name`` as an (H,) tensor in ``like``'s dtype and device: ``init`` or a number
    as a device constant (made once, as a model holds its parameters on the device, never
    copied from the host in a timed call), a tensor as given (its autograd graph kept);
    ValueError, one line, for a tensor of another shape."""
    if value is None or (isinstance(value, str) and value == INIT):
        return device_constant(("mamba2", name, INIT, heads), like, lambda: DEFAULTS[name](heads))
    if not isinstance(value, torch.Tensor):
        problem = _per_head_problem(value)
        if problem:
            raise ValueError(f"parameter {name} {problem}")
        number = float(value)
        return device_constant(("mamba2", name, number, heads), like, lambda: [number] * heads)
    if tuple(value.shape) != (heads,):
        raise ValueError(
            f"parameter {name} must have shape (H,) = ({heads},), one per value head; got {tuple(value.shape)}"
        )
    return value.to(device=like.device, dtype=like.dtype)


def steps(dt: torch.Tensor, dt_bias: Any, like: torch.Tensor) -> torch.Tensor:
    """Δ = softplus(dt + dt_bias), (B, H, S), in ``like``'s dtype."""
    bias = per_head(DT_BIAS.name, dt_bias, dt.shape[1], like)
    return F.softplus(dt.to(like.dtype) + bias[:, None])


def prepare(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, dt: torch.Tensor, A_log: Any, dt_bias: Any
) -> DecayInputs:
    """C, Δ·B, x and the log-decay Δ·A as a (B, H, S, 1) column, in the compute dtype (q and k
    already repeated to v's heads)."""
    q, k, v = upcast(q, k, v)
    step = steps(dt, dt_bias, q)
    a = -per_head(A_LOG.name, A_log, v.shape[1], q).exp()
    return DecayInputs(q, k * step.unsqueeze(-1), v, (step * a[:, None]).unsqueeze(-1))


def skip(out: torch.Tensor, v: torch.Tensor, d: Any) -> torch.Tensor:
    """``out`` + D·x per value head, in ``out``'s dtype."""
    return out + per_head(SKIP.name, d, v.shape[1], out)[:, None, None] * v.to(out.dtype)
