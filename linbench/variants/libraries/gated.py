"""The gated families' library impls, one ``Contract`` row each (contract.py says what the words
mean), with the lines of the library's source each fact was read from, and the few lines that
hand a call's Args to the library's function."""

from __future__ import annotations

import sys
from typing import Any

import torch
import torch.nn.functional as F

from linbench.errors import ImplUnavailableError
from linbench.variants.backends import note_backend
from linbench.variants.gated.gates import lightning_log_decay
from linbench.variants.libraries.contract import Args, Contract

FLASHINFER = "0.7.2.post1"
CUDNN = "1.32.0"


def _flashinfer_kda_prefill(fn: Any, a: Args) -> torch.Tensor:
    held = a.held
    out, _ = fn(
        a.q, a.k, a.v, a.g, a.beta, A_log=held["A_log"], dt_bias=held["dt_bias"], scale=a.scale,
        cu_seqlens=a.cu_seqlens, use_qk_l2norm_in_kernel=True, use_gate_in_kernel=True,
        lower_bound=held["lower_bound"], beta_is_logit=True, backend="auto",
    )  # fmt: skip
    return out


def _flashinfer_kda_recurrent(fn: Any, a: Args) -> torch.Tensor:
    state = a.held["state"].zero_()  # each sequence from zero; the kernel writes its final state here
    out, _ = fn(
        a.q, a.k, a.v, a.g, a.beta, scale=a.scale, initial_state=state, cu_seqlens=a.cu_seqlens,
        use_qk_l2norm_in_kernel=True, use_gate_in_kernel=False, beta_is_logit=False, backend="auto",
    )  # fmt: skip
    return out


def _zero_state(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, segments: Any, **params: Any) -> dict[str, Any]:
    """The state FlashInfer's recurrent kernel would make itself, (N, HV, V, K) bf16, made once:
    without one it reads the largest state index on the host in every call (recurrent_kda.py:2243)."""
    sequences = segments.count if segments is not None else q.shape[0]
    return {"state": v.new_zeros(sequences, v.shape[1], v.shape[-1], q.shape[-1], dtype=torch.bfloat16)}


def _flash_kda(fn: Any, a: Args) -> torch.Tensor:
    out = torch.empty_like(a.v)  # written in place by the kernel
    held = a.held
    fn(
        a.q, a.k, a.v, a.g, a.beta, a.scale, out, A_log=held["A_log"], dt_bias=held["dt_bias"],
        lower_bound=held["lower_bound"], cu_seqlens=a.cu_seqlens,
    )  # fmt: skip
    return out


def _cudnn_kda(fn: Any, a: Args) -> torch.Tensor:
    q, k, beta, in_kernel = a.q, a.k, a.beta, True
    if a.grad and a.arch is not None and a.arch[0] == 9:
        # SM90's one backward engine takes pre-normalised q/k, fp32 β and equal head counts
        # (hopper/cuda_engine.py:433, :469, :487) and bakes in the scale 1/√128 (:455).
        if abs(a.scale - q.shape[-1] ** -0.5) > 1e-9:
            raise ImplUnavailableError("kda:cudnn: cuDNN's SM90 backward kernel bakes in the scale Dk^-1/2")
        group = a.v.shape[1] // q.shape[1]
        q, k = (F.normalize(x.float(), dim=-1).to(x.dtype).repeat_interleave(group, dim=1) for x in (q, k))
        beta, in_kernel = beta.float(), False
    out, _ = fn(q, k, a.v, a.g, beta, a.cu_seqlens, scale=a.scale, use_qk_l2norm_in_kernel=in_kernel, gate_domain="log")
    engines = _cudnn_engines(fn, a.grad)
    if engines:  # the engine cuDNN chose, not the one the row expects: a declined one falls through
        note_backend(f"nvidia-cudnn-frontend {engines} engine")
    return out


def _cudnn_engines(fn: Any, grad: bool) -> str | None:
    """The engines cuDNN chose for this process's KDA graphs ('a+b' where they differ), read from
    its own graph caches (ops/kda.py fprop_cache, bprop_cache; Python state, no device read);
    None where they cannot be read. cuDNN walks its ranked engines and takes the first that does
    not decline, so on SM90 without NVRTC and a CUDA include tree kda_hopper_cuda falls through."""
    module = sys.modules.get(getattr(fn, "__module__", "") or "")
    caches = [getattr(module, name, None) for name in ("fprop_cache", *(("bprop_cache",) if grad else ()))]
    graphs = [entry[0] for cache in caches if isinstance(cache, dict) for entry in cache.values()]
    names = {getattr(getattr(graph, "selected_engine", None), "name", None) for graph in graphs}
    return "+".join(sorted(name for name in names if isinstance(name, str))) or None


def _cula_kda(fn: Any, a: Args) -> torch.Tensor:
    out, _ = fn(
        a.q, a.k, a.v, a.g, a.beta, scale=a.scale, cu_seqlens=a.cu_seqlens,
        cu_seqlens_cpu=a.held.get("cu_seqlens_cpu"), use_qk_l2norm_in_kernel=True, use_gate_in_kernel=False,
        safe_gate=True,
    )  # fmt: skip
    return out


def _host_bounds(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, segments: Any, **params: Any) -> dict[str, Any]:
    """A pack's cu_seqlens on the host too, made once: fla's prepare_chunk_indices, which cuLA's
    chunk_kda calls, reads the device copy on the host in every call without it."""
    return {} if segments is None else {"cu_seqlens_cpu": segments.cu_seqlens("cpu", torch.int32)}


def _cula_lightning(fn: Any, a: Args) -> torch.Tensor:
    bounds = () if a.cu_seqlens is None else (a.cu_seqlens,)
    out, _ = fn(a.q, a.k, a.v, a.held["rates"], *bounds, scale=a.scale)
    return out


def _lightning_rates(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, segments: Any, **params: Any) -> dict[str, Any]:
    """cuLA's ``decay``, the per-head rate s_h ≥ 0 with per-token decay e^{−s_h}: −λ_h, fp32."""
    like = torch.empty(0, dtype=torch.float32, device=q.device)
    return {"rates": -lightning_log_decay(params["layer"], params["layers"], v.shape[1], like)}


def _flash_qla(fn: Any, a: Args) -> torch.Tensor:
    out, _ = fn(
        q=a.q, k=a.k, v=a.v, g=a.g, beta=a.beta, scale=a.scale, use_qk_l2norm_in_kernel=True,
        cu_seqlens=a.cu_seqlens,
    )  # fmt: skip
    return out


def _gdn_prefill(fn: Any, a: Args, **extra: Any) -> torch.Tensor:
    """FlashInfer's Gated DeltaNet prefill, its own or cuDNN's (which takes no max_seqlen)."""
    out: torch.Tensor = fn(
        a.q, a.k, a.v, g=a.g, beta=a.beta, scale=a.scale, cu_seqlens=a.cu_seqlens, use_qk_l2norm_in_kernel=True,
        **extra,
    )  # fmt: skip
    return out


def _flashinfer_gdn(fn: Any, a: Args) -> torch.Tensor:
    """FlashInfer's prefill, told the longest sequence: its context-parallel kernels (which it
    picks where B·H leaves the GPU's multiprocessors idle) size their grids by it, and by every
    token of the batch when not told."""
    return _gdn_prefill(fn, a, max_seqlen=a.max_seqlen)


_FI_KDA = "flashinfer-python 0.7.2.post1 flashinfer/"
KDA_FLASHINFER = Contract(
    "kda", "flashinfer", "flashinfer-python", FLASHINFER,
    (
        _FI_KDA + "kda.py:42-101: recurrent_kda(q, k, v, g, beta, A_log, dt_bias, scale, ..., use_gate_in_kernel,"
        " lower_bound, cu_seqlens, ..., beta_is_logit, ..., backend='auto')",
        _FI_KDA + "kda_prefill.py:654-815: the FlashKDA-compatible prefill needs use_qk_l2norm_in_kernel,"
        " use_gate_in_kernel and beta_is_logit, SM100/SM103, contiguous bf16 k, v, g of q's shape (equal heads), D 128",
        _FI_KDA + "kda_prefill_cute.py:128-146: the CuTe DSL prefill: the same heads rule, D 128",
        _FI_KDA + "kda_prefill.py:59: _FLASH_KDA_SUPPORTED_COMPUTE_CAPABILITIES = {(10, 0), (10, 3)}; none for SM90",
        _FI_KDA + "kda.py:133, :158: lower_bound·sigmoid(exp(A_log)·(g + dt_bias)); A_log [H], dt_bias [H, K] fp32",
    ),
    "flashinfer", "recurrent_kda", _flashinfer_kda_prefill,
    kernels={10: "recurrent_kda prefill (auto: small-BH, CuTe DSL or Cake)", 12: "recurrent_kda SM120 prefill"},
    no_kernel={9: "FlashInfer 0.7.2.post1 has no KDA prefill kernel for SM90 (its prefill routes are SM100/SM103/"
               "SM120); kda:flashinfer-recurrent times its recurrent kernel there"},
    layout="packed", contiguous=True, cu_dtype=torch.int64, gate="lower-bound-logit", beta="logit-bf16",
    value_heads="repeat", gate_floor=-5.0,
    notes=(
        "the log-gate handed as the pre-activation logit(g/−5) with A_log = 0, dt_bias = 0, lower_bound = −5;"
        " no initial state and no prefill workspace are passed, so where `auto` takes the FlashKDA-compatible"
        " route (kda_prefill.py:5746-5821) it never takes its persistent schedules (B·H past the SM count, an initial"
        " state given) and refuses CUDA-graph capture (--cuda-graph keeps the eager time, and says why)"
    ),
)  # fmt: skip

KDA_FLASHINFER_RECURRENT = Contract(
    "kda", "flashinfer-recurrent", "flashinfer-python", FLASHINFER,
    (
        _FI_KDA + "kda.py:885: a call no prefill route takes goes to _dispatch_recurrent_kda_decode",
        _FI_KDA + "kda_kernels/recurrent_kda.py:2284: 'Decode only supports T=1 without cu_seqlens'",
        _FI_KDA + "kda_kernels/recurrent_kda.py:2204: with cu_seqlens, 'Batch size must be 1'",
        _FI_KDA + "kda.py:116-128: v [B, T, HV, V], g [B, T, HV, K] bf16 log-space, beta bf16 post-sigmoid;"
        " 'GQA is applied when HV != H'",
        _FI_KDA + "kda.py:140-143: initial_state [N, HV, V, K], zero when None, updated in place;"
        " kda_kernels/recurrent_kda.py:2242-2245: without one, the largest state index is read on the host",
    ),
    "flashinfer", "recurrent_kda", _flashinfer_kda_recurrent,
    kernels=dict.fromkeys((9, 10, 12), "recurrent_kda's recurrent CuTe DSL kernel (token by token, a decode kernel)"),
    layout="packed", contiguous=True, cu_dtype=torch.int64, gate="log-bf16", beta="bf16", held_extra=_zero_state,
    notes="always a pack with cu_seqlens; the gate rounded to bf16; a zero state made once and zeroed in each call "
    "(a memset, as FlashInfer's own torch.zeros), so no host read of the state indices",
)  # fmt: skip

KDA_FLASH_KDA = Contract(
    "kda", "flash-kda", "flash_kda", "1ce47ea",
    (
        "FlashKDA 1ce47ea flash_kda/__init__.py:5: fwd(q, k, v, g, beta, scale, out, A_log, dt_bias, lower_bound,"
        " initial_state=None, final_state=None, cu_seqlens=None)",
        "flash_kda/__init__.py:12-14: g the gate before activation, beta logits (sigmoid applied inside), bf16",
        "csrc/flash_kda.cpp:46: every tensor contiguous; :100-103: k, v, g, out of q's shape (no GVA)",
        "csrc/flash_kda.cpp:107-108: A_log [H], dt_bias [H, D] fp32; :110: D == 128",
        "csrc/flash_kda.cpp:150, :153: cu_seqlens with B == 1, int64",
    ),
    "flash_kda", "fwd", _flash_kda,
    install="build MoonshotAI/FlashKDA from source: pip install --no-build-isolation .; CUDA 12.9, SM90+",
    kernels={major: "flash_kda fwd (CUTLASS)" for major in (9, 10, 12)},
    layout="bshd", contiguous=True, cu_dtype=torch.int64, gate="lower-bound-logit", beta="logit-bf16",
    value_heads="repeat", gate_floor=-5.0,
    notes="the log-gate handed as the pre-activation logit(g/−5) with A_log = 0, dt_bias = 0, lower_bound = −5",
)  # fmt: skip

_CUDNN_KDA = "nvidia-cudnn-frontend 1.32.0 cudnn/linear_attention/"
KDA_CUDNN = Contract(
    "kda", "cudnn", "nvidia-cudnn-frontend", CUDNN,
    (
        _CUDNN_KDA + "ops/kda.py:1239-1263: kimi_delta_attention(q, k, v, g, beta, cu_seqlens, scale,"
        " ..., use_qk_l2norm_in_kernel, ..., gate_domain='log')",
        _CUDNN_KDA + "ops/kda.py:1266-1271: THD; k [T, HK, K] with HK = H or HV; g [T, HO, K], beta [T, HO]",
        _CUDNN_KDA + "hopper/cuda_engine.py:433: the SM90 backward takes pre-normalised q/k and post-sigmoid beta",
        _CUDNN_KDA + "hopper/cuda_engine.py:469: the SM90 backward needs equal head counts;"
        " :487: its beta fp32; :455: it bakes in the scale 1/sqrt(128); :460: head dims 128",
        _CUDNN_KDA + "hopper/cuda_engine.py:471, hopper/kda_engine.py:239: SM90's engines take bf16 q/k/v only;"
        " frost/engine.py:22-24: FROST is SM100/103/107; cutile/engine.py:16, :44-45: cuTile is an optional"
        " extra needing CUDA 13.3 (fp16 on SM90 finds no engine, or cuTile's)",
    ),
    "cudnn.linear_attention.ops.kda", "kimi_delta_attention", _cudnn_kda,
    kernels={9: "kda_hopper_cuda engine", 10: "FROST engine"},
    layout="thd", gate="log", beta="as-drawn", dtypes=("bf16", "fp16"), dims=(64, 128), arch_dims={9: (128,)},
    arch_dtypes={9: ("bf16",)},
    backward=(9, 10),
    notes="SM90 backward: q and k L2-normalised in PyTorch, repeated to v's heads, β in fp32, in the call; "
    "the backend column names the engine cuDNN chose, read from its graph cache: on SM90 kda_hopper_cuda "
    "needs NVRTC and a CUDA include tree (cake/compiler.py cuda_include_dirs), else cuDNN falls through "
    "to kda_hopper (CuTe DSL) or cuTile, or finds no engine",
)  # fmt: skip

KDA_CULA = Contract(
    "kda", "cula", "cuda-linear-attention", "fa742a2",
    (
        "cuLA fa742a2 cula/kda/__init__.py:15-16: chunk_kda, and kda_prefill_hopper = cula_kda_prefill",
        "cula/kda/hopper_fused_fwd.py:195: 'Only support safe_gate=True.'; :52: equal heads for q, k, v",
        "cula/kda/hopper_fused_fwd.py:223-225: q, k, v bf16; beta bf16 or fp32; head dim 128",
        "cula/kda/hopper_fused_fwd.py:130: 'Backward pass is not implemented yet.'",
        "cula/kda/chunk.py:218-237: chunk_kda(q, k, v, g, beta, scale, ..., use_qk_l2norm_in_kernel,"
        " use_gate_in_kernel, cu_seqlens, cu_seqlens_cpu, ..., safe_gate, lower_bound); g in log space",
        "cula/kda/chunk.py:63: prepare_chunk_indices(cu_seqlens, chunk_size, cu_seqlens_cpu=cu_seqlens_cpu)",
    ),
    "cula.kda", "chunk_kda", _cula_kda,
    install="pip install cuda-linear-attention; a Hopper or Blackwell GPU",
    entries={9: "kda_prefill_hopper"},
    kernels={9: "kda_prefill_hopper (fused forward)", 10: "chunk_kda (backward through fla's)"},
    layout="bshd", gate="log", beta="as-drawn", value_heads="repeat", backward=(10,), gate_floor=-5.0,
    held_extra=_host_bounds, notes="safe_gate=True: the kernels assume g ∈ [−5, 0); a pack's bounds on the host too",
)  # fmt: skip

LIGHTNING_CULA = Contract(
    "lightning", "cula", "cuda-linear-attention", "fa742a2",
    (
        "cuLA fa742a2 cula/lightning: lightning_attn_fwd(Q, K, V, decay, scale=1.0, ...) -> (O, ht);"
        " lightning_attn_fwd_varlen(Q, K, V, decay, cu_seqlens, scale=1.0, ...)",
        "benchmarks/bench_lightning_attn.py:90, :160: decay is the rate s_h, per-token decay exp(-s_h)",
    ),
    "cula.lightning", "lightning_attn_fwd", _cula_lightning,
    install="pip install cuda-linear-attention; a Blackwell GPU",
    packed_entry="lightning_attn_fwd_varlen",
    kernels={10: "lightning_attn_fwd (CuTe DSL)"},
    layout="bshd", contiguous=True, value_heads="repeat", held_extra=_lightning_rates,
    scale_default="1.0 when not given: linbench's scale is always passed",
)  # fmt: skip

_QLA = "flash-qla 0.1.3 flash_qla/ops/gated_delta_rule/chunk/__init__.py:"
GDN_FLASH_QLA = Contract(
    "gated-deltanet", "flash-qla", "flash-qla", "0.1.3",
    (
        _QLA + "314-331: chunk_gated_delta_rule(q, k, v, g, beta, scale, ..., use_qk_l2norm_in_kernel,"
        " cu_seqlens, ..., auto_cp=True, ...)",
        _QLA + "338-345: v [B, T, HV, V], GVA if HV > H; g [B, T, HV] in log space; beta [B, T, HV]",
        _QLA + "38-58: auto_cp (default True) plans intra-card CP for a batch of one; cp/context.py:348-387,"
        " :294: the plan is read on the host and cached by the cu_seqlens tensor (utils/index.py tensor_cache),"
        " so the runner's untimed first call makes it; cp/autocp/decision.py decide, SM90's coefficients,"
        " 132 SMs, H16: CP forward from 8k tokens, in training from 1k",
        _QLA + "416-418: q, k, v of one dtype, bf16 or fp16",
        _QLA + "14-30: SM90, SM100/SM103, SM120/SM121 only (chosen on import)",
    ),
    "flash_qla", "chunk_gated_delta_rule", _flash_qla,
    install="pip install flash-qla; a Hopper or Blackwell GPU and tilelang",
    kernels={9: "hopper fused_gdr_fwd (TileLang, auto_cp)", 10: "blackwell fused_gdr_fwd (TileLang, auto_cp)",
             12: "blackwell_sm120 fused_gdr_fwd (TileLang, auto_cp)"},
    layout="bshd", cu_dtype=torch.int64, gate="log", beta="as-drawn", dtypes=("bf16", "fp16"), backward=(9, 10, 12),
    notes="auto_cp left at FlashQLA's default: its intra-card context parallelism, planned in the first call",
)  # fmt: skip

_FI_GDN = "flashinfer-python 0.7.2.post1 flashinfer/"
GDN_FLASHINFER = Contract(
    "gated-deltanet", "flashinfer", "flashinfer-python", FLASHINFER,
    (
        _FI_GDN + "gdn_prefill.py:617-637: chunk_gated_delta_rule(q, k, v, g, beta, scale, ..., cu_seqlens,"
        " use_qk_l2norm_in_kernel, ...); q, k, v [T, H, D] packed; cu_seqlens required",
        _FI_GDN + "gdn_kernels/delta_rule_dsl/alpha.py: g is the forget gate in linear space, alpha = exp(log g)",
        _FI_GDN + "gdn_kernels/delta_rule_dsl/delta_rule_sm90.py:2416: 'DSL kernel only supports D=128'",
        _FI_GDN + "gdn_kernels/delta_rule_dsl/delta_rule_sm90.py:2434-2437: alpha and beta fp32;"
        " :2475, :2482: q, k, v, o, alpha, beta contiguous",
        _FI_GDN + "gdn_prefill.py:1171: SM100 'requires head_size=128'; GVA: num_v_heads > num_q_heads",
        _FI_GDN + "gdn_prefill.py:760-766, :839, :953-961: max_seqlen bounds the CP kernels' grids (all the"
        " batch's tokens when omitted); CP where should_use_cp_host finds B·H too few for the SMs",
    ),
    "flashinfer", "chunk_gated_delta_rule", _flashinfer_gdn,
    kernels={9: "SM90 CuTe DSL prefill", 10: "SM100 CuTe DSL prefill", 12: "SM120 CuTe DSL prefill"},
    layout="thd", contiguous=True, gate="linear", beta="fp32", dtypes=("bf16", "fp16"),
    notes="max_seqlen: the longest sequence (S, or a pack's longest), for the context-parallel kernels' grids",
)  # fmt: skip

GDN_CUDNN = Contract(
    "gated-deltanet", "cudnn", "flashinfer-python", FLASHINFER,
    (
        _FI_GDN + "cudnn/linear_attention.py:355-367: cudnn_chunk_gated_delta_rule, the arguments of"
        " chunk_gated_delta_rule; cuDNN's fused SM100 engine",
    ),
    "flashinfer.cudnn", "cudnn_chunk_gated_delta_rule", _gdn_prefill,
    also_needs=("nvidia-cudnn-frontend",),
    kernels={10: "cuDNN's FROST engine through FlashInfer"},
    layout="thd", contiguous=True, gate="linear", beta="fp32", dtypes=("bf16", "fp16"),
)  # fmt: skip

ROWS = {
    "gated-deltanet": (GDN_FLASH_QLA, GDN_FLASHINFER, GDN_CUDNN),
    "kda": (KDA_FLASH_KDA, KDA_FLASHINFER, KDA_FLASHINFER_RECURRENT, KDA_CUDNN, KDA_CULA),
    "lightning": (LIGHTNING_CULA,),
}
