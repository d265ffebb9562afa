"""The kda and lightning entry points of FlashKDA, FlashInfer, cuDNN and cuLA stood in on CPU.

Each stand-in has its function's signature (the names and order read from the library's
source: linbench/variants/gated/{flash_kda,flashinfer_kda,cudnn_kda,cula}.py say which
version) and computes what the library documents from the arguments it is given, with fla's
naive_recurrent_kda (fla_naive.py) for the recurrence, so a gate in the wrong space, a wrong
layout, scale, head grouping or sequence boundary makes the impl's output wrong:

- FlashKDA: the gate recomputed as lower_bound·σ(e^{A_log}·(g + dt_bias)), β = σ(beta), q and
  k L2-normalised always, (B, T, H, D) with an optional cu_seqlens over B = 1, ``out`` written.
- FlashInfer: (B, T, H, K) q/k, (B, T, HV, V) v, bf16 log-gate and β, value head j reading q/k
  head j // (HV / H).
- cuDNN: THD tokens with cu_seqlens, the log-gate, the same grouping; differentiable.
- cuLA: fla's chunk_kda convention, (B, T, H, D), asserting the safe gate's range; lightning's
  per-head rate s_h with decay e^{−s_h} and its scale.
"""

from __future__ import annotations

import itertools
from typing import Any

import torch
import torch.nn.functional as F
from fla_naive import naive
from torch import Tensor


def _sequences(total: int, cu_seqlens: Tensor | None) -> list[tuple[int, int]]:
    bounds = [0, total] if cu_seqlens is None else cu_seqlens.tolist()
    return list(itertools.pairwise(bounds))


def kda_tokens(q: Tensor, k: Tensor, v: Tensor, gate: Tensor, beta: Tensor, scale: float, cu: Tensor | None) -> Tensor:
    """KDA over (T, H, ...) tokens, q and k already L2-normalised and grouped to v's heads,
    each sequence of ``cu`` (None: one) from a zero state; (T, HV, V) out, fp32."""
    outs = []
    for a, b in _sequences(q.shape[0], cu):
        out, _ = naive("kda", "naive_recurrent_kda")(
            *(x[None, a:b].float() for x in (q, k, v, gate, beta)), scale=scale
        )
        outs.append(out[0].float())
    return torch.cat(outs, dim=0)


def _grouped(q: Tensor, k: Tensor, v: Tensor, head_dim: int) -> tuple[Tensor, Tensor]:
    """q and k repeated to v's heads: value head j reads q/k head j // (HV / H)."""
    group = v.shape[head_dim] // q.shape[head_dim]
    return q.repeat_interleave(group, dim=head_dim), k.repeat_interleave(group, dim=head_dim)


def _normalised(q: Tensor, k: Tensor) -> tuple[Tensor, Tensor]:
    return F.normalize(q.float(), dim=-1), F.normalize(k.float(), dim=-1)


class FlashKDA:
    """flash_kda.fwd."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def fwd(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        g: Tensor,
        beta: Tensor,
        scale: float,
        out: Tensor,
        A_log: Tensor,
        dt_bias: Tensor,
        lower_bound: float,
        initial_state: Tensor | None = None,
        final_state: Tensor | None = None,
        cu_seqlens: Tensor | None = None,
    ) -> None:
        self.calls.append(
            dict(
                q=q,
                k=k,
                v=v,
                g=g,
                beta=beta,
                scale=scale,
                out=out,
                A_log=A_log,
                dt_bias=dt_bias,
                lower_bound=lower_bound,
                cu_seqlens=cu_seqlens,
            )
        )
        for x in (q, k, v, g, beta, out):
            assert x.dtype == torch.bfloat16 and x.is_contiguous(), "FlashKDA: bf16, contiguous"
        assert A_log.dtype == dt_bias.dtype == torch.float32 and -5.0 <= lower_bound <= 0
        assert q.shape[2] == v.shape[2], "FlashKDA has one head count"
        assert cu_seqlens is None or (q.shape[0] == 1 and cu_seqlens.dtype == torch.int64)
        gate = lower_bound * torch.sigmoid(A_log.exp()[:, None] * (g.float() + dt_bias))
        qn, kn = _normalised(q, k)
        rows = []
        for b in range(q.shape[0]):
            rows.append(kda_tokens(qn[b], kn[b], v[b], gate[b], torch.sigmoid(beta[b].float()), scale, cu_seqlens))
        out.copy_(torch.stack(rows).to(out.dtype))


class FlashInferKDA:
    """flashinfer.recurrent_kda (the prefill arguments linbench passes)."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def recurrent_kda(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        g: Tensor,
        beta: Tensor,
        A_log: Tensor | None = None,
        dt_bias: Tensor | None = None,
        scale: float | None = None,
        initial_state: Tensor | None = None,
        output_final_state: bool = False,
        use_qk_l2norm_in_kernel: bool = True,
        use_gate_in_kernel: bool = False,
        lower_bound: float | None = None,
        cu_seqlens: Tensor | None = None,
        beta_is_logit: bool = False,
        backend: str = "auto",
        **kwargs: Any,
    ) -> tuple[Tensor, None]:
        self.calls.append(
            dict(
                q=q,
                k=k,
                v=v,
                g=g,
                beta=beta,
                scale=scale,
                cu_seqlens=cu_seqlens,
                use_qk_l2norm_in_kernel=use_qk_l2norm_in_kernel,
                use_gate_in_kernel=use_gate_in_kernel,
                beta_is_logit=beta_is_logit,
                backend=backend,
            )
        )
        assert all(x.dtype == torch.bfloat16 and x.is_contiguous() for x in (q, k, v, g, beta)), "bf16, contiguous"
        assert not use_gate_in_kernel and not beta_is_logit and use_qk_l2norm_in_kernel
        q, k = _grouped(*_normalised(q, k), v, head_dim=2)
        factor = q.shape[-1] ** -0.5 if scale is None else scale
        out = torch.stack([kda_tokens(q[b], k[b], v[b], g[b], beta[b], factor, cu_seqlens) for b in range(q.shape[0])])
        return out.to(v.dtype), None


class CuDNNKDA:
    """cudnn.linear_attention.ops.kda.kimi_delta_attention (THD, differentiable)."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def kimi_delta_attention(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        g: Tensor,
        beta: Tensor,
        cu_seqlens: Tensor,
        scale: float | None = None,
        initial_state: Tensor | None = None,
        output_final_state: bool = False,
        use_qk_l2norm_in_kernel: bool = False,
        batch_invariant: bool = False,
        use_beta_sigmoid_in_kernel: bool = False,
        allow_neg_eigval: bool = False,
        safe_gate: bool = False,
        gate_lower_bound: float | None = None,
        gate_domain: str = "log",
        a_log: Tensor | None = None,
        dt_bias: Tensor | None = None,
        **kwargs: Any,
    ) -> tuple[Tensor, Tensor]:
        self.calls.append(
            dict(
                q=q,
                k=k,
                v=v,
                g=g,
                beta=beta,
                cu_seqlens=cu_seqlens,
                scale=scale,
                use_qk_l2norm_in_kernel=use_qk_l2norm_in_kernel,
                gate_domain=gate_domain,
            )
        )
        assert q.dim() == 3 and cu_seqlens.dtype in (torch.int32, torch.int64), "THD with cu_seqlens"
        assert gate_domain == "log" and not safe_gate and not use_beta_sigmoid_in_kernel
        assert k.shape[1] == q.shape[1] and g.shape[1] == beta.shape[1] == v.shape[1]
        qn, kn = _normalised(q, k) if use_qk_l2norm_in_kernel else (q.float(), k.float())
        qn, kn = _grouped(qn, kn, v, head_dim=1)
        factor = q.shape[-1] ** -0.5 if scale is None else scale
        return kda_tokens(qn, kn, v, g, beta, factor, cu_seqlens).to(q.dtype), q.new_empty(0)


class CuLA:
    """cula.kda.chunk_kda and cula.lightning.lightning_attn_fwd(_varlen)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def chunk_kda(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        g: Tensor,
        beta: Tensor,
        scale: float | None = None,
        initial_state: Tensor | None = None,
        output_final_state: bool = False,
        use_qk_l2norm_in_kernel: bool = False,
        use_gate_in_kernel: bool = False,
        cu_seqlens: Tensor | None = None,
        cu_seqlens_cpu: Tensor | None = None,
        safe_gate: bool = False,
        lower_bound: float | None = None,
        **kwargs: Any,
    ) -> tuple[Tensor, None]:
        self.calls.append(
            (
                "chunk_kda",
                dict(
                    q=q,
                    k=k,
                    v=v,
                    g=g,
                    beta=beta,
                    scale=scale,
                    cu_seqlens=cu_seqlens,
                    use_qk_l2norm_in_kernel=use_qk_l2norm_in_kernel,
                    use_gate_in_kernel=use_gate_in_kernel,
                    safe_gate=safe_gate,
                ),
            )
        )
        assert q.shape == k.shape == g.shape and v.shape[:3] == q.shape[:3], "cuLA: one head count"
        assert q.dtype == torch.bfloat16 and not use_gate_in_kernel
        assert cu_seqlens is None or (q.shape[0] == 1 and cu_seqlens.dtype == torch.int32)
        assert not safe_gate or bool((g >= -5).all()), "safe_gate assumes g in [-5, 0)"
        qn, kn = _normalised(q, k) if use_qk_l2norm_in_kernel else (q.float(), k.float())
        factor = q.shape[-1] ** -0.5 if scale is None else scale
        out = torch.stack(
            [kda_tokens(qn[b], kn[b], v[b], g[b], beta[b], factor, cu_seqlens) for b in range(q.shape[0])]
        )
        return out.to(q.dtype), None

    def _lightning(self, q: Tensor, k: Tensor, v: Tensor, decay: Tensor, scale: float, cu: Tensor | None) -> Tensor:
        assert q.dtype == torch.bfloat16 and decay.dtype == torch.float32 and decay.shape == (q.shape[2],)
        assert bool((decay >= 0).all()), "cuLA's decay is a rate s_h ≥ 0 (e^{−s_h} per token)"
        outs = []
        for b in range(q.shape[0]):
            for a, e in _sequences(q.shape[1], cu):
                state = q.new_zeros(q.shape[2], q.shape[3], v.shape[3], dtype=torch.float32)
                for t in range(a, e):
                    state = (
                        state * (-decay).exp()[:, None, None] + k[b, t].float()[:, :, None] * v[b, t].float()[:, None]
                    )
                    outs.append(scale * torch.einsum("hd,hdm->hm", q[b, t].float(), state))
        return torch.stack(outs).view(*q.shape[:3], v.shape[3]).to(q.dtype)

    def lightning_attn_fwd(
        self,
        Q: Tensor,
        K: Tensor,
        V: Tensor,
        decay: Tensor,
        scale: float = 1.0,
        initial_state: Tensor | None = None,
        output_final_state: bool = False,
        chunk_size: int = 64,
    ) -> tuple[Tensor, None]:
        self.calls.append(("lightning_attn_fwd", dict(Q=Q, K=K, V=V, decay=decay, scale=scale)))
        return self._lightning(Q, K, V, decay, scale, None), None

    def lightning_attn_fwd_varlen(
        self,
        Q: Tensor,
        K: Tensor,
        V: Tensor,
        decay: Tensor,
        cu_seqlens: Tensor,
        scale: float = 1.0,
        state_pool: Tensor | None = None,
        initial_state_indices: Tensor | None = None,
        chunk_size: int = 64,
        persistent: bool = True,
    ) -> tuple[Tensor, None]:
        self.calls.append(
            ("lightning_attn_fwd_varlen", dict(Q=Q, K=K, V=V, decay=decay, cu_seqlens=cu_seqlens, scale=scale))
        )
        assert Q.shape[0] == 1 and cu_seqlens.dtype == torch.int32
        return self._lightning(Q, K, V, decay, scale, cu_seqlens), None

    def lookup(self, module: str, name: str) -> Any:
        assert (module, name) in {
            ("cula.kda", "chunk_kda"),
            ("cula.lightning", "lightning_attn_fwd"),
            ("cula.lightning", "lightning_attn_fwd_varlen"),
        }, f"{module} has no {name} here"
        return getattr(self, name)
