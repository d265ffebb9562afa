"""Is an impl right? Compare it with its variant's reference, outputs and every gradient.

The reference always runs in fp64 on the same inputs, so an fp32 or bf16 impl is judged
against the true answer rather than against another rounding of it. Used by the tests,
by `linbench check`, and (later) by the runner before it times anything. The rules a
result is judged by (tolerances per dtype) are linbench/check/closeness.py's; an fp32 check of
a Triton library's kernels on an sm_80+ GPU is judged by its TF32 tolerance (``tf32_dots``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import torch

from linbench.check.closeness import Closeness, compare, rms
from linbench.errors import ImplUnavailableError
from linbench.oom import is_out_of_memory
from linbench.shape import Shape
from linbench.variants.extra_inputs import DrawSettings, draw_extra_inputs, split_draw_settings
from linbench.variants.feature_forms.triton_interpreter import TRITON_LIBRARIES
from linbench.variants.heads import expand_heads
from linbench.variants.variant import Variant


@dataclass
class CaseResult:
    """One impl at one shape, dtype and masking, against the reference."""

    variant: str
    impl: str
    shape: Shape
    causal: bool
    dtype: torch.dtype
    comparisons: list[Closeness] = field(default_factory=list)
    error: str | None = None  # the impl raised instead of returning
    reference_failed: bool = False  # ... or the reference did, so there was nothing to judge against
    out_of_memory: bool = False  # ... and what it raised was an allocation failure
    unavailable: str | None = None  # the impl cannot run here (and why): not judged at all
    setting: str = ""  # the parameters or draw settings checked at, when not the defaults ("gate_regime=strong")
    tf32: bool = False  # an fp32 case judged by the TF32 tolerance (tf32_dots)

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.comparisons) and all(c.ok for c in self.comparisons)

    @property
    def rel_error(self) -> float:
        """The largest relative error over the output and gradients (nan when nothing was compared)."""
        return max((c.rel_error for c in self.comparisons), default=math.nan)

    @property
    def worst(self) -> Closeness | None:
        return max(self.comparisons, key=lambda c: c.ratio, default=None)

    def describe(self) -> str:
        where = f"{self.variant}:{self.impl} {self.shape.label} {'causal' if self.causal else 'bidirectional'} "
        where += str(self.dtype).removeprefix("torch.") + (" (TF32 dots)" if self.tf32 else "")
        where += f" {self.setting}" if self.setting else ""
        if self.unavailable:
            return f"{where}: unavailable: {self.unavailable}"
        if self.error:
            return f"{where}: {'' if self.reference_failed else 'raised '}{self.error}"
        return f"{where}: {', '.join(c.describe() for c in self.comparisons)}"


# Triton compiles an fp32 tl.dot with TF32 operands on NVIDIA GPUs from compute capability 8.0
# (its NVIDIA backend's default_dot_input_precision is "tf32": triton 3.9.0
# backends/nvidia/compiler.py:139), and fla-core asks for IEEE dots only where TF32 is missing
# (fla-core 0.6.0 fla/utils/hardware.py:111 and 129-132: TRITON_F32_DEFAULT=ieee when the major
# capability is below 8). So an fp32 check of such kernels is judged by the TF32 tolerance; the
# kernel judged is the one timed, compiled as it is timed, never an IEEE build of it.
TF32_MIN_MAJOR = 8


def tf32_dots(library: str | None, dtype: torch.dtype, device: torch.device | str) -> bool:
    """Whether an fp32 check of an impl (or decoder) of ``library`` on ``device`` is judged by
    the TF32 tolerance: its kernels are Triton's and the device is a CUDA GPU with TF32."""
    device = torch.device(device)
    if dtype != torch.float32 or library not in TRITON_LIBRARIES or device.type != "cuda":
        return False
    return torch.cuda.get_device_capability(device)[0] >= TF32_MIN_MAJOR


def make_inputs(
    variant: Variant,
    shape: Shape,
    device: torch.device | str,
    seed: int = 0,
    scale: float = 1.0,
    settings: DrawSettings | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
    """fp64 q, k, v (Gaussian noise times ``scale``), and the keyword inputs: the variant's
    learnable parameters and its extra inputs;
    k and v have ``shape.kv_heads`` heads (v ``shape.v_heads`` under GVA, and the extra
    inputs are per value head).

    Learnable parameters (cosine's norm_const: ``Param.learnable``) are given as per-head
    tensors so that their gradients are checked too. Extra inputs (a gated variant's gates,
    β) are drawn as a workload draws them, in ``settings``' regime, and in fp64.
    """
    gen = torch.Generator(device="cpu").manual_seed(seed)

    def draw(*size: int) -> torch.Tensor:
        return (torch.randn(*size, generator=gen, dtype=torch.float64) * scale).to(device)

    q = draw(shape.batch, shape.heads, shape.seq, shape.dim_k)
    k = draw(shape.batch, shape.kv_heads, shape.seq, shape.dim_k)
    v = draw(shape.batch, shape.v_tensor_heads, shape.seq, shape.dim_v)
    # One per value head (mamba2's A_log, dt_bias, D under GVA); v_heads is heads otherwise.
    keywords = {p.name: p.learnable(shape.v_heads, gen).to(device) for p in variant.param_specs if p.learnable}
    if variant.extra_inputs:
        sizes = (shape.batch, shape.v_heads, shape.seq, shape.dim_k)
        keywords |= draw_extra_inputs(
            variant.extra_inputs,
            sizes,
            generator=gen,
            device=device,
            dtype=torch.float64,
            settings=settings,
            dim_v=shape.dim_v,
        )
    return q, k, v, keywords


def keyword_dtype(variant: Variant, name: str, dtype: torch.dtype) -> torch.dtype:
    """The dtype a keyword input comes in when q is ``dtype``: an extra input's by its rule
    (gates stay fp32 for 16-bit q), a learnable parameter's ``dtype``."""
    rules = {extra.name: extra for extra in variant.extra_inputs}
    return rules[name].dtype_for(dtype) if name in rules else dtype


def _differentiable(variant: Variant, name: str) -> bool:
    """Whether gradients reach a keyword input: a learnable parameter, or a differentiable extra input."""
    return all(extra.differentiable for extra in variant.extra_inputs if extra.name == name)


def _forward_backward(
    variant: Variant,
    impl: str,
    inputs: tuple[torch.Tensor, ...],
    keywords: dict[str, torch.Tensor],
    cotangent: torch.Tensor,
    dtype: torch.dtype,
    causal: bool,
    params: dict[str, Any],
    gradients: bool,
    expand: bool = False,
) -> dict[str, torch.Tensor]:
    """Output and, when asked, gradients of <out, cotangent> for q, k, v and each keyword input
    gradients reach (learnable parameters, gates, β). ``expand``: k and v are repeated to q's heads
    inside the graph (what grouped-query attention means), or q and k to v's under GVA, so that
    the reference never runs a grouped form of its own."""
    from linbench.api import attention

    q, k, v = (t.detach().to(dtype).requires_grad_(gradients) for t in inputs)
    given = {
        name: t.detach()
        .to(keyword_dtype(variant, name, dtype))
        .requires_grad_(gradients and _differentiable(variant, name))
        for name, t in keywords.items()
    }
    with torch.set_grad_enabled(gradients):
        one_q, one_k, one_v = _ungrouped(q, k, v) if expand else (q, k, v)
        out = attention(one_q, one_k, one_v, variant=variant.name, impl=impl, causal=causal, **params, **given)
    if not gradients or out.shape != cotangent.shape:  # a wrong shape fails on the output alone
        return {"out": out}
    learn = {name: t for name, t in given.items() if t.requires_grad}
    grads = torch.autograd.grad((out.to(torch.float64) * cotangent).sum(), [q, k, v, *learn.values()])
    names = ["grad q", "grad k", "grad v", *(f"grad {n}" for n in learn)]
    return {"out": out, **dict(zip(names, grads, strict=True))}


class _ReferenceCache:
    """The fp64 reference's outputs and gradients of the last few checks, by everything they
    depend on: the impls of one variant at one shape share one reference computation (a
    worker that checks several impls computes it once). A handful only: they are B·H·S·D
    tensors in fp64."""

    def __init__(self, size: int = 4) -> None:
        self.size = size
        self._items: dict[tuple[Any, ...], dict[str, torch.Tensor]] = {}

    def get(self, key: tuple[Any, ...]) -> dict[str, torch.Tensor] | None:
        found = self._items.pop(key, None)
        if found is not None:
            self._items[key] = found  # most recently used goes last
        return found

    def clear(self) -> None:
        self._items.clear()

    def put(self, key: tuple[Any, ...], value: dict[str, torch.Tensor]) -> None:
        self._items[key] = value
        while len(self._items) > self.size:
            self._items.pop(next(iter(self._items)))


_REFERENCES = _ReferenceCache()
# The fp64 draws of the last checks (inputs, learnable parameters, cotangent): the impls of one
# variant at one shape are checked on the same ones, and drawing them cost as much as checking
# a fast impl.
_DRAWS = _ReferenceCache(size=2)
_LEARNABLE = "learnable:"


def forget_references() -> None:
    """Drop the fp64 references and draws kept for the next checks (a worker about to measure memory)."""
    _REFERENCES.clear()
    _DRAWS.clear()


def _ungrouped(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One q, k and v head per output head: k and v repeated to q's heads (grouped-query), or
    q and k to v's (more value heads, GVA)."""
    if v.shape[1] > k.shape[1]:
        return expand_heads(q, v.shape[1]), expand_heads(k, v.shape[1]), v
    return q, expand_heads(k, q.shape[1]), expand_heads(v, q.shape[1])


def _draws(
    variant: Variant, shape: Shape, device: torch.device | str, seed: int, scale: float, settings: DrawSettings
) -> dict[str, torch.Tensor]:
    """q, k, v, the cotangent and the learnable parameters (``learnable:NAME``) a check of
    ``variant`` at ``shape`` runs on, drawn once for the checks of its impls; each check
    gets copies, so no impl sees what another did to them."""
    key = (variant.name, shape, str(device), seed, scale, settings)
    drawn = _DRAWS.get(key)
    if drawn is None:
        q, k, v, learnable = make_inputs(variant, shape, device, seed, scale, settings)
        gen = torch.Generator(device="cpu").manual_seed(seed + 1)
        size = (shape.batch, shape.v_heads, shape.seq, shape.dim_v)
        cotangent = torch.randn(*size, generator=gen, dtype=torch.float64).to(device)
        drawn = {"q": q, "k": k, "v": v, "cotangent": cotangent}
        drawn |= {_LEARNABLE + name: t for name, t in learnable.items()}
        _DRAWS.put(key, drawn)
    return {name: t.clone() for name, t in drawn.items()}


def check_impl(
    variant: Variant,
    impl: str,
    shape: Shape,
    *,
    causal: bool,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str = "cpu",
    seed: int = 0,
    scale: float = 1.0,
    params: dict[str, Any] | None = None,
    gradients: bool = True,
) -> CaseResult:
    """Run ``impl`` in ``dtype`` and the reference in fp64 on the same inputs; compare.

    ``params`` may hold draw settings (``gate_regime``, ``log_gate``): the extra inputs are
    drawn by them, and the gradients of the differentiable ones are compared too.
    """
    settings, params = split_draw_settings(params or {})
    result = CaseResult(variant.name, impl, shape, causal, dtype, setting=_setting(settings, params))
    drawn = _draws(variant, shape, device, seed, scale, settings)
    q, k, v = drawn["q"], drawn["k"], drawn["v"]
    # A parameter given a value (norm_const=0.3) is checked at that value, not as a learnable tensor.
    learnable = {
        name.removeprefix(_LEARNABLE): t
        for name, t in drawn.items()
        if name.startswith(_LEARNABLE) and name.removeprefix(_LEARNABLE) not in params
    }
    # The gradient reaching the impl's output is in its dtype; give the reference the same one.
    cotangent = drawn["cotangent"].to(dtype).to(torch.float64)
    # Impl-only parameters (chunk_size, backend) mean nothing to the reference.
    ref_params = {key: value for key, value in params.items() if key in variant.params}
    # Both sides see the inputs rounded to ``dtype``: what is judged is the impl's
    # arithmetic, not the rounding of its inputs, which no impl can undo.
    inputs = tuple(t.to(dtype).to(torch.float64) for t in (q, k, v))
    learnable = {name: t.to(keyword_dtype(variant, name, dtype)).to(torch.float64) for name, t in learnable.items()}
    reference_key = (
        variant.name,
        shape,
        causal,
        dtype,
        str(device),
        seed,
        scale,
        gradients,
        settings,
        tuple(sorted(ref_params.items())),
        tuple(sorted(learnable)),
    )
    expected = _REFERENCES.get(reference_key)
    if expected is None:
        try:
            expected = _forward_backward(
                variant,
                variant.reference,
                inputs,
                learnable,
                cotangent,
                torch.float64,
                causal,
                ref_params,
                gradients,
                expand=True,
            )
        except Exception as exc:  # a reference that cannot answer leaves nothing to judge against
            result.error = f"the reference ({variant.name}:{variant.reference}) raised {type(exc).__name__}: {exc}"
            if not causal and variant.masking_reason(True) is None:
                result.error += " (a variant defined only causally declares masking=('causal',))"
            result.reference_failed = True
            return result
        _REFERENCES.put(reference_key, expected)
    try:
        actual = _forward_backward(variant, impl, inputs, learnable, cotangent, dtype, causal, params, gradients)
    except ImplUnavailableError as exc:
        result.unavailable = str(exc)
        return result
    except Exception as exc:  # whatever the impl under test raises is its failure, not the checker's
        result.error = f"{type(exc).__name__}: {exc}"
        result.out_of_memory = is_out_of_memory(exc)
        return result
    floor = max(rms(t) for t in expected.values()) / 100
    # A result of the wrong shape has no gradients to compare: it fails on its output alone.
    compared = [name for name in expected if name in actual]
    result.tf32 = tf32_dots(_library(variant.impls.get(impl)), dtype, device)
    result.comparisons = [compare(n, actual[n], expected[n], dtype, floor, result.tf32) for n in compared]
    return result


def check_decoder(
    variant: Variant,
    decoder: str,
    shape: Shape,
    *,
    steps: int,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str = "cpu",
    seed: int = 0,
    params: dict[str, Any] | None = None,
) -> CaseResult:
    """Prefill ``shape.seq − steps`` tokens with ``decoder`` in ``dtype``, step through the
    last ``steps``, and compare those rows with the fp64 reference over the whole sequence.
    ``params`` (the variant's) are given to both sides; the learnable ones it leaves out are
    drawn per head."""
    from linbench.api import attention
    from linbench.variants.decoding import decode

    settings, given = split_draw_settings(params or {})
    result = CaseResult(variant.name, decoder, shape, True, dtype, setting=_setting(settings, given))
    q, k, v, learnable = make_inputs(variant, shape, device, seed, settings=settings)
    q, k, v = (t.to(dtype).to(torch.float64) for t in (q, k, v))
    learnable = {
        name: t.to(keyword_dtype(variant, name, dtype)).to(torch.float64)
        for name, t in learnable.items()
        if name not in given
    }
    params = variant.length_params(shape.seq, learnable | given)
    q64, k64, v64 = _ungrouped(q, k, v)
    expected = attention(q64, k64, v64, variant=variant.name, impl=variant.reference, causal=True, **params)
    # The decoder's params: the keyword inputs in their dtype, and those given as they are.
    decoder_params: dict[str, Any] = {
        name: t.to(keyword_dtype(variant, name, dtype)) for name, t in learnable.items()
    } | given
    try:
        with torch.no_grad():
            actual, _ = decode(
                variant,
                decoder,
                q.to(dtype),
                k.to(dtype),
                v.to(dtype),
                context=shape.seq - steps,
                **decoder_params,
            )
    except Exception as exc:  # whatever the decoder under test raises is its failure
        result.error = f"{type(exc).__name__}: {exc}"
        result.out_of_memory = is_out_of_memory(exc)
        return result
    result.tf32 = tf32_dots(_library(variant.decoders.get(decoder)), dtype, device)
    result.comparisons = [compare("decoded rows", actual, expected[..., -steps:, :], dtype, tf32=result.tf32)]
    return result


def _library(declared: object) -> str | None:
    """The library an impl or decoder declares (None for one not declared, "auto" say)."""
    return getattr(declared, "library", None)


def _setting(settings: DrawSettings, params: dict[str, Any]) -> str:
    """``gate_regime=strong;gamma=0.5``: what a case was checked at besides the defaults."""
    parts = [settings.describe(), *(f"{name}={value}" for name, value in sorted(params.items()))]
    return ";".join(part for part in parts if part)
