"""The ``compiled`` impls: the all-chunks-at-once form, torch.compile's availability, and one
compile on CPU that must serve every longer length without compiling again."""

from __future__ import annotations

import pytest
import torch

import linbench
from linbench.check.correctness import Shape, check_impl
from linbench.measure.compile_time import compile_seconds
from linbench.variants.feature_forms import compiled
from linbench.variants.feature_forms.chunked import chunked_linear_attention
from linbench.variants.feature_forms.parallel_chunks import parallel_chunked_attention

CPU = torch.device("cpu")


@pytest.mark.parametrize("seq", [1, 5, 64, 65, 200])
@pytest.mark.parametrize("eps", [None, 1e-6])
def test_all_chunks_at_once_equals_the_chunk_loop(seq: int, eps: float | None) -> None:
    q, k, v = (torch.rand(2, 3, seq, 8, dtype=torch.float64) for _ in range(3))
    at_once = parallel_chunked_attention(q, k, v, causal=True, eps=eps, chunk_size=64)
    looped = chunked_linear_attention(q, k, v, causal=True, eps=eps, chunk_size=64)
    torch.testing.assert_close(at_once, looped, rtol=1e-12, atol=1e-12)


def test_padding_keeps_at_least_min_chunks() -> None:
    x = torch.ones(1, 1, 5, 2)
    assert compiled._pad_to_chunks(x, 4).shape[-2] == 4 * compiled.MIN_CHUNKS
    assert compiled._pad_to_chunks(torch.ones(1, 1, 20, 2), 4).shape[-2] == 20  # whole chunks: no copy


def test_without_a_cpu_compiler_the_impl_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch._inductor.cpp_builder as builder

    def missing() -> str:
        raise RuntimeError("no C++ compiler found")

    monkeypatch.setattr(builder, "get_cpp_compiler", missing)
    reason = compiled.compile_unavailable(CPU)
    assert reason is not None and "no C++ compiler found" in reason


def test_every_compiled_impl_names_its_mode_and_takes_chunk_size() -> None:
    for name in ("cosine", "linear", "cosformer"):
        impl = linbench.get_variant(name).impl("compiled")
        assert "torch.compile" in impl.summary and [p.name for p in impl.params] == ["chunk_size"]


@pytest.mark.slow
@pytest.mark.extended
def test_one_compile_serves_longer_lengths_and_passes_the_gate(monkeypatch: pytest.MonkeyPatch) -> None:
    """The warm-up length compiles; a longer one must reuse that graph (a compile there would
    land in the point's memory reading), and the result must pass the correctness gate, its
    gradients included, on that same graph. One compile in all: each costs tens of seconds
    on CPU, and a training graph (forward and backward) serves a forward-only call too."""
    if (reason := compiled.compile_unavailable(CPU)) is not None:
        pytest.skip(reason)
    import torch._inductor.config as inductor
    from torch._dynamo.utils import counters

    # Scalar C++ kernels: what is asserted (one graph, numbers within the gate's tolerance) does
    # not depend on Inductor's vector code, and without it the compile takes about a third less.
    # Said as "no vector ISA" rather than a vector width of 1, so Inductor also skips building
    # and running a probe program for each ISA the CPU might have (8 s here on a fresh machine).
    monkeypatch.setattr(inductor.cpp, "vec_isa_ok", False)
    # A worker starts with nothing compiled; earlier tests in this process may have compiled
    # the same function at other lengths, which changes what dynamo does with a new one.
    torch._dynamo.reset()
    cosine = linbench.get_variant("cosine")
    for seq in (16, 700):
        q, k, v = (torch.randn(1, 2, seq, 16, requires_grad=True) for _ in range(3))
        cosine.impl("compiled").fn(q, k, v, causal=True, chunk_size=128, norm_const=0.5, seq_len=None).sum().backward()
        if seq == 16:
            graphs, spent = counters["stats"]["unique_graphs"], compile_seconds()
    assert counters["stats"]["unique_graphs"] == graphs
    assert spent is not None and spent > 0
    # norm_const as a value, as in the warm-up (a learnable tensor would be another graph).
    case = check_impl(cosine, "compiled", Shape(1, 2, 300, 16, 16), causal=True, dtype=torch.float32,
                      params={"norm_const": 0.5})  # fmt: skip
    assert case.ok, case.describe()
    assert [c.name for c in case.comparisons] == ["out", "grad q", "grad k", "grad v"]
    assert counters["stats"]["unique_graphs"] == graphs
