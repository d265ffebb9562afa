"""Head dimensions of current models (CPU): 128 and 256, and Dk ≠ Dv, in every impl against its
fp64 reference (outputs and gradients); the CUDA kernel's limits are refused at plan time."""

from __future__ import annotations

import pytest
import torch

import linbench
from linbench.check.correctness import Shape, check_impl

# Short sequences: the head dims are what is under test. Dk ≠ Dv both ways round.
DIMS = [(128, 128), (256, 256), (128, 64), (64, 256)]
OWN_TESTS = ("compiled", "fla")  # tests/variants/test_compiled.py, test_fla.py


def _impls() -> list[tuple[str, str]]:
    return [
        (name, impl)
        for name in linbench.list_variants()
        for impl in linbench.get_variant(name).impls
        if impl not in OWN_TESTS
    ]


@pytest.mark.parametrize(("dim_k", "dim_v"), [pytest.param(k, v, id=f"Dk{k}-Dv{v}") for k, v in DIMS])
@pytest.mark.parametrize(("variant", "impl"), [pytest.param(v, i, id=f"{v}:{i}") for v, i in _impls()])
def test_impl_matches_reference_at_large_head_dims(variant: str, impl: str, dim_k: int, dim_v: int) -> None:
    shape = Shape(1, 2, 19, dim_k, dim_v, kv_heads=1)
    result = check_impl(linbench.get_variant(variant), impl, shape, causal=True, dtype=torch.float64)
    if result.unavailable:  # SDPA's CUDA-only backends; flash with Dk ≠ Dv
        pytest.skip(result.unavailable)
    assert result.ok, result.describe()


@pytest.mark.parametrize(
    ("variant", "dims", "refused"),
    [
        ("cosine", (256, 256), False),
        ("cosine", (512, 256), False),  # features as wide as the head: 512 fit
        ("cosine", (64, 512), True),
        ("cosformer", (256, 256), False),  # cos and sin halves: 2·256 = 512 fit
        ("cosformer", (384, 64), True),
        ("linear", (1024, 64), True),
    ],
)
def test_the_cuda_kernel_refuses_head_dims_its_tiles_do_not_hold(
    variant: str, dims: tuple[int, int], refused: bool
) -> None:
    kernel = linbench.get_variant(variant).impl("kernel")
    reason = kernel.unsupported_reason(*dims, "fp32", "cuda")
    assert (reason is not None) == refused, reason
    if refused:
        assert "the CUDA kernel takes Dk up to" in str(reason) and "\n" not in str(reason)
    assert kernel.unsupported_reason(*dims, "fp32", "cpu") is None  # the CPU kernel takes any
