"""Grouped-query and multi-query attention (CPU): every impl and decoder, given k and v with
fewer heads than q, equals its fp64 reference run on k and v repeated to q's heads; the forms
that run it natively keep one state per key/value head."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
import torch

import linbench
from linbench import Impl, Variant, register_variant
from linbench.check.correctness import Shape, check_decoder, check_impl
from linbench.variants.decoding import decode, state_bytes
from linbench.variants.heads import expand_call, expand_heads, groups, per_kv_head
from linbench.variants.registry import unregister_variant

# H = 8 query heads over 2 key/value heads (grouped-query) and over 1 (multi-query); a length
# of no power of two and Dk ≠ Dv, so that no axis can stand in for another.
GROUPED = [Shape(2, 8, 37, 16, 24, kv_heads=2), Shape(1, 8, 37, 16, 24, kv_heads=1)]
# SDPA's flash backend takes Dk = Dv only.
GROUPED += [Shape(1, 8, 37, 16, 16, kv_heads=2), Shape(1, 8, 37, 16, 16, kv_heads=1)]
SHAPES = [pytest.param(shape, id=shape.label) for shape in GROUPED]
# Tested on their own (tests/variants/test_compiled.py, test_fla.py); both take k and v
# repeated to q's heads (Impl.gqa False), which test_impls_without_native_support_take_repeated_heads covers.
OWN_TESTS = ("compiled", "fla")


def _impls() -> list[tuple[str, str]]:
    return [
        (name, impl)
        for name in linbench.list_variants()
        for impl in linbench.get_variant(name).impls
        if impl not in OWN_TESTS
    ]


def _decoders() -> list[tuple[str, str]]:
    return [
        (name, decoder)
        for name in linbench.list_variants()
        for decoder, declared in linbench.get_variant(name).decoders.items()
        if declared.library is None  # a library's (fla's) runs on a GPU or interpreted only
    ]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("causal", [pytest.param(True, id="causal"), pytest.param(False, id="bidirectional")])
@pytest.mark.parametrize(("variant", "impl"), [pytest.param(v, i, id=f"{v}:{i}") for v, i in _impls()])
def test_impl_matches_reference_on_grouped_heads(variant: str, impl: str, causal: bool, shape: Shape) -> None:
    """Outputs and the gradients of q, k, v (summed over each group) and of per-head parameters."""
    masking = linbench.get_variant(variant).masking_reason(causal)
    if masking is not None:  # the gated variants are causal only
        pytest.skip(masking)
    result = check_impl(linbench.get_variant(variant), impl, shape, causal=causal, dtype=torch.float64)
    if result.unavailable:  # SDPA's CUDA-only backends on the CPU
        pytest.skip(result.unavailable)
    assert result.ok, result.describe()
    assert {c.name for c in result.comparisons} >= {"out", "grad q", "grad k", "grad v"}


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize(("variant", "decoder"), [pytest.param(v, d, id=f"{v}:{d}") for v, d in _decoders()])
def test_decoder_matches_reference_on_grouped_heads(variant: str, decoder: str, shape: Shape) -> None:
    result = check_decoder(linbench.get_variant(variant), decoder, shape, steps=5)
    assert result.ok, result.describe()


# Decoders of variants without extra inputs (a gated variant's g and β are drawn by check_decoder).
PLAIN_DECODERS = [(v, d) for v, d in _decoders() if not linbench.get_variant(v).extra_inputs]


@pytest.mark.parametrize(("variant", "decoder"), [pytest.param(v, d, id=f"{v}:{d}") for v, d in PLAIN_DECODERS])
def test_native_decoder_state_shrinks_with_the_key_value_heads(variant: str, decoder: str) -> None:
    """A decoder that keeps its state per key/value head holds 1/G of it: G = 8 with one head."""
    chosen = linbench.get_variant(variant).decoder(decoder)
    q = torch.randn(1, 8, 12, 16)
    sizes = {}
    for kv_heads in (8, 1):
        k, v = torch.randn(1, kv_heads, 12, 16), torch.randn(1, kv_heads, 12, 16)
        _, state = decode(linbench.get_variant(variant), decoder, q, k, v, context=8)
        sizes[kv_heads] = state_bytes(state)
    if chosen.gqa:
        # The recompute decoder also caches queries, which keep their 8 heads.
        assert sizes[1] < sizes[8], sizes
        if decoder != "recompute":
            assert sizes[1] * 8 == sizes[8], sizes
    else:
        assert sizes[1] == sizes[8], sizes


@pytest.mark.parametrize("variant", ["cosine", "cosformer", "heinsen", "linear"])
def test_stream_state_is_per_key_value_head(variant: str) -> None:
    """The linear forms' carried state has H_kv heads, and pieces fed one after another give
    the outputs of the whole sequence."""
    spec = linbench.get_variant(variant)
    q, k, v = torch.randn(2, 6, 20, 8), torch.randn(2, 3, 20, 8), torch.randn(2, 3, 20, 12)
    params = spec.length_params(20, {})
    whole, state = spec.stream_attention(q, k, v, **params)
    first, mid = spec.stream_attention(q[:, :, :9], k[:, :, :9], v[:, :, :9], **params)
    rest, _ = spec.stream_attention(q[:, :, 9:], k[:, :, 9:], v[:, :, 9:], state=mid, **params)
    torch.testing.assert_close(torch.cat([first, rest], dim=2), whole)
    held = [t for t in vars(state).values() if isinstance(t, torch.Tensor)]
    assert held and all(t.shape[:2] == (2, 3) for t in held)


@pytest.fixture
def seen_heads() -> Iterator[dict[str, torch.Tensor]]:
    """A variant whose impls record the k they are handed: "native" (Impl.gqa) and "expanded"."""
    seen: dict[str, torch.Tensor] = {}

    def recorder(name: str) -> Callable[..., torch.Tensor]:
        def record(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool) -> torch.Tensor:
            seen[name] = k
            return torch.zeros(*q.shape[:-1], v.shape[-1], dtype=q.dtype)

        return record

    impls = (
        Impl("native", recorder("native"), "", "O(sd)", "O(sd)", gqa=True),
        Impl("expanded", recorder("expanded"), "", "O(sd)", "O(sd)"),
    )
    register_variant(Variant("test-heads", "O = 0", impls, "native", (), lambda *a: 0.0, "O(sd)", "O(sd)"))
    try:
        yield seen
    finally:
        unregister_variant("test-heads")


def test_impls_without_native_support_take_repeated_heads(seen_heads: dict[str, torch.Tensor]) -> None:
    """An impl without native support is handed k with q's heads, each key/value head repeated
    for its group (query head h reads key/value head h // G); a native impl gets k as it is."""
    q, k = torch.randn(1, 6, 5, 4), torch.randn(1, 2, 5, 4)
    for impl in ("native", "expanded"):
        linbench.attention(q, k, k, variant="test-heads", impl=impl)
    assert seen_heads["native"] is k
    assert seen_heads["expanded"].shape == (1, 6, 5, 4)
    for head in range(6):
        torch.testing.assert_close(seen_heads["expanded"][:, head], k[:, head // 3])


def test_groups_refuses_heads_that_do_not_divide() -> None:
    with pytest.raises(ValueError, match="dividing q's 6; got 4"):
        groups(torch.zeros(1, 6, 2, 2), torch.zeros(1, 4, 2, 2))
    assert groups(torch.zeros(1, 6, 2, 2), torch.zeros(1, 2, 2, 2)) == 3


def test_expand_heads_repeats_each_head_for_its_group() -> None:
    x = torch.arange(2.0).reshape(1, 2, 1, 1)
    assert expand_heads(x, 6).flatten().tolist() == [0, 0, 0, 1, 1, 1]
    assert expand_heads(x, 2) is x


def test_expand_call_repeats_the_inputs_declared_per_key_value_head() -> None:
    """A variant's extra inputs named per key/value head are repeated like k and v; others not."""
    q, k = torch.zeros(1, 4, 3, 2), torch.zeros(1, 2, 3, 2)
    gate, other = torch.arange(2.0).reshape(1, 2, 1), torch.ones(1, 2, 1)
    _, _, params = expand_call(q, k, k, {"g": gate, "other": other, "scale": 0.5}, ["g"])
    assert params["g"].flatten().tolist() == [0, 0, 1, 1]
    assert params["other"] is other and params["scale"] == 0.5


def test_per_kv_head_carries_the_state_outside_the_group_axis() -> None:
    """A wrapped form sees q as (B, H_kv, G, S, D) and k, v with a group axis of 1; its state
    comes back as (B, H_kv, ...), and goes in so."""

    @per_kv_head
    def form(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, state: torch.Tensor | None = None):
        total = (k.transpose(-1, -2) @ v) + (0 if state is None else state)
        return q @ total, total

    q, k, v = torch.randn(2, 4, 3, 5), torch.randn(2, 2, 3, 5), torch.randn(2, 2, 3, 7)
    out, state = form(q, k, v)
    assert out.shape == (2, 4, 3, 7) and state.shape == (2, 2, 5, 7)
    expected = q @ expand_heads(k, 4).transpose(-1, -2) @ expand_heads(v, 4)
    torch.testing.assert_close(out, expected)
    out2, state2 = form(q, k, v, state=state)
    torch.testing.assert_close(state2, 2 * state)
    torch.testing.assert_close(out2, 2 * expected)
