"""The cases a library impl is called with in the contract tests, as ``linbench check`` and a sweep
call it: contiguous (B, H, S, D) tensors (check's drawing) or (B, S, H, D) memory seen as
(B, H, S, D) (a sweep's bshd drawing), a batch of 2, value heads twice the q/k heads, head
size 128 or 64, bf16; and the fp64 reference each output is judged against."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
import torch
from library_layers import no_host_sync
from torch import Tensor

import linbench
from linbench.api import attention_packed
from linbench.variants.varlen import Segments

DIM = 128


@dataclass
class Case:
    """q, k, v and the extra inputs of one call, in bf16 (gates fp32), as the impl gets them."""

    q: Tensor
    k: Tensor
    v: Tensor
    extras: dict[str, Tensor]

    def keywords(self) -> dict[str, Any]:
        return {"causal": True, "scale": None, "initial_state": None, **self.extras}


def case(
    variant: str,
    batch: int = 2,
    heads: int = 1,
    v_heads: int = 2,
    seq: int = 16,
    dim: int = DIM,
    bshd: bool = False,
    seed: int = 0,
) -> Case:
    """One call's inputs; ``bshd``: drawn sequence-major as a sweep draws a bshd impl's."""
    gen = torch.Generator().manual_seed(seed)

    def draw(heads_: int, *tail: int) -> Tensor:
        if bshd:
            return torch.randn(batch, seq, heads_, *tail, generator=gen).transpose(1, 2)
        return torch.randn(batch, heads_, seq, *tail, generator=gen)

    q, k, v = (draw(h, dim).to(torch.bfloat16) for h in (heads, heads, v_heads))
    per_channel = variant == "kda"
    gate = draw(v_heads, dim) if per_channel else draw(v_heads)
    log_gate = torch.nn.functional.logsigmoid(gate) / 4  # above −5: every kernel's floor
    beta = torch.sigmoid(draw(v_heads)).to(torch.bfloat16)
    return Case(q, k, v, {"g": log_gate.float(), "beta": beta})


def reference(variant: str, c: Case, segments: Segments | None = None) -> Tensor:
    """The variant's recurrent form in fp64 on the same (rounded) inputs, q and k repeated to v's
    heads; a pack's sequences each from a zero state."""
    group = c.v.shape[1] // c.q.shape[1]
    q, k = (x.double().repeat_interleave(group, dim=1) for x in (c.q, c.k))
    extras = {name: t.double() for name, t in c.extras.items()}
    if segments is None:
        return linbench.attention(q, k, c.v.double(), variant=variant, impl="recurrent", **extras)
    return attention_packed(q, k, c.v.double(), segments, variant=variant, impl="recurrent", **extras)


def rel_error(out: Tensor, expected: Tensor) -> float:
    return float((out.double() - expected).norm() / expected.norm())


def _timed(variant: str, impl: str, c: Case, segments: Segments | None, warmed: bool) -> Tensor:
    """The impl called as a benchmark's timed call: what its ``hold`` makes made first, untimed,
    then the call, without gradients, where reading a tensor on the host raises. ``warmed``:
    one call before it, untimed and free to read on the host, as the runner's first call on a
    GPU is (it reads the peak memory; the timed calls come after it): what a library plans
    and caches in its first call (FlashQLA's context parallelism) is not in the timed ones."""
    chosen = linbench.get_variant(variant).impl(impl)
    keywords = c.keywords()
    hold = getattr(chosen, "hold", None)
    held = {"held": hold(c.q, c.k, c.v, segments=segments, **keywords)} if hold else {}

    def call() -> Tensor:
        if segments is None:
            return chosen.fn(c.q, c.k, c.v, **keywords, **held)
        assert chosen.packed is not None
        return chosen.packed(c.q, c.k, c.v, segments=segments, **keywords, **held)

    with torch.no_grad():
        if warmed:
            call()
        with pytest.MonkeyPatch.context() as patch, no_host_sync(patch):
            return call()


def run(variant: str, impl: str, c: Case, *, warmed: bool = False) -> Tensor:
    return _timed(variant, impl, c, None, warmed)


def run_packed(variant: str, impl: str, c: Case, segments: Segments, *, warmed: bool = False) -> Tensor:
    return _timed(variant, impl, c, segments, warmed)


# bf16 inputs and a bf16 output against the fp64 reference: a few bf16 roundings of a recurrence.
BF16_TOLERANCE = 2e-2


def gradients(variant: str, impl: str | None, c: Case, cotangent: Tensor) -> list[Tensor]:
    """The gradients of ⟨out, cotangent⟩ for q, k, v, g and β: of the impl's call (q, k, v in
    bf16), or of the fp64 reference (``impl`` None) on the same values."""
    fp64 = impl is None
    leaves = [t.detach().double() if fp64 else t.detach().clone() for t in (c.q, c.k, c.v)]
    extras = {name: (t.detach().double() if fp64 else t.detach().clone()) for name, t in c.extras.items()}
    for t in (*leaves, *extras.values()):
        t.requires_grad_(True)
    q, k, v = leaves
    if fp64:
        group = v.shape[1] // q.shape[1]
        q, k = q.repeat_interleave(group, dim=1), k.repeat_interleave(group, dim=1)
        out = linbench.attention(q, k, v, variant=variant, impl="recurrent", **extras)
    else:
        out = (
            linbench.get_variant(variant).impl(impl).fn(q, k, v, causal=True, scale=None, initial_state=None, **extras)
        )
    return list(torch.autograd.grad((out.double() * cotangent).sum(), [*leaves, *extras.values()]))


def check_at_batch_2_with_value_heads(variant: str, impl: str, monkeypatch: Any) -> Any:
    """``linbench check``'s comparison of ``variant:impl`` (its library stood in, the impl
    available) at batch 2 with twice as many value heads as q/k heads (softmax: half as many
    key/value heads), head size 128, bf16, forward."""
    from linbench.check.correctness import check_impl
    from linbench.shape import Shape
    from linbench.variants.libraries.contract import Contract

    monkeypatch.setattr(Contract, "unavailable", lambda self, device: None)
    shape = Shape(2, 2, 16, DIM, DIM, kv_heads=1) if variant == "softmax" else Shape(2, 1, 16, DIM, DIM, v_heads=2)
    result = check_impl(linbench.get_variant(variant), impl, shape, causal=True, dtype=torch.bfloat16, gradients=False)
    assert result.ok, result.describe()
    return result
