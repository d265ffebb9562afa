"""pytest-benchmark suite: each variant's fastest impl at CI-sized shapes.

Not part of the normal test run (pytest collects tests/ only). Run it with:

    python -m pytest suites/test_benchmark_attention.py --benchmark-enable --benchmark-autosave
    python -m pytest suites/test_benchmark_attention.py --benchmark-enable \
        --benchmark-compare --benchmark-compare-fail=median:5%

Every impl is checked against its variant's fp64 reference at the benchmarked shape
before it is timed: a fast but wrong impl fails here instead of posting a number. On a
GPU the timed call ends with a synchronisation, so each round measures the kernels, not
their launch.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from linbench import attention, get_variant, list_variants
from linbench.correctness import check_impl
from linbench.shape import Shape

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
# CI-sized: seconds per variant, long enough that the linear forms' scaling shows.
SHAPE = Shape(4, 16, 4096, 64, 64) if DEVICE.type == "cuda" else Shape(1, 4, 1024, 32, 32)
DTYPE = torch.bfloat16 if DEVICE.type == "cuda" else torch.float32
CHECK_SHAPE = Shape(1, SHAPE.heads, min(SHAPE.seq, 1024), SHAPE.dim_k, SHAPE.dim_v)
# The order in which impls are tried: custom kernels, then the fastest pure-torch forms.
PREFERENCE = ("kernel", "cuda", "triton", "flash", "sdpa", "chunked", "recurrent", "naive", "quadratic")


def fastest_impl(variant_name: str) -> str:
    """The first impl of PREFERENCE the variant has and can run here."""
    variant = get_variant(variant_name)
    dtype_name = {torch.float32: "fp32", torch.bfloat16: "bf16"}[DTYPE]
    usable = [
        name
        for name, impl in variant.impls.items()
        if impl.unavailable_reason(DEVICE) is None
        and impl.unsupported_reason(SHAPE.dim_k, SHAPE.dim_v, dtype_name) is None
    ]
    ranked = sorted(usable, key=lambda n: PREFERENCE.index(n) if n in PREFERENCE else len(PREFERENCE))
    return ranked[0]


def _synchronised(fn: Callable[[], torch.Tensor]) -> Callable[[], None]:
    def timed() -> None:
        fn()
        if DEVICE.type == "cuda":
            torch.cuda.synchronize(DEVICE)

    return timed


@pytest.mark.parametrize("variant_name", list_variants())
def test_fastest_impl(benchmark, variant_name: str) -> None:
    impl = fastest_impl(variant_name)
    variant = get_variant(variant_name)
    check = check_impl(variant, impl, CHECK_SHAPE, causal=True, dtype=DTYPE, device=DEVICE, gradients=False)
    assert check.ok, f"{variant_name}:{impl} disagrees with its reference; not timing it"
    gen = torch.Generator(device="cpu").manual_seed(0)
    q, k, v = (
        torch.randn(SHAPE.batch, SHAPE.heads, SHAPE.seq, dim, generator=gen).to(DEVICE, DTYPE)
        for dim in (SHAPE.dim_k, SHAPE.dim_k, SHAPE.dim_v)
    )
    benchmark.group = f"{DEVICE.type} {SHAPE.label} {str(DTYPE).removeprefix('torch.')} fwd causal"
    benchmark.extra_info.update(impl=f"{variant_name}:{impl}", device=torch.cuda.get_device_name(DEVICE)
                                if DEVICE.type == "cuda" else "cpu")  # fmt: skip
    with torch.no_grad():
        benchmark(_synchronised(lambda: attention(q, k, v, variant=variant_name, impl=impl, causal=True)))
