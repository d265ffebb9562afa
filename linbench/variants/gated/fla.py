"""fla-core's Triton kernels as impls of the gated variants: ``fla`` (chunk) and ``fla-recurrent``
(fused_recurrent), on the ``.[fla]`` extra like cosine's and linear's ``fla``.

Written against fla-core 0.6.x's signatures; they run on a CUDA GPU with Triton, and on a CPU
under Triton's interpreter (``TRITON_INTERPRET=1``, feature_forms/triton_interpreter.py), where
``linbench check`` and the tests prove fla's real kernels against the fp64 reference
(tests/variants/test_gated_fla_interpreted.py) but nothing is timed; without Triton the tests
check the mapping against fla's pure-PyTorch references standing in for the kernels
(tests/variants/test_gated_fla.py). Every
kernel takes (B, S, H, D) tensors (the impls hand it views of linbench's (B, H, S, D) ones,
which ``linbench run`` draws in fla's layout, untimed), gates and β as (B, S, H) or
(B, S, H, Dk), and q's factor as ``scale`` (None there means Dk^-1/2, as here); every
argument is passed by keyword, since the kernels' orders differ (chunk_gated_delta_rule takes
g then beta, its naive reference beta then g). The mapping:

- retention: chunk_retention / fused_recurrent_retention for γ = None (RetNet's schedule, which
  fla builds itself); for a given γ, chunk_simple_gla / fused_recurrent_simple_gla with
  g_gamma = log γ per head, which is what the retention kernels call;
- lightning: chunk_lightning_attn / fused_recurrent_lightning_attn (layer_idx=layer,
  num_layers=layers: fla builds the decay, simple-gla's g_gamma, from them);
- simple-gla: chunk_simple_gla(g=g) / fused_recurrent_simple_gla(g=g);
- gla: chunk_gla(g=g) / fused_recurrent_gla(gk=g);
- deltanet: chunk_delta_rule / fused_recurrent_delta_rule (beta=β, use_qk_l2norm_in_kernel=True,
  as fla's layers normalise q and k);
- gated-deltanet: chunk_gated_delta_rule / fused_recurrent_gated_delta_rule (g=g, beta=β, the
  same), the fused recurrent one forward only;
- kda: chunk_kda / fused_recurrent_kda (g=g per key channel (B, S, H, Dk), beta=β, the same;
  the gate and β given as computed, use_gate_in_kernel and use_beta_sigmoid_in_kernel left
  False), the fused recurrent one forward only.

More value heads than q/k heads (GVA): chunk_gated_delta_rule, fused_recurrent_gated_delta_rule,
chunk_kda and fused_recurrent_kda take v, g and β with HV heads and q, k with H (value head j
reads q/k head j // (HV / H)) natively; the other kernels get q and k repeated to HV heads.

fla takes a constant decay (g_gamma) without a gradient and has no backward for the fused
recurrent gated delta rule nor for fused_recurrent_kda: a gradient asked of either is ImplUnavailableError (the point is
skipped with the reason). chunk_delta_rule refuses fp32 (fp16 and bf16 only); no fla kernel
has an fp64 form. Under the interpreter bf16 is refused (INTERPRETED_BF16).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from linbench.errors import ImplUnavailableError
from linbench.variants.backends import note_backend
from linbench.variants.feature_forms import fla as fla_common
from linbench.variants.feature_forms.triton_interpreter import interpreter_on
from linbench.variants.gated.fla_dispatch import DISPATCH, run_dispatched
from linbench.variants.gated.gates import check_layer, retention_log_decay
from linbench.variants.gated.numerics import checked_state, resolve_scale

CHUNK, RECURRENT = "fla", "fla-recurrent"
# Measured with fla-core 0.6.0 and triton 3.9: chunk_delta_rule in bf16 under the interpreter is
# off by 1e9 (numpy has no bf16: its matmuls overflow); in fp16 it matches the reference.
INTERPRETED_BF16 = "Triton's interpreter computes bf16 wrongly on a CPU (numpy has no bf16); fp16 and fp32 run"
FP32_REFUSED = "fla's chunk_delta_rule takes fp16 and bf16 only (it asserts against fp32)"


def fla_kernel(module: str, name: str) -> Callable[..., tuple[torch.Tensor, Any]]:
    """fla's kernel ``name`` in ``fla.ops.<module>`` (looked up per call, so tests can stand one in)."""
    return getattr(fla_common.import_fla(f"fla.ops.{module}"), name)


def _seq_major(t: torch.Tensor) -> torch.Tensor:
    """A (B, H, S[, D]) tensor as fla's (B, S, H[, D]) view (contiguous when drawn in fla's layout)."""
    return t.transpose(1, 2)


def _call(
    module: str,
    name: str,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    dispatch: bool = False,
    *,
    cu_seqlens: torch.Tensor | None = None,
    initial_state: torch.Tensor | None = None,
    **given: Any,
) -> torch.Tensor:
    """The kernel on seq-major views of q, k, v and the tensors in ``given``, from
    ``initial_state`` (N, H_v, K, V) as fla takes it; the output back as a (B, H, S, Dv) view.
    ``dispatch``: as fla's dispatch would run it (fla_dispatch.py). ``cu_seqlens``: a pack's
    boundaries (q, k, v (1, H, T, D)), fla's own varlen path."""
    if q.dtype == torch.float64:
        raise ImplUnavailableError(f"fla.ops.{module}.{name} has no fp64 form")
    if q.dtype == torch.bfloat16 and q.device.type == "cpu" and interpreter_on():
        raise ImplUnavailableError(f"fla.ops.{module}.{name}: {INTERPRETED_BF16}")
    args = {key: _seq_major(value) if _per_token(value) else value for key, value in given.items()}
    if checked_state(initial_state, (q.shape[0], v.shape[1], q.shape[-1], v.shape[-1])) is not None:
        args["initial_state"] = initial_state
    args |= {"q": _seq_major(q), "k": _seq_major(k), "v": _seq_major(v)}
    if cu_seqlens is not None:
        args["cu_seqlens"] = cu_seqlens
    if dispatch:
        out, _ = run_dispatched(name, fla_kernel(module, name), **args)
    else:
        note_backend(fla_common.backend_name(name, q.device))
        out, _ = fla_kernel(module, name)(**args)
    return out.transpose(1, 2)


def _per_token(value: object) -> bool:
    return isinstance(value, torch.Tensor) and value.ndim >= 3


def _needs_gradient(*tensors: torch.Tensor | None) -> bool:
    return torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)


def _causal_only(owner: str, causal: bool) -> None:
    if not causal:
        raise ImplUnavailableError(f"{owner}: fla's kernels are causal only")


def retention_fla(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    causal: bool,
    gamma: Any,
    scale: Any,
    kernel: str,
    initial_state: Any = None,
    cu_seqlens: torch.Tensor | None = None,
) -> torch.Tensor:
    """RetNet's retention: fla's own kernel for RetNet's γ schedule, its simple-GLA kernel with
    a constant decay per head (g_gamma, exactly what the retention kernel builds) for another γ."""
    _causal_only(f"retention:{kernel}", causal)
    factor = resolve_scale(scale, q.shape[-1])
    fused = "fused_recurrent" if kernel == RECURRENT else "chunk"
    if gamma is None:
        return _call(
            "retention", f"{fused}_retention", q, k, v, scale=factor, initial_state=initial_state, cu_seqlens=cu_seqlens
        )
    if isinstance(gamma, torch.Tensor) and _needs_gradient(gamma):
        raise ImplUnavailableError(f"retention:{kernel}: fla takes γ as a constant (g_gamma); no gradient reaches it")
    log_decay = retention_log_decay(gamma, q.shape[1], q.new_empty(0, dtype=torch.float32)).detach()
    return _call(
        "simple_gla",
        f"{fused}_simple_gla",
        q,
        k,
        v,
        g_gamma=log_decay,
        scale=factor,
        initial_state=initial_state,
        cu_seqlens=cu_seqlens,
    )


def lightning_fla(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    causal: bool,
    layer: Any,
    layers: Any,
    scale: Any,
    kernel: str,
    initial_state: Any = None,
    cu_seqlens: torch.Tensor | None = None,
) -> torch.Tensor:
    """Lightning attention: fla builds the per-head decay from the layer's index and count
    (checked here first, so a bad pair is the same ValueError as the PyTorch forms')."""
    _causal_only(f"lightning:{kernel}", causal)
    check_layer(layer, layers)  # fla builds the decays itself, on the device
    fused = "fused_recurrent" if kernel == RECURRENT else "chunk"
    factor = resolve_scale(scale, q.shape[-1])
    given: dict[str, Any] = {"layer_idx": int(layer), "num_layers": int(layers), "scale": factor}
    return _call(
        "lightning_attn",
        f"{fused}_lightning_attn",
        q,
        k,
        v,
        **given,
        initial_state=initial_state,
        cu_seqlens=cu_seqlens,
    )


def simple_gla_fla(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    causal: bool,
    g: torch.Tensor,
    scale: Any,
    kernel: str,
    initial_state: Any = None,
    cu_seqlens: torch.Tensor | None = None,
) -> torch.Tensor:
    """A scalar log-gate per head and token, as fla's ``g`` (B, S, H)."""
    _causal_only(f"simple-gla:{kernel}", causal)
    fused = "fused_recurrent" if kernel == RECURRENT else "chunk"
    return _call(
        "simple_gla",
        f"{fused}_simple_gla",
        q,
        k,
        v,
        g=g,
        scale=resolve_scale(scale, q.shape[-1]),
        initial_state=initial_state,
        cu_seqlens=cu_seqlens,
    )


def gla_fla(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    causal: bool,
    g: torch.Tensor,
    scale: Any,
    kernel: str,
    initial_state: Any = None,
    cu_seqlens: torch.Tensor | None = None,
) -> torch.Tensor:
    """A log-gate per key channel: chunk_gla's ``g``, fused_recurrent_gla's ``gk`` (B, S, H, Dk)."""
    _causal_only(f"gla:{kernel}", causal)
    factor = resolve_scale(scale, q.shape[-1])
    if kernel == RECURRENT:
        return _call(
            "gla",
            "fused_recurrent_gla",
            q,
            k,
            v,
            gk=g,
            scale=factor,
            initial_state=initial_state,
            cu_seqlens=cu_seqlens,
        )
    return _call("gla", "chunk_gla", q, k, v, g=g, scale=factor, initial_state=initial_state, cu_seqlens=cu_seqlens)


def delta_fla(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    causal: bool,
    beta: torch.Tensor,
    scale: Any,
    kernel: str,
    initial_state: Any = None,
    cu_seqlens: torch.Tensor | None = None,
    g: torch.Tensor | None = None,
) -> torch.Tensor:
    """The (gated) delta rule, q and k L2-normalised inside fla's kernel (as fla's layers call it)."""
    owner = f"{'gated-deltanet' if g is not None else 'deltanet'}:{kernel}"
    _causal_only(owner, causal)
    factor = resolve_scale(scale, q.shape[-1])
    if g is None:
        if kernel == CHUNK and q.dtype == torch.float32:
            raise ImplUnavailableError(f"{owner}: {FP32_REFUSED}")
        name = "fused_recurrent_delta_rule" if kernel == RECURRENT else "chunk_delta_rule"
        return _call(
            "delta_rule",
            name,
            q,
            k,
            v,
            beta=beta,
            scale=factor,
            use_qk_l2norm_in_kernel=True,
            initial_state=initial_state,
            cu_seqlens=cu_seqlens,
        )
    if kernel == RECURRENT and _needs_gradient(q, k, v, g, beta):
        raise ImplUnavailableError(f"{owner}: fla's fused_recurrent_gated_delta_rule has no backward (forward only)")
    name = "fused_recurrent_gated_delta_rule" if kernel == RECURRENT else "chunk_gated_delta_rule"
    given = {"g": g, "beta": beta, "scale": factor, "use_qk_l2norm_in_kernel": True}
    return _call(
        "gated_delta_rule",
        name,
        q,
        k,
        v,
        kernel == DISPATCH,
        **given,
        cu_seqlens=cu_seqlens,
        initial_state=initial_state,
    )


def kda_fla(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    causal: bool,
    g: torch.Tensor,
    beta: torch.Tensor,
    scale: Any,
    kernel: str,
    initial_state: Any = None,
    cu_seqlens: torch.Tensor | None = None,
) -> torch.Tensor:
    """Kimi Delta Attention: a log-gate per key channel, q and k L2-normalised in the kernel."""
    owner = f"kda:{kernel}"
    _causal_only(owner, causal)
    if kernel == RECURRENT and _needs_gradient(q, k, v, g, beta):
        raise ImplUnavailableError(f"{owner}: fla's fused_recurrent_kda has no backward (forward only)")
    name = "fused_recurrent_kda" if kernel == RECURRENT else "chunk_kda"
    factor = resolve_scale(scale, q.shape[-1])
    dispatch = kernel == DISPATCH
    return _call(
        "kda",
        name,
        q,
        k,
        v,
        dispatch,
        g=g,
        beta=beta,
        scale=factor,
        use_qk_l2norm_in_kernel=True,
        cu_seqlens=cu_seqlens,
        initial_state=initial_state,
    )
