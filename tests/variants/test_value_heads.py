"""More value heads than q/k heads (GVA) in every gated variant's forms, decoder and fla impls (CPU).

Shapes as Qwen3-Next's Gated DeltaNet has them, small: H = 2 q/k heads against H_v = 4 and 6
value heads, 37 tokens (a multiple of no chunk), fp64. The answer every form must give is an
independent one: the recurrent form with q and k gathered per value head by index (value head
j reads q/k head j // (H_v / H), fla's ``i_h = i_hv // (HV // H)``), outputs and the gradients
of q, k, v, the gates and β (a q/k head's gradient sums over the value heads it serves).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch
from fla_stand_ins import Kernels
from gated_cases import VARIANTS, assert_matches, one_thread

import linbench
from linbench.variants.decoding import decode
from linbench.variants.feature_forms import fla as fla_common
from linbench.variants.gated import fla as gated_fla

BATCH, HEADS, SEQ, DIM_K, DIM_V = 1, 2, 37, 8, 6
TOLERANCE = 1e-10  # fp64: the forms agree to ~1e-14 (see test_gated_forms.py)


@pytest.fixture(autouse=True)
def _one_thread() -> Iterator[None]:
    with one_thread():
        yield


def _leaves(name: str, v_heads: int) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(v_heads)
    leaves = {
        "q": torch.randn(BATCH, HEADS, SEQ, DIM_K, generator=gen, dtype=torch.float64),
        "k": torch.randn(BATCH, HEADS, SEQ, DIM_K, generator=gen, dtype=torch.float64),
        "v": torch.randn(BATCH, v_heads, SEQ, DIM_V, generator=gen, dtype=torch.float64),
    }
    for extra in VARIANTS[name].extra_inputs:  # per value head
        leaves[extra.name] = extra.draw(
            BATCH, v_heads, SEQ, DIM_K, generator=gen, device="cpu", dtype=torch.float64, regime="strong", dim_v=DIM_V
        )
    return leaves


def _run(
    name: str, impl: str, leaves: dict[str, torch.Tensor], *, gathered: bool = False, **params: object
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """``impl``'s output and gradients; ``gathered``: q and k indexed per value head by hand first."""
    cast = {key: value.detach().clone().requires_grad_() for key, value in leaves.items()}
    q, k, v = cast["q"], cast["k"], cast["v"]
    extras = {key: value for key, value in cast.items() if key not in "qkv"}
    if gathered:
        index = torch.arange(v.shape[1]) // (v.shape[1] // q.shape[1])
        q, k = q[:, index], k[:, index]
    out = linbench.attention(q, k, v, variant=name, impl=impl, **extras, **params)
    weight = torch.randn(out.shape, generator=torch.Generator().manual_seed(99), dtype=torch.float64)
    (out * weight.to(out.dtype)).sum().backward()
    return out.detach(), {key: value.grad for key, value in cast.items()}


@pytest.mark.parametrize("name", list(VARIANTS))
@pytest.mark.parametrize("v_heads", [4, 6])
def test_every_form_equals_the_value_head_reference(name: str, v_heads: int) -> None:
    leaves = _leaves(name, v_heads)
    want = _run(name, "recurrent", leaves, gathered=True)
    assert want[0].shape == (BATCH, v_heads, SEQ, DIM_V)
    for impl, params in (("recurrent", {}), ("quadratic", {}), ("chunked", {"chunk_size": 16})):
        assert_matches(_run(name, impl, leaves, **params), want, TOLERANCE)


@pytest.mark.parametrize("name", ["gated-deltanet", "kda", "lightning"])
def test_the_decoder_keeps_a_state_per_value_head(name: str) -> None:
    leaves = _leaves(name, 6)
    q, k, v = leaves.pop("q"), leaves.pop("k"), leaves.pop("v")
    whole = linbench.attention(q, k, v, variant=name, impl="chunked", **leaves)
    rows, state = decode(VARIANTS[name], "recurrent", q, k, v, context=30, **leaves)
    torch.testing.assert_close(rows, whole[..., 30:, :], rtol=1e-12, atol=1e-12)
    assert state.matrix.shape == (BATCH, 6, DIM_K, DIM_V)


@pytest.fixture
def kernels(monkeypatch: pytest.MonkeyPatch) -> Kernels:
    fake = Kernels()
    monkeypatch.setattr(gated_fla, "fla_kernel", fake.lookup)
    monkeypatch.setattr(fla_common, "fla_unavailable", lambda *args: None)
    return fake


@pytest.mark.parametrize("name", [name for name, variant in VARIANTS.items() if "fla" in variant.impls])
def test_fla_impls_take_value_heads_natively_or_by_repeating_q_and_k(kernels: Kernels, name: str) -> None:
    """fla's gated delta rule and kda kernels and fused_recurrent_gdn2 get q, k with H heads and v
    with H_v (natively, ``Impl.gva``); the others get q and k repeated; every one equals the
    reference."""
    want = _run(name, "recurrent", _leaves(name, 4), gathered=True)
    leaves = {key: value.float() for key, value in _leaves(name, 4).items()}
    # chunk_delta_rule takes fp16 and bf16 only; its fused recurrent twin stands for deltanet
    for kernel in ("fla-recurrent",) if name == "deltanet" else ("fla", "fla-recurrent"):
        native = name in ("gated-deltanet", "kda") or (name, kernel) == ("gdn2", "fla-recurrent")
        assert linbench.get_variant(name).impl(kernel).gva is native
        forward_only = kernel == "fla-recurrent" and name in ("gated-deltanet", "kda", "gdn2", "rwkv7")
        with torch.no_grad() if forward_only else torch.enable_grad():
            q, k, v = leaves["q"], leaves["k"], leaves["v"]
            extras = {key: value for key, value in leaves.items() if key not in "qkv"}
            out = linbench.attention(q, k, v, variant=name, impl=kernel, **extras)
        torch.testing.assert_close(out.double(), want[0], rtol=1e-4, atol=1e-4)
        given = kernels.calls[-1][1]
        assert given["q"][2] == (HEADS if native else 4)


def test_value_heads_are_refused_where_undefined_or_uneven() -> None:
    q = k = torch.randn(1, 2, 5, 4)
    with pytest.raises(ValueError, match="softmax has one value head per query head"):
        linbench.attention(q, k, torch.randn(1, 4, 5, 4), variant="softmax")
    with pytest.raises(ValueError, match="as many heads as k, or a multiple"):
        linbench.attention(q, k, torch.randn(1, 3, 5, 4), variant="kda", g=torch.zeros(1, 3, 5, 4), beta=None)
    with pytest.raises(ValueError, match="do not combine"):
        linbench.attention(q, k[:, :1], torch.randn(1, 4, 5, 4), variant="simple-gla", g=torch.zeros(1, 4, 5))
    with pytest.raises(ValueError, match=r"g must have shape .* = \(1, 4, 5\)"):
        linbench.attention(q, k, torch.randn(1, 4, 5, 4), variant="simple-gla", g=torch.zeros(1, 2, 5))
