"""FlashKDA's and cuLA's entry points stood in on CPU: both are source builds with CUDA
extensions, so their Python layers cannot be imported here. Each stand-in encodes the library's
contract line by line from its source at the commit linbench's contract row names (file and
line in the comments) and computes what the library documents from the arguments it is given,
with fla's naive_recurrent_kda (fla_naive.py) for the recurrence:

- FlashKDA 1ce47ea: the gate recomputed as lower_bound·σ(e^{A_log}·(g + dt_bias)), β = σ(beta),
  q and k L2-normalised always, (B, T, H, D) with an optional cu_seqlens over B = 1, ``out``
  written.
- cuLA fa742a2: fla's chunk_kda convention, (B, T, H, D), asserting the safe gate's range; the
  Hopper prefill's own asserts; lightning's per-head rate s_h with decay e^{−s_h} and its scale.
"""

from __future__ import annotations

import itertools
import types
from typing import Any

import torch
import torch.nn.functional as F
from fla_naive import naive
from library_layers import stand_in_kernel
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


def _normalised(q: Tensor, k: Tensor) -> tuple[Tensor, Tensor]:
    return F.normalize(q.float(), dim=-1), F.normalize(k.float(), dim=-1)


class FlashKDA:
    """flash_kda.fwd."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    @stand_in_kernel
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
        for x in (q, k, v, g, beta, out):  # csrc/flash_kda.cpp:46 (contiguous), :49-54 (bf16)
            assert x.dtype == torch.bfloat16 and x.is_contiguous(), "FlashKDA: bf16, contiguous"
        assert A_log.dtype == dt_bias.dtype == torch.float32  # csrc/flash_kda.cpp:82, :84
        assert A_log.shape == (q.shape[2],) and dt_bias.shape == (q.shape[2], q.shape[3])  # :107-108
        assert -5.0 <= lower_bound <= 0  # flash_kda/__init__.py:20 "expected in [-5.0, 0]"
        assert k.shape == v.shape == g.shape == out.shape == q.shape, "one head count"  # :100-103
        assert beta.shape == q.shape[:3]  # csrc/flash_kda.cpp:104
        assert q.shape[-1] == 128  # csrc/flash_kda.cpp:110 "currently only supports D == 128"
        assert cu_seqlens is None or (q.shape[0] == 1 and cu_seqlens.dtype == torch.int64)  # :150, :153
        gate = lower_bound * torch.sigmoid(A_log.exp()[:, None] * (g.float() + dt_bias))
        qn, kn = _normalised(q, k)
        rows = []
        for b in range(q.shape[0]):
            rows.append(kda_tokens(qn[b], kn[b], v[b], gate[b], torch.sigmoid(beta[b].float()), scale, cu_seqlens))
        out.copy_(torch.stack(rows).to(out.dtype))


class CuLA:
    """cula.kda.chunk_kda and cula.lightning.lightning_attn_fwd(_varlen)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    @stand_in_kernel
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
        # cula/kda/chunk.py:382, :385 (hopper_fused_fwd.py:52, :220, :222): one head count for all
        assert q.shape == k.shape == g.shape and v.shape[:3] == q.shape[:3], "cuLA: one head count"
        assert beta.shape == q.shape[:3] and beta.dtype in (torch.bfloat16, torch.float32)  # chunk.py:384, :387
        assert q.dtype == k.dtype == v.dtype == torch.bfloat16 and q.shape[-1] == 128  # chunk.py:386, :388
        assert not use_gate_in_kernel  # g the log-gate (chunk.py:247 "in log space!")
        assert cu_seqlens is None or (q.shape[0] == 1 and cu_seqlens.dtype == torch.int32)  # IntTensor, B = 1
        assert not safe_gate or bool((g >= -5).all()), "safe_gate assumes g in [-5, 0)"  # USAGE.md
        qn, kn = _normalised(q, k) if use_qk_l2norm_in_kernel else (q.float(), k.float())
        factor = q.shape[-1] ** -0.5 if scale is None else scale
        out = torch.stack(
            [kda_tokens(qn[b], kn[b], v[b], g[b], beta[b], factor, cu_seqlens) for b in range(q.shape[0])]
        )
        return out.to(q.dtype), None

    def kda_prefill_hopper(self, *args: Any, safe_gate: bool = False, **kwargs: Any) -> tuple[Tensor, None]:
        """cula_kda_prefill (hopper_fused_fwd.py:134): chunk_kda's arguments, forward only."""
        assert safe_gate, "Only support safe_gate=True."  # hopper_fused_fwd.py:195
        assert not torch.is_grad_enabled() or not any(
            isinstance(t, Tensor) and t.requires_grad for t in (*args, *kwargs.values())
        ), "Backward pass is not implemented yet."  # hopper_fused_fwd.py:130
        out, state = self.chunk_kda(*args, safe_gate=safe_gate, **kwargs)
        self.calls[-1] = ("kda_prefill_hopper", self.calls[-1][1])
        return out, state

    @stand_in_kernel
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

    def modules(self) -> dict[str, Any]:
        """cula.kda and cula.lightning as modules holding these stand-ins."""
        kda = types.SimpleNamespace(chunk_kda=self.chunk_kda, kda_prefill_hopper=self.kda_prefill_hopper)
        lightning = types.SimpleNamespace(
            lightning_attn_fwd=self.lightning_attn_fwd, lightning_attn_fwd_varlen=self.lightning_attn_fwd_varlen
        )
        return {"cula.kda": kda, "cula.lightning": lightning}
