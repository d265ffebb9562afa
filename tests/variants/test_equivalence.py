"""Every impl of every variant equals its reference: outputs and all gradients."""

from __future__ import annotations

import pytest
import torch

import linbench
from linbench.check.correctness import Shape, check_impl

SHAPES = [
    Shape(1, 2, 1, 8, 8),
    Shape(2, 3, 7, 16, 16),
    Shape(1, 2, 64, 32, 32),
    Shape(2, 3, 100, 16, 24),
    Shape(2, 3, 257, 16, 24),
]


# Tested on their own: `compiled` compiles per shape, dtype and gradient mode (tests/variants/
# test_compiled.py), and `fla` runs only on a GPU with fla-core (stand-ins in test_fla.py and
# test_gated_fla.py).
OWN_TESTS = ("compiled", "fla", "fla-recurrent")


def _impl_cases() -> list[tuple[str, str]]:
    cases = []
    for name in linbench.list_variants():
        variant = linbench.get_variant(name)
        cases += [(name, impl) for impl in variant.impls if impl != variant.reference and impl not in OWN_TESTS]
    return cases


IMPLS = [pytest.param(v, i, id=f"{v}:{i}") for v, i in _impl_cases()]
GATED = ("retention", "simple-gla", "gla", "deltanet", "gated-deltanet")
GATED_IMPLS = [pytest.param(v, i, id=f"{v}:{i}") for v, i in _impl_cases() if v in GATED]
MASKS = [pytest.param(True, id="causal"), pytest.param(False, id="bidirectional")]


def _assert_matches(variant: str, impl: str, shape: Shape, causal: bool, dtype: torch.dtype, **kwargs) -> None:
    spec = linbench.get_variant(variant)
    if spec.masking_reason(causal):  # a gated variant's state decays in token order: causal only
        pytest.skip(spec.masking_reason(causal))
    result = check_impl(spec, impl, shape, causal=causal, dtype=dtype, **kwargs)
    if result.unavailable:  # SDPA's CUDA-only backends on CPU; torch refusing a backend a shape
        pytest.skip(result.unavailable)
    assert result.ok, result.describe()


# The impl varies fastest (the last parametrize applied): consecutive tests check a variant's
# impls at one shape, mask and dtype, and share its fp64 reference (check/correctness.py keeps
# the last four). With the shape fastest, five shapes cycled through four kept references and
# every check computed its own.
@pytest.mark.parametrize(("variant", "impl"), IMPLS)
@pytest.mark.parametrize("shape", [pytest.param(s, id=s.label) for s in SHAPES])
@pytest.mark.parametrize("causal", MASKS)
@pytest.mark.parametrize("dtype", [pytest.param(torch.float64, id="fp64"), pytest.param(torch.float32, id="fp32")])
def test_impl_matches_reference(variant: str, impl: str, causal: bool, shape: Shape, dtype: torch.dtype) -> None:
    _assert_matches(variant, impl, shape, causal, dtype)


@pytest.mark.parametrize("causal", MASKS)
@pytest.mark.parametrize(("variant", "impl"), IMPLS)
@pytest.mark.parametrize("dtype", [pytest.param(torch.bfloat16, id="bf16"), pytest.param(torch.float16, id="fp16")])
def test_low_precision_matches_reference(variant: str, impl: str, causal: bool, dtype: torch.dtype) -> None:
    _assert_matches(variant, impl, Shape(2, 3, 100, 16, 24), causal, dtype)


@pytest.mark.parametrize("variant", ["cosine", "cosformer", "heinsen", "linear"])
@pytest.mark.parametrize("chunk_size", [1, 16, 63, 64, 65, 1000])
def test_chunked_any_chunk_size(variant: str, chunk_size: int) -> None:
    """S = 257 is a multiple of none of these: the partial last chunk must be right too."""
    _assert_matches(
        variant, "chunked", Shape(1, 2, 257, 16, 24), True, torch.float64, params={"chunk_size": chunk_size}
    )


@pytest.mark.parametrize(
    "variant", ["cosine", *(pytest.param(v, marks=pytest.mark.extended) for v in ("cosformer", "heinsen", "linear"))]
)
def test_chunked_long_sequence_fp32(variant: str) -> None:
    """S = 4096 in fp32: the state carried over 64 chunks must not drift from the fp64 truth."""
    _assert_matches(variant, "chunked", Shape(1, 2, 4096, 32, 32), True, torch.float32)


@pytest.mark.parametrize(("variant", "impl"), GATED_IMPLS)
@pytest.mark.parametrize("dtype", [pytest.param(torch.float64, id="fp64"), pytest.param(torch.float32, id="fp32")])
def test_gated_impls_match_in_both_regimes_and_with_the_chunk_not_dividing_the_length(
    variant: str, impl: str, dtype: torch.dtype
) -> None:
    """The gate's own check of the gated forms, gradients of q, k, v, g and β included, at the
    variant's other check settings (strong gates, retention's γ = 0.5) and chunks of 16, 32, 64."""
    for params in linbench.get_variant(variant).check_params:
        for chunk in (16, 32, 64) if impl == "chunked" else (None,):
            given = dict(params) | ({"chunk_size": chunk} if chunk else {})
            _assert_matches(variant, impl, Shape(2, 3, 100, 16, 24), True, dtype, params=given)


@pytest.mark.parametrize("name", ["softmax", "cosine", "cosformer", "heinsen", "linear", *GATED])
def test_reference_in_fp32_matches_fp64(name: str) -> None:
    """The reference itself, run in fp32, is close to its fp64 self (a sanity check on tolerances)."""
    variant = linbench.get_variant(name)
    _assert_matches(name, variant.reference, Shape(2, 3, 100, 16, 24), True, torch.float32)
