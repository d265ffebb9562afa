"""fla's pure-PyTorch references (``fla/ops/*/naive.py``) for its gated kernels, on the CPU.

Where fla is installed, ``naive`` loads fla's own ``naive.py`` files by path (importing
``fla.ops`` would load Triton). Without it, ``TWINS`` are the same functions written here from
fla's source, so the stand-ins in fla_stand_ins.py test the argument mapping either way.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
from torch import Tensor


def _simple_gla(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    g: Tensor,
    scale: float | None = None,
    initial_state: Any = None,
    output_final_state: bool = True,
) -> Any:
    """fla's naive_recurrent_simple_gla: (B, T, H, ...) in, fp32 inside."""
    dtype = q.dtype
    q, k, v, g = (x.transpose(1, 2).float() for x in (q, k, v, g))
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    state = q.new_zeros(*q.shape[:2], q.shape[-1], v.shape[-1])
    rows = []
    for i in range(q.shape[2]):
        state = state * g[:, :, i].exp()[..., None, None] + k[:, :, i, :, None] * v[:, :, i, None, :]
        rows.append(((q[:, :, i] * scale)[..., None] * state).sum(-2))
    return torch.stack(rows, 2).transpose(1, 2).to(dtype), state


def _gla(
    q: Tensor, k: Tensor, v: Tensor, gk: Tensor, initial_state: Any = None, output_final_state: bool = False
) -> Any:
    """fla's naive_recurrent_gla: scale fixed at Dk^-1/2."""
    dtype = q.dtype
    q, k, v, gk = (x.transpose(1, 2).float() for x in (q, k, v, gk))
    state = q.new_zeros(*q.shape[:2], q.shape[-1], v.shape[-1])
    rows = []
    for i in range(q.shape[2]):
        state = state * gk[:, :, i].exp()[..., None] + k[:, :, i, :, None] * v[:, :, i, None, :]
        rows.append(((q[:, :, i] * q.shape[-1] ** -0.5)[..., None] * state).sum(-2))
    return torch.stack(rows, 2).transpose(1, 2).to(dtype), None


def _delta(
    q: Tensor, k: Tensor, v: Tensor, beta: Tensor, initial_state: Any = None, output_final_state: bool = True
) -> Any:
    """fla's delta_rule_recurrence: (B, H, T, ...) in, scale fixed at Dk^-1/2."""
    dtype = q.dtype
    q, k, v, beta = (x.float() for x in (q, k, v, beta))
    state = q.new_zeros(*q.shape[:2], q.shape[-1], v.shape[-1])
    rows = []
    for i in range(q.shape[2]):
        error = (v[:, :, i] - (state * k[:, :, i, :, None]).sum(-2)) * beta[:, :, i, None]
        state = state + k[:, :, i, :, None] * error[..., None, :]
        rows.append(torch.einsum("bhd,bhdm->bhm", q[:, :, i] * q.shape[-1] ** -0.5, state))
    return torch.stack(rows, 2).to(dtype), state


def _gated_delta(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    beta: Tensor,
    g: Tensor,
    scale: float | None = None,
    initial_state: Any = None,
    output_final_state: bool = False,
) -> Any:
    """fla's naive_recurrent_gated_delta_rule: (B, T, H, ...) in, (beta, g) in that order."""
    q, k, v, beta, g = (x.transpose(1, 2).float() for x in (q, k, v, beta, g))
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    state = q.new_zeros(*q.shape[:2], q.shape[-1], v.shape[-1])
    rows = []
    for i in range(q.shape[2]):
        state = state * g[:, :, i].exp()[..., None, None]
        error = (v[:, :, i] - (state * k[:, :, i, :, None]).sum(-2)) * beta[:, :, i, None]
        state = state + k[:, :, i, :, None] * error[..., None, :]
        rows.append(torch.einsum("bhd,bhdm->bhm", q[:, :, i] * scale, state))
    return torch.stack(rows, 2).transpose(1, 2), None


def _kda(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    g: Tensor,
    beta: Tensor,
    scale: float | None = None,
    initial_state: Any = None,
    output_final_state: bool = False,
) -> Any:
    """fla's naive_recurrent_kda: (B, T, H, ...) in, g per key channel, decay then delta step; v,
    g and beta may have HV heads, a multiple of q's and k's H, each of q and k then repeated."""
    dtype = v.dtype
    repeat = v.shape[2] // q.shape[2]
    q, k = q.repeat_interleave(repeat, dim=2), k.repeat_interleave(repeat, dim=2)
    q, k, v, g, beta = (x.transpose(1, 2).float() for x in (q, k, v, g, beta))
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    state = q.new_zeros(*q.shape[:2], q.shape[-1], v.shape[-1])
    rows = []
    for i in range(q.shape[2]):
        state = state * g[:, :, i].exp()[..., None]
        error = (v[:, :, i] - (state * k[:, :, i, :, None]).sum(-2)) * beta[:, :, i, None]
        state = state + k[:, :, i, :, None] * error[..., None, :]
        rows.append(torch.einsum("bhd,bhdm->bhm", q[:, :, i] * scale, state))
    return torch.stack(rows, 2).transpose(1, 2).to(dtype), None


def _gdn2(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    g: Tensor,
    b: Tensor,
    w: Tensor,
    scale: float | None = None,
    initial_state: Any = None,
    output_final_state: bool = False,
) -> Any:
    """fla's naive_recurrent_gdn2: decay per key channel, read at b ⊙ k, write w ⊙ v minus it."""
    dtype = v.dtype
    q, k, v, g, b, w = (x.transpose(1, 2).float() for x in (q, k, v, g, b, w))
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    state = q.new_zeros(*q.shape[:2], q.shape[-1], v.shape[-1])
    rows = []
    for i in range(q.shape[2]):
        state = state * g[:, :, i].exp()[..., None]
        erase = ((b[:, :, i] * k[:, :, i])[..., None] * state).sum(-2)
        state = state + k[:, :, i, :, None] * (w[:, :, i] * v[:, :, i] - erase)[..., None, :]
        rows.append(((q[:, :, i] * scale)[..., None] * state).sum(-2))
    return torch.stack(rows, 2).transpose(1, 2).to(dtype), None


def _dplr(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    alpha: Tensor,
    beta: Tensor,
    gk: Tensor,
    initial_state: Any = None,
    output_final_state: bool = True,
) -> Any:
    """fla's dplr_recurrence: (B, H, T, ...) in, q scaled by Dk^-1/2 inside, S ← S·e^{gk} + k vᵀ +
    β (αᵀ S), the low-rank term reading the state before the decay."""
    dtype = q.dtype
    q, k, v, alpha, beta, gk = (x.float() for x in (q, k, v, alpha, beta, gk))
    q = q * q.shape[-1] ** -0.5
    state = q.new_zeros(*q.shape[:2], q.shape[-1], v.shape[-1])
    rows = []
    for i in range(q.shape[2]):
        read = (state * alpha[:, :, i, :, None]).sum(-2, keepdim=True) * beta[:, :, i, :, None]
        state = state * gk[:, :, i].exp()[..., None] + k[:, :, i, :, None] * v[:, :, i, None, :] + read
        rows.append(torch.einsum("bhd,bhdm->bhm", q[:, :, i], state))
    return torch.stack(rows, 2).to(dtype), state


TWINS: dict[tuple[str, str], Callable[..., Any]] = {
    ("simple_gla", "naive_recurrent_simple_gla"): _simple_gla,
    ("gla", "naive_recurrent_gla"): _gla,
    ("delta_rule", "delta_rule_recurrence"): _delta,
    ("gated_delta_rule", "naive_recurrent_gated_delta_rule"): _gated_delta,
    ("kda", "naive_recurrent_kda"): _kda,
    ("gdn2", "naive_recurrent_gdn2"): _gdn2,
    ("generalized_delta_rule/dplr", "dplr_recurrence"): _dplr,
}


def fla_source() -> Path | None:
    """The installed fla package's folder, found without importing it (None: not installed)."""
    spec = importlib.util.find_spec("fla")
    return Path(next(iter(spec.submodule_search_locations))) if spec and spec.submodule_search_locations else None


def _load_naive(module: str) -> ModuleType:
    source = fla_source()
    assert source is not None
    spec = importlib.util.spec_from_file_location(f"fla_naive_{module}", source / "ops" / module / "naive.py")
    assert spec is not None and spec.loader is not None
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return loaded


def naive(module: str, name: str) -> Callable[..., Any]:
    """fla's reference ``name`` of ``fla.ops.<module>.naive`` where fla is installed, else its twin."""
    return getattr(_load_naive(module), name) if fla_source() is not None else TWINS[(module, name)]
