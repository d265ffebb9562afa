"""fla-core 0.6's gated kernels stood in by fla's own pure-PyTorch references (CPU).

Each stand-in has its kernel's signature (its keyword names, no others) and computes what the
kernel documents by calling fla's ``naive`` reference for it, translating the conventions the
two differ in: the kernels take (B, T, H, ...) and ``scale``; ``delta_rule_recurrence`` takes
(B, H, T, ...) and fixes the scale at Dk^-1/2, as ``naive_recurrent_gla`` does; the kernels
normalise q and k when ``use_qk_l2norm_in_kernel``; chunk_gated_delta_rule takes (g, beta),
its reference (beta, g); chunk_delta_rule asserts against fp32; the kda kernels and
``naive_recurrent_kda`` agree on (g, beta) and ``scale``.

The references come from fla_naive.py: fla's own ``naive.py`` files where fla is installed,
else twins written from fla's source, so the argument mapping is tested either way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from fla_naive import naive
from torch import Tensor


def _retnet_gamma(heads: int) -> torch.Tensor:
    """What chunk_retention builds: log(1 − 2^(−5−h)) per head, in fp32."""
    return (1 - torch.tensor(2.0).pow(-5.0 - torch.arange(heads, dtype=torch.float))).log()


def _lightning_gamma(heads: int, layer_idx: int, num_layers: int) -> torch.Tensor:
    """What chunk_lightning_attn builds (fla-core 0.6, fla/ops/lightning_attn/chunk.py):
    −(8/H)(1 − layer_idx/num_layers)·h per head h, in fp32."""
    return -(8 / heads * (1 - layer_idx / num_layers)) * torch.arange(heads, dtype=torch.float)


def _gate_of(q: torch.Tensor, g: torch.Tensor | None, g_gamma: torch.Tensor | None) -> torch.Tensor:
    if g is not None:
        return g
    assert g_gamma is not None
    return g_gamma.to(q.device).expand(*q.shape[:3])


def _l2(q: torch.Tensor, k: torch.Tensor, norm: bool) -> tuple[torch.Tensor, torch.Tensor]:
    return (F.normalize(q, dim=-1), F.normalize(k, dim=-1)) if norm else (q, k)


def _value_heads(q: Tensor, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
    """q and k (B, T, H, K) as the gated delta rule kernels read them for v (B, T, HV, V): value
    head i_hv reads q/k head i_hv // (HV // H) (fla-core 0.6, gated_delta_rule/fused_recurrent.py);
    naive_recurrent_gated_delta_rule takes one q/k head per value head."""
    group = v.shape[2] // q.shape[2]
    return q.repeat_interleave(group, dim=2), k.repeat_interleave(group, dim=2)


class Kernels:
    """The kernels of fla-core 0.6 that linbench calls, as stand-ins; ``calls`` records each call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def _note(self, name: str, **given: Any) -> None:
        self.calls.append(
            (name, {key: tuple(v.shape) if isinstance(v, torch.Tensor) else v for key, v in given.items()})
        )

    def chunk_simple_gla(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        g: Any = None,
        g_gamma: Any = None,
        scale: float | None = None,
        initial_state: Any = None,
        output_final_state: bool = False,
        state_v_first: bool = False,
        cu_seqlens: Any = None,
        cu_seqlens_cpu: Any = None,
        **kwargs: Any,
    ) -> Any:
        self._note("chunk_simple_gla", q=q, g=g, g_gamma=g_gamma, scale=scale)
        return naive("simple_gla", "naive_recurrent_simple_gla")(q, k, v, _gate_of(q, g, g_gamma), scale=scale)

    def fused_recurrent_simple_gla(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        g: Any = None,
        g_gamma: Any = None,
        scale: float | None = None,
        initial_state: Any = None,
        output_final_state: bool = False,
        reverse: bool = False,
        state_v_first: bool = False,
        cu_seqlens: Any = None,
        **kwargs: Any,
    ) -> Any:
        self._note("fused_recurrent_simple_gla", q=q, g=g, g_gamma=g_gamma, scale=scale)
        return naive("simple_gla", "naive_recurrent_simple_gla")(q, k, v, _gate_of(q, g, g_gamma), scale=scale)

    def chunk_retention(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        scale: float | None = None,
        initial_state: Any = None,
        output_final_state: bool = False,
        cu_seqlens: Any = None,
        **kwargs: Any,
    ) -> Any:
        self._note("chunk_retention", q=q, scale=scale)
        gamma = _retnet_gamma(q.shape[2])
        return naive("simple_gla", "naive_recurrent_simple_gla")(q, k, v, _gate_of(q, None, gamma), scale=scale)

    def fused_recurrent_retention(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        scale: float | None = None,
        initial_state: Any = None,
        output_final_state: bool = False,
        reverse: bool = False,
        state_v_first: bool = False,
        cu_seqlens: Any = None,
        **kwargs: Any,
    ) -> Any:
        self._note("fused_recurrent_retention", q=q, scale=scale)
        gamma = _retnet_gamma(q.shape[2])
        return naive("simple_gla", "naive_recurrent_simple_gla")(q, k, v, _gate_of(q, None, gamma), scale=scale)

    def chunk_lightning_attn(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        layer_idx: int,
        num_layers: int,
        scale: float | None = None,
        initial_state: Any = None,
        output_final_state: bool = False,
        cu_seqlens: Any = None,
        **kwargs: Any,
    ) -> Any:
        self._note("chunk_lightning_attn", q=q, layer_idx=layer_idx, num_layers=num_layers, scale=scale)
        gamma = _lightning_gamma(q.shape[2], layer_idx, num_layers)
        return naive("simple_gla", "naive_recurrent_simple_gla")(q, k, v, _gate_of(q, None, gamma), scale=scale)

    def fused_recurrent_lightning_attn(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        layer_idx: int,
        num_layers: int,
        scale: float | None = None,
        initial_state: Any = None,
        output_final_state: bool = False,
        reverse: bool = False,
        cu_seqlens: Any = None,
        **kwargs: Any,
    ) -> Any:
        self._note("fused_recurrent_lightning_attn", q=q, layer_idx=layer_idx, num_layers=num_layers, scale=scale)
        gamma = _lightning_gamma(q.shape[2], layer_idx, num_layers)
        return naive("simple_gla", "naive_recurrent_simple_gla")(q, k, v, _gate_of(q, None, gamma), scale=scale)

    def _gla(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, gk: torch.Tensor, scale: float | None) -> Any:
        # fla's naive GLA fixes the scale at Dk^-1/2: another scale goes onto q.
        factor = 1.0 if scale is None else scale / q.shape[-1] ** -0.5
        return naive("gla", "naive_recurrent_gla")(q * factor, k, v, gk)

    def chunk_gla(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        g: Tensor,
        scale: float | None = None,
        initial_state: Any = None,
        output_final_state: bool = False,
        state_v_first: bool = False,
        cu_seqlens: Any = None,
        cu_seqlens_cpu: Any = None,
    ) -> Any:
        self._note("chunk_gla", q=q, g=g, scale=scale)
        assert q.shape == k.shape == g.shape, "q, k, g must have the same shape."
        return self._gla(q, k, v, g, scale)

    def fused_recurrent_gla(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        gk: Any = None,
        gv: Any = None,
        scale: float | None = None,
        initial_state: Any = None,
        output_final_state: bool = False,
        reverse: bool = False,
        state_v_first: bool = False,
        cu_seqlens: Any = None,
        **kwargs: Any,
    ) -> Any:
        self._note("fused_recurrent_gla", q=q, gk=gk, scale=scale)
        return self._gla(q, k, v, gk, scale)

    def _delta(self, q: Tensor, k: Tensor, v: Tensor, beta: Tensor, scale: float | None, norm: bool) -> Any:
        q, k = _l2(q, k, norm)
        factor = 1.0 if scale is None else scale / q.shape[-1] ** -0.5
        heads_first = (t.transpose(1, 2) for t in (q * factor, k, v, beta))
        out, _ = naive("delta_rule", "delta_rule_recurrence")(*heads_first)
        return out.transpose(1, 2), None

    def chunk_delta_rule(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        beta: Tensor,
        scale: float | None = None,
        initial_state: Any = None,
        output_final_state: bool = False,
        use_qk_l2norm_in_kernel: bool = False,
        cu_seqlens: Any = None,
        cu_seqlens_cpu: Any = None,
        **kwargs: Any,
    ) -> Any:
        self._note("chunk_delta_rule", q=q, beta=beta, scale=scale, norm=use_qk_l2norm_in_kernel)
        assert q.dtype != torch.float32, "ChunkDeltaRuleFunction does not support float32. Please use bfloat16."
        return self._delta(q, k, v, beta, scale, use_qk_l2norm_in_kernel)

    def fused_recurrent_delta_rule(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        beta: Any = None,
        scale: float | None = None,
        initial_state: Any = None,
        output_final_state: bool = False,
        use_qk_l2norm_in_kernel: bool = False,
        cu_seqlens: Any = None,
    ) -> Any:
        self._note("fused_recurrent_delta_rule", q=q, beta=beta, scale=scale, norm=use_qk_l2norm_in_kernel)
        return self._delta(q, k, v, beta, scale, use_qk_l2norm_in_kernel)

    def chunk_gated_delta_rule(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        g: Tensor,
        beta: Tensor,
        scale: float | None = None,
        initial_state: Any = None,
        output_final_state: bool = False,
        use_qk_l2norm_in_kernel: bool = False,
        use_beta_sigmoid_in_kernel: bool = False,
        allow_neg_eigval: bool = False,
        state_v_first: bool = False,
        cu_seqlens: Any = None,
        cu_seqlens_cpu: Any = None,
        chunk_indices: Any = None,
        cp_context: Any = None,
        **kwargs: Any,
    ) -> Any:
        self._note("chunk_gated_delta_rule", q=q, v=v, g=g, beta=beta, scale=scale, norm=use_qk_l2norm_in_kernel)
        q, k = _value_heads(*_l2(q, k, use_qk_l2norm_in_kernel), v)
        return naive("gated_delta_rule", "naive_recurrent_gated_delta_rule")(q, k, v, beta, g, scale=scale)

    def fused_recurrent_gated_delta_rule(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        g: Any = None,
        gk: Any = None,
        gv: Any = None,
        beta: Any = None,
        scale: float | None = None,
        initial_state: Any = None,
        output_final_state: bool = False,
        use_qk_l2norm_in_kernel: bool = False,
        use_gate_in_kernel: bool = False,
        A_log: Any = None,
        dt_bias: Any = None,
        use_beta_sigmoid_in_kernel: bool = False,
        allow_neg_eigval: bool = False,
        state_v_first: bool = False,
        cu_seqlens: Any = None,
        **kwargs: Any,
    ) -> Any:
        self._note(
            "fused_recurrent_gated_delta_rule", q=q, v=v, g=g, beta=beta, scale=scale, norm=use_qk_l2norm_in_kernel
        )
        q, k = _value_heads(*_l2(q, k, use_qk_l2norm_in_kernel), v)
        out, _ = naive("gated_delta_rule", "naive_recurrent_gated_delta_rule")(q, k, v, beta, g, scale=scale)
        return out.detach(), None  # fla has no backward for it

    def chunk_kda(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        g: Tensor,
        beta: Tensor,
        scale: float | None = None,
        initial_state: Any = None,
        output_final_state: bool = False,
        use_qk_l2norm_in_kernel: bool = False,
        use_gate_in_kernel: bool = False,
        use_beta_sigmoid_in_kernel: bool = False,
        allow_neg_eigval: bool = False,
        safe_gate: bool = False,
        lower_bound: float | None = None,
        disable_recompute: bool = False,
        return_intermediate_states: bool = False,
        state_v_first: bool = False,
        cu_seqlens: Any = None,
        cu_seqlens_cpu: Any = None,
        cp_context: Any = None,
        use_graph: bool = False,
        max_num_seqs: int | None = None,
        **kwargs: Any,
    ) -> Any:
        computed = not (use_gate_in_kernel or use_beta_sigmoid_in_kernel)
        return self._kda("chunk_kda", q, k, v, g, beta, scale, use_qk_l2norm_in_kernel, computed)

    def fused_recurrent_kda(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        g: Tensor,
        beta: Tensor,
        A_log: Any = None,
        dt_bias: Any = None,
        scale: float | None = None,
        initial_state: Any = None,
        output_final_state: bool = False,
        use_qk_l2norm_in_kernel: bool = False,
        use_gate_in_kernel: bool = False,
        use_beta_sigmoid_in_kernel: bool = False,
        allow_neg_eigval: bool = False,
        lower_bound: float | None = None,
        state_v_first: bool = False,
        cu_seqlens: Any = None,
        **kwargs: Any,
    ) -> Any:
        computed = not (use_gate_in_kernel or use_beta_sigmoid_in_kernel)
        out, _ = self._kda("fused_recurrent_kda", q, k, v, g, beta, scale, use_qk_l2norm_in_kernel, computed)
        return out.detach(), None  # fla has no backward for it

    def _kda(
        self,
        name: str,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        g: Tensor,
        beta: Tensor,
        scale: Any,
        norm: bool,
        computed: bool,
    ) -> Any:
        """Both kda kernels' stand-in: the call noted, then fla's naive_recurrent_kda."""
        self._note(name, q=q, g=g, beta=beta, scale=scale, norm=norm)
        assert computed, "linbench passes the gate and β computed"
        q, k = _l2(q, k, norm)
        return naive("kda", "naive_recurrent_kda")(q, k, v, g, beta, scale=scale)

    def chunk_gdn2(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        g: Tensor,
        b: Tensor,
        w: Tensor,
        scale: float | None = None,
        initial_state: Any = None,
        output_final_state: bool = False,
        use_qk_l2norm_in_kernel: bool = False,
        use_gate_in_kernel: bool = False,
        cu_seqlens: Any = None,
        **kwargs: Any,
    ) -> Any:
        assert q.shape == k.shape == g.shape == b.shape and w.shape == v.shape, "chunk_gdn2 takes no value heads"
        assert not use_gate_in_kernel, "linbench passes the gate computed"
        self._note("chunk_gdn2", q=q, g=g, b=b, w=w, scale=scale, norm=use_qk_l2norm_in_kernel)
        return self._gdn2(q, k, v, g, b, w, scale, use_qk_l2norm_in_kernel)

    def fused_recurrent_gdn2(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        g: Tensor,
        b: Tensor,
        w: Tensor,
        A_log: Any = None,
        dt_bias: Any = None,
        scale: float | None = None,
        initial_state: Any = None,
        output_final_state: bool = False,
        use_qk_l2norm_in_kernel: bool = False,
        use_gate_in_kernel: bool = False,
        cu_seqlens: Any = None,
        **kwargs: Any,
    ) -> Any:
        assert not use_gate_in_kernel, "linbench passes the gate computed"
        self._note("fused_recurrent_gdn2", q=q, g=g, b=b, w=w, scale=scale, norm=use_qk_l2norm_in_kernel)
        q, k = _value_heads(q, k, v)  # value heads native: q and k (B, T, H, K), the rest HV
        out, _ = self._gdn2(q, k, v, g, b, w, scale, use_qk_l2norm_in_kernel)
        return out.detach(), None  # inference only: fla has no backward for it

    def _gdn2(self, q: Tensor, k: Tensor, v: Tensor, g: Tensor, b: Tensor, w: Tensor, scale: Any, norm: bool) -> Any:
        """Both gdn2 kernels' stand-in: fla's naive_recurrent_gdn2."""
        q, k = _l2(q, k, norm)
        return naive("gdn2", "naive_recurrent_gdn2")(q, k, v, g, b, w, scale=scale)

    def chunk_rwkv7(
        self,
        r: Tensor,
        w: Tensor,
        k: Tensor,
        v: Tensor,
        a: Tensor,
        b: Tensor,
        scale: float = 1.0,
        initial_state: Any = None,
        output_final_state: bool = False,
        cu_seqlens: Any = None,
        **kwargs: Any,
    ) -> Any:
        self._note("chunk_rwkv7", q=r, w=w, a=a, b=b, scale=scale)
        return self._rwkv7(r, w, k, v, a, b, scale)

    def fused_recurrent_rwkv7(
        self,
        r: Tensor,
        w: Tensor,
        k: Tensor,
        v: Tensor,
        a: Tensor,
        b: Tensor,
        scale: float | None = None,
        initial_state: Any = None,
        output_final_state: bool = True,
        cu_seqlens: Any = None,
    ) -> Any:
        self._note("fused_recurrent_rwkv7", q=r, w=w, a=a, b=b, scale=scale)
        out, _ = self._rwkv7(r, w, k, v, a, b, r.shape[-1] ** -0.5 if scale is None else scale)
        return out.detach(), None  # inference only: its backward raises

    def _rwkv7(self, r: Tensor, w: Tensor, k: Tensor, v: Tensor, a: Tensor, b: Tensor, scale: float) -> Any:
        """fla's dplr_recurrence, which fixes q's factor at Dk^-1/2: r handed over times
        scale·Dk^1/2, so that the reference reads r·scale, as the kernels do."""
        heads_first = (x.transpose(1, 2) for x in (r * scale * r.shape[-1] ** 0.5, k, v, a, b, w))
        out, _ = naive("generalized_delta_rule/dplr", "dplr_recurrence")(*heads_first)
        return out.transpose(1, 2), None

    def lookup(self, module: str, name: str) -> Callable[..., Any]:
        """``fla_kernel``'s stand-in: fla.ops.<module>.<name>."""
        modules = {
            "retention": ("chunk_retention", "fused_recurrent_retention"),
            "lightning_attn": ("chunk_lightning_attn", "fused_recurrent_lightning_attn"),
            "simple_gla": ("chunk_simple_gla", "fused_recurrent_simple_gla"),
            "gla": ("chunk_gla", "fused_recurrent_gla"),
            "delta_rule": ("chunk_delta_rule", "fused_recurrent_delta_rule"),
            "gated_delta_rule": ("chunk_gated_delta_rule", "fused_recurrent_gated_delta_rule"),
            "kda": ("chunk_kda", "fused_recurrent_kda"),
            "gdn2": ("chunk_gdn2", "fused_recurrent_gdn2"),
            "rwkv7": ("chunk_rwkv7", "fused_recurrent_rwkv7"),
        }
        assert name in modules[module], f"fla.ops.{module} has no {name}"
        return getattr(self, name)
