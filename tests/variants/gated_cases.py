"""Inputs, runs and fp64 references for the gated variants' tests (all on CPU).

A case is a variant, a length and a decay regime. Its inputs are drawn once in fp64: q, k, v
from N(0, 1), the extra inputs by their own draws (``ExtraInput.draw``), and for retention a
decay γ, RetNet's schedule (weak) or a per-head tensor of fast decays (strong), so that γ's
gradient is checked too. The reference is the recurrent form in fp64, with the gradients of
<out, w> for a fixed cotangent w with respect to every input.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

import torch

from linbench.variants.gated import gated_variants
from linbench.variants.registry import Variant

VARIANTS: dict[str, Variant] = {variant.name: variant for variant in gated_variants()}
BATCH, HEADS, DIM_K, DIM_V = 2, 2, 8, 6  # Dk ≠ Dv, so a transposed state cannot pass
STRONG_GAMMA = (0.3, 0.7)  # retention's "strong" regime: per-head decays, as a tensor

Leaves = dict[str, torch.Tensor]


@contextmanager
def one_thread() -> Iterator[None]:
    """torch on one thread: these tests run thousands of tiny ops, which a second thread only
    slows down on a shared machine."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def draw_case(name: str, seq: int, regime: str, seed: int = 0) -> Leaves:
    """fp64 inputs of one case: q, k, v, the variant's extra inputs and retention's γ."""
    gen = torch.Generator().manual_seed(seed)
    leaves = {
        "q": torch.randn(BATCH, HEADS, seq, DIM_K, generator=gen, dtype=torch.float64),
        "k": torch.randn(BATCH, HEADS, seq, DIM_K, generator=gen, dtype=torch.float64),
        "v": torch.randn(BATCH, HEADS, seq, DIM_V, generator=gen, dtype=torch.float64),
    }
    for extra in VARIANTS[name].extra_inputs:
        leaves[extra.name] = extra.draw(
            BATCH, HEADS, seq, DIM_K, generator=gen, device="cpu", dtype=torch.float64, regime=regime, dim_v=DIM_V
        )
    if name == "retention" and regime == "strong":
        leaves["gamma"] = torch.tensor(STRONG_GAMMA, dtype=torch.float64)
    return leaves


def cotangent(seq: int) -> torch.Tensor:
    """The fixed w of <out, w>, whose gradients the tests compare."""
    return torch.randn(BATCH, HEADS, seq, DIM_V, generator=torch.Generator().manual_seed(99), dtype=torch.float64)


def _cast(name: str, leaves: Leaves, dtype: torch.dtype) -> Leaves:
    """Leaves in ``dtype`` (extra inputs by their dtype rule), each requiring its gradient."""
    rules = {extra.name: extra for extra in VARIANTS[name].extra_inputs}
    cast = {}
    for key, value in leaves.items():
        want = rules[key].dtype_for(dtype) if key in rules else dtype
        cast[key] = value.detach().to(want).requires_grad_()
    return cast


def rounded(name: str, leaves: Leaves, dtype: torch.dtype) -> Leaves:
    """The leaves as a run in ``dtype`` sees them, back in fp64: the inputs of its exact answer."""
    return {key: value.detach().double() for key, value in _cast(name, leaves, dtype).items()}


def run(
    name: str, impl: str, leaves: Leaves, dtype: torch.dtype, **params: object
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """``impl``'s output in fp64 and the fp64 gradients of <out, w> for every leaf."""
    variant = VARIANTS[name]
    cast = _cast(name, leaves, dtype)
    q, k, v = cast.pop("q"), cast.pop("k"), cast.pop("v")
    chosen = variant.impl(impl)
    out = chosen.fn(q, k, v, causal=True, **variant.bind_params(chosen, {**cast, **params}))
    (out * cotangent(q.shape[-2]).to(out.dtype)).sum().backward()
    grads = {"q": q.grad, "k": k.grad, "v": v.grad} | {key: t.grad for key, t in cast.items()}
    return out.detach().double(), {key: g.double() for key, g in grads.items()}


@cache
def reference(name: str, seq: int, regime: str) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The recurrent form in fp64 on the case's inputs: the answer every form must give."""
    return run(name, "recurrent", draw_case(name, seq, regime), torch.float64)


def assert_matches(
    got: tuple[torch.Tensor, dict[str, torch.Tensor]],
    want: tuple[torch.Tensor, dict[str, torch.Tensor]],
    tol: float,
) -> None:
    """Output and every gradient within ``tol`` of the reference, relative to the reference's
    largest magnitude (a sum whose terms cancel is judged against its terms' scale)."""
    pairs = [("out", got[0], want[0])] + [(key, got[1][key], want[1][key]) for key in want[1]]
    assert set(got[1]) == set(want[1])
    for key, value, expected in pairs:
        scale = float(expected.abs().max()) or 1.0
        torch.testing.assert_close(value, expected, rtol=tol, atol=tol * scale, msg=lambda m, key=key: f"{key}: {m}")
