"""Every impl with a packed form, and impls run padded, against the per-sequence fp64
reference on a pack of lengths 1, 7, 100 and 300 (the longest past two of the feature forms' 128-token
chunks and four of the gated ones' 64): outputs and gradients (of the gated
variants' gates and β too, drawn for the whole pack and cut at its boundaries). CPU."""

from __future__ import annotations

import pytest
import torch

from linbench.check.packed import check_packed, run_packing
from linbench.variants.registry import get_variant, list_variants
from linbench.variants.varlen import Segments

LENGTHS = (1, 7, 100, 300)


def _cases(packing: str, forms: tuple[str, ...] | None = None) -> list[tuple[str, str, bool]]:
    """The (variant, impl, causal) cases that take ``packing`` and run here; ``forms``: only
    impls of these names (asked first, so no other impl's availability is looked up)."""
    cases = []
    for name in list_variants():
        variant = get_variant(name)
        for impl_name, impl in variant.impls.items():
            if forms is not None and impl_name not in forms:
                continue
            for causal in (True, False):
                if variant.masking_reason(causal) is not None or impl.packing_reason(packing, causal) is not None:
                    continue
                # Asked last: some impls' availability imports torch's compiler stack, which
                # the collection of this module need not pay for impls that take no pack.
                if impl.unavailable_reason(torch.device("cpu")) is not None:
                    continue
                cases.append((name, impl_name, causal))
    return cases


def _id(case: tuple[str, str, bool]) -> str:
    return f"{case[0]}:{case[1]}-{'causal' if case[2] else 'bidir'}"


PACKED = _cases("packed")


def test_the_packed_forms_cover_softmax_and_the_linear_forms() -> None:
    names = {f"{v}:{i}" for v, i, _ in PACKED}
    assert {"softmax:sdpa", "softmax:naive", "cosine:chunked", "cosine:recurrent", "linear:chunked"} <= names
    gated = ("retention", "lightning", "simple-gla", "gla", "deltanet", "gated-deltanet", "kda")
    assert {f"{v}:{form}" for v in gated for form in ("chunked", "quadratic", "recurrent")} <= names


@pytest.mark.parametrize("variant", ["gla", "gated-deltanet", "kda"])
def test_a_packed_gated_form_is_checked_on_the_gradients_of_its_per_token_inputs(variant: str) -> None:
    result = check_packed(get_variant(variant), "recurrent", LENGTHS, 2, 8, 6, packing="packed", causal=True)
    names = {f"grad {extra.name}" for extra in get_variant(variant).extra_inputs}
    assert result.ok, result.describe()
    assert names and names <= {c.name for c in result.comparisons}


def test_a_gated_pack_whose_gates_are_not_cut_at_the_boundaries_fails() -> None:
    """The check catches a state carried across a boundary: the gated recurrence run over the
    whole pack as one sequence is not each sequence alone."""
    variant = get_variant("gated-deltanet")
    segments = Segments.from_lengths((3, 5))
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 8, 4, generator=gen, dtype=torch.float64) for _ in range(3))
    extras = {
        "g": torch.full((1, 2, 8), -0.1, dtype=torch.float64),
        "beta": torch.full((1, 2, 8), 0.5, dtype=torch.float64),
    }
    packed = run_packing(
        q, k, v, segments, variant=variant.name, impl="recurrent", packing="packed", causal=True, **extras
    )
    whole = variant.impls["recurrent"].fn(q, k, v, causal=True, scale=None, **extras)
    assert torch.allclose(packed[:, :, :3], whole[:, :, :3])
    assert not torch.allclose(packed[:, :, 3:], whole[:, :, 3:])


@pytest.mark.parametrize("case", PACKED, ids=_id)
def test_packed_impl_equals_the_reference_per_sequence(case: tuple[str, str, bool]) -> None:
    variant, impl, causal = case
    result = check_packed(get_variant(variant), impl, LENGTHS, 2, 8, 6, packing="packed", causal=causal)
    assert result.ok, result.describe()
    assert {c.name for c in result.comparisons} >= {"out", "grad q", "grad k", "grad v"}


# The compiled impls are not among them: asking whether torch.compile can run imports Inductor
# (about 1.8 s of CPU in each test worker's collection).
PADDED = _cases("padded", ("naive", "sdpa", "chunked", "recurrent", "quadratic", "kernel"))


@pytest.mark.parametrize("case", PADDED, ids=_id)
def test_padded_impl_equals_the_reference_per_sequence(case: tuple[str, str, bool]) -> None:
    variant, impl, causal = case
    result = check_packed(get_variant(variant), impl, LENGTHS, 2, 8, 6, packing="padded", causal=causal)
    assert result.ok, result.describe()


def test_a_pack_that_leaks_across_a_boundary_fails() -> None:
    """The check catches attention across sequences: the whole pack as one sequence is not
    each sequence alone."""
    variant = get_variant("cosine")
    q = torch.randn(1, 2, 108, 8, dtype=torch.float64)
    segments = Segments.from_lengths((1, 7, 100))
    packed = run_packing(q, q, q, segments, variant="cosine", impl="chunked", packing="packed", causal=True)
    whole = variant.impls["chunked"].fn(q, q, q, causal=True, chunk_size=64, seq_len=100, norm_const=0.5)
    assert not torch.allclose(packed[:, :, 8:], whole[:, :, 8:])
    assert torch.allclose(packed[:, :, :1], whole[:, :, :1])  # the first token sees no other, either way


def test_an_impl_without_a_packed_form_says_so() -> None:
    result = check_packed(get_variant("heinsen"), "chunked", LENGTHS, 2, 8, 8, packing="packed", causal=True)
    assert result.unavailable and "no packed form" in result.unavailable
