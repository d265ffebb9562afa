"""The same proofs on a GPU: every impl against the reference on CUDA tensors (skipped without one)."""

from __future__ import annotations

import pytest
import torch

import linbench
from linbench.check.correctness import Shape, check_impl

pytestmark = pytest.mark.cuda

IMPLS = [
    pytest.param(name, impl, id=f"{name}:{impl}")
    for name in ("softmax", "cosine", "cosformer", "heinsen", "linear")
    for impl in linbench.get_variant(name).impls
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("causal", [True, False], ids=["causal", "bidirectional"])
@pytest.mark.parametrize(("name", "impl"), IMPLS)
def test_impl_matches_reference_on_cuda(name: str, impl: str, causal: bool, dtype: torch.dtype) -> None:
    """An impl that declares where it runs (the pinned SDPA backends, csrc's kernel, compiled,
    fla) may be unavailable for a case, and must then say why: fla has no bidirectional form
    and needs fla-core, SDPA's flash and cuDNN backends take no fp32, the kernel needs its CUDA
    build. The pure-torch impls run everywhere, and so must be right here."""
    variant = linbench.get_variant(name)
    result = check_impl(variant, impl, Shape(2, 3, 257, 64, 64), causal=causal, dtype=dtype, device="cuda")
    if result.unavailable is not None and variant.impl(impl).availability is not None:
        assert result.unavailable.strip(), f"{name}:{impl} is unavailable without saying why"
        pytest.skip(f"{name}:{impl} is unavailable here: {result.unavailable}")
    assert result.ok, result.describe()


@pytest.mark.parametrize("backend", ["flash", "efficient", "math"])
def test_sdpa_backends_pin_on_cuda(backend: str) -> None:
    q, k, v = (torch.randn(1, 4, 512, 64, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    naive = linbench.attention(q, k, v, variant="softmax", impl="naive")
    pinned = linbench.attention(q, k, v, variant="softmax", impl="sdpa", backend=backend)
    torch.testing.assert_close(pinned, naive, rtol=2e-2, atol=2e-2)


def test_output_stays_on_the_device() -> None:
    q = torch.randn(1, 2, 100, 16, device="cuda")
    for name in linbench.list_variants():
        assert linbench.attention(q, q, q, variant=name).device.type == "cuda"
