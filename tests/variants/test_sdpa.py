"""SDPA's backends as impls of their own: where each runs, and torch's reason where it does not."""

from __future__ import annotations

import pytest
import torch

import linbench
from linbench.errors import ImplUnavailableError
from linbench.variants.softmax.sdpa import backend_refusal, backend_unavailable

CPU, CUDA = torch.device("cpu"), torch.device("cuda")


def test_on_cpu_flash_and_math_run_and_the_cuda_only_backends_say_so() -> None:
    softmax = linbench.get_variant("softmax")
    assert softmax.impl("sdpa-flash").unavailable_reason(CPU) is None
    assert softmax.impl("sdpa-math").unavailable_reason(CPU) is None
    for name in ("sdpa-efficient", "sdpa-cudnn"):
        assert "CUDA only" in (softmax.impl(name).unavailable_reason(CPU) or "")


def test_on_cuda_a_backend_missing_from_the_build_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.backends.cuda, "is_flash_attention_available", lambda: False)
    monkeypatch.setattr(torch.backends.cudnn, "is_available", lambda: False)
    assert "no flash attention kernel" in (backend_unavailable("flash", CUDA) or "")
    assert "cuDNN is not available" in (backend_unavailable("cudnn", CUDA) or "")
    assert backend_unavailable("efficient", CUDA) is None


def test_a_backend_that_cannot_take_the_inputs_raises_with_torchs_reason() -> None:
    q, k = torch.randn(1, 2, 16, 8), torch.randn(1, 2, 16, 8)
    v = torch.randn(1, 2, 16, 12)  # flash on CPU needs Dk = Dv
    with pytest.raises(ImplUnavailableError, match="same last dimension"):
        linbench.attention(q, k, v, variant="softmax", impl="sdpa-flash")


def test_each_named_backend_equals_the_pinned_sdpa_impl() -> None:
    q, k, v = (torch.randn(1, 2, 32, 8) for _ in range(3))
    for backend in ("flash", "math"):
        named = linbench.attention(q, k, v, variant="softmax", impl=f"sdpa-{backend}")
        pinned = linbench.attention(q, k, v, variant="softmax", impl="sdpa", backend=backend)
        torch.testing.assert_close(named, pinned)


@pytest.mark.parametrize(
    "failure",
    [
        RuntimeError("DefaultCPUAllocator: not enough memory: you tried to allocate 4398046511104 bytes."),
        torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 4.00 TiB"),
    ],
)
def test_a_pinned_backend_that_runs_out_of_memory_reads_as_out_of_memory(
    monkeypatch: pytest.MonkeyPatch, failure: RuntimeError
) -> None:
    """An allocation failure is the point's reach (status oom), not a backend that cannot run it."""
    from linbench.check.correctness import Shape, check_impl

    def allocation_fails(*args: object, **kwargs: object) -> torch.Tensor:
        raise failure

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", allocation_fails)
    q = torch.randn(1, 1, 8, 4)
    with pytest.raises(RuntimeError) as caught:
        linbench.attention(q, q, q, variant="softmax", impl="sdpa-math")
    assert caught.value is failure and not isinstance(caught.value, ImplUnavailableError)
    case = check_impl(linbench.get_variant("softmax"), "sdpa-math", Shape(1, 1, 8, 4, 4), causal=True)
    assert case.unavailable is None and case.out_of_memory, case.describe()


def test_a_refusal_keeps_torchs_reasons_and_drops_its_source_locations() -> None:
    # What SDPA's cuDNN backend warned on an H200 (torch 2.11) when pinned for a one-token key.
    where = " (Triggered internally at /pytorch/aten/src/ATen/native/transformers/cuda/sdp_utils.cpp:986.)"
    caught = [
        "Memory efficient kernel not used because:" + where,
        "Memory Efficient attention has been runtime disabled." + where,
        "Flash attention has been runtime disabled." + where,
        "cuDNN attention kernel not used because:" + where,
        "cudnn SDPA does not support key/value sequence length 1." + where,
        "cudnn SDPA does not support key/value sequence length 1." + where,
    ]
    assert backend_refusal(caught) == "cudnn SDPA does not support key/value sequence length 1."


@pytest.mark.parametrize("impl", ["sdpa", "sdpa-flash", "sdpa-math"])
def test_a_timed_call_neither_asks_torch_for_a_backend_nor_catches_warnings(
    monkeypatch: pytest.MonkeyPatch, impl: str
) -> None:
    """Which backend answers is decided by the point's first call (untimed on a GPU); the
    repetitions after it only look their inputs' form up (device: cpu). On CPU the inputs are
    placed anew between repetitions: new tensors of the same form."""
    import warnings

    from linbench.runner.workload import Workload
    from linbench.shape import Shape
    from linbench.sweep.points import Point
    from linbench.variants.backends import take_noted

    work = Workload(Point("softmax", impl, "fwd", True, "fp32", "cpu", Shape(1, 2, 24, 8, 8)), CPU)
    work.before()
    work.run()  # the point's first call: the memory call
    asked: list[str] = []
    choice, catch = torch._fused_sdp_choice, warnings.catch_warnings
    monkeypatch.setattr(torch, "_fused_sdp_choice", lambda *a, **kw: asked.append("choice") or choice(*a, **kw))
    monkeypatch.setattr(warnings, "catch_warnings", lambda *a, **kw: asked.append("catch") or catch(*a, **kw))
    take_noted()
    for _ in range(3):
        work.before()
        work.run()
    assert asked == []
    assert take_noted() == ("torch sdpa flash" if impl == "sdpa" else f"torch sdpa {impl.removeprefix('sdpa-')}")


def test_a_refused_form_is_refused_again_with_torchs_reason() -> None:
    q, k = torch.randn(1, 2, 16, 8), torch.randn(1, 2, 16, 8)
    v = torch.randn(1, 2, 16, 12)  # flash on CPU needs Dk = Dv
    for _ in range(2):  # the second time from the first call's decision
        with pytest.raises(ImplUnavailableError, match="same last dimension"):
            linbench.attention(q, k, v, variant="softmax", impl="sdpa-flash")
