"""Per-head constants (a decay schedule, Mamba2's A_log, dt_bias and D) are made once and read
back, never built from host numbers inside a timed call, where on a GPU each would be a
blocking host-to-device copy (CPU only: the ops of a second call recorded under a dispatch
mode, in fp32; fla's and mamba-ssm's kernels stood in by recorders)."""

from __future__ import annotations

import functools
import types
from collections.abc import Iterator
from typing import Any

import pytest
import torch
from gated_cases import VARIANTS
from torch.utils._python_dispatch import TorchDispatchMode

import linbench
from linbench.variants.device_constants import device_constant
from linbench.variants.extra_inputs import take_tokens
from linbench.variants.gated import fla as gated_fla
from linbench.variants.gated.mamba2 import library as mamba_library
from linbench.variants.varlen import Segments

HEADS, SEQ, DIM = 4, 40, 8


class Recorded(TorchDispatchMode):
    """Every aten op run inside, with its tensor inputs' and outputs' sizes and dtypes."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[tuple[str, list[int], list[torch.dtype]]] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        tensors = [t for t in (*args, *(kwargs or {}).values()) if isinstance(t, torch.Tensor)]
        made = [t for t in (out if isinstance(out, (tuple, list)) else (out,)) if isinstance(t, torch.Tensor)]
        self.ops.append((str(func), [t.numel() for t in tensors], [t.dtype for t in made]))
        return out


def host_built(ops: list[tuple[str, list[int], list[torch.dtype]]]) -> list[str]:
    """The ops that build a tensor from host data: ``torch.tensor`` of Python numbers
    (``lift_fresh``), or any fp64 tensor (linbench's host constants are drawn in fp64; the
    call's inputs are fp32)."""
    return [op for op, _, made in ops if "lift_fresh" in op or torch.float64 in made]


def inputs(name: str, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, HEADS, SEQ, DIM, generator=gen).to(dtype) for _ in range(3))
    extra = {
        extra.name: extra.draw(1, HEADS, SEQ, DIM, generator=gen, device="cpu", dtype=torch.float32, regime="weak")
        for extra in VARIANTS[name].extra_inputs
    }
    return q, k, v, extra


def second_call(name: str, impl: str, dtype: torch.dtype = torch.float32, **params: Any) -> Recorded:
    """``name:impl`` called twice (the runner's untimed first call, then a timed one) with its
    default parameters; the second call's ops."""
    variant = VARIANTS[name]
    chosen = variant.impl(impl)
    q, k, v, extra = inputs(name, dtype)
    bound = variant.bind_params(chosen, {**extra, **params})
    chosen.fn(q, k, v, causal=True, **bound)
    with Recorded() as recorded:
        chosen.fn(q, k, v, causal=True, **bound)
    return recorded


def test_a_constant_is_made_once_per_key_dtype_and_device() -> None:
    like = torch.empty(0)
    made: list[list[float]] = []

    def values(numbers: list[float]) -> list[float]:
        made.append(numbers)
        return numbers

    first = device_constant(("test", 1), like, lambda: values([1.0, 2.0]))
    assert device_constant(("test", 1), like, lambda: values([9.0])) is first and made == [[1.0, 2.0]]
    assert first.tolist() == [1.0, 2.0] and first.dtype == torch.float32 and not first.requires_grad
    assert device_constant(("test", 1), like.double(), lambda: [1.0, 2.0]) is not first  # another dtype


def test_a_constant_made_under_inference_mode_serves_autograd_later() -> None:
    with torch.inference_mode():
        made = device_constant(("test", "inference"), torch.empty(0), lambda: [0.5, 0.25])
    x = torch.ones(2, requires_grad=True)
    (x * made).sum().backward()  # an inference tensor could not be saved for backward
    assert x.grad is not None and x.grad.tolist() == [0.5, 0.25]


@pytest.mark.parametrize(
    ("name", "impl"),
    [(name, impl) for name in ("retention", "lightning", "mamba2") for impl in ("chunked", "recurrent", "quadratic")],
)
def test_linbench_s_forms_build_no_constant_from_the_host_in_a_timed_call(name: str, impl: str) -> None:
    assert host_built(second_call(name, impl).ops) == []


@pytest.mark.parametrize(("name", "params"), [("mamba2", {}), ("mamba2", {"A_log": 0.5, "dt_bias": 0.1, "D": 2.0})])
def test_mamba_ssm_gets_the_same_held_parameters_in_every_call(
    name: str, params: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    given: list[dict[str, Any]] = []

    def scan(x: torch.Tensor, dt: torch.Tensor, **kwargs: Any) -> torch.Tensor:
        given.append(kwargs)
        return torch.zeros_like(x)

    monkeypatch.setattr(
        mamba_library, "import_kernels", lambda module: types.SimpleNamespace(mamba_chunk_scan_combined=scan)
    )
    recorded = second_call(name, "mamba-ssm", **params)
    assert host_built(recorded.ops) == []
    first, second = given
    assert second["dt_bias"] is first["dt_bias"] and second["D"] is first["D"]


@pytest.fixture
def fla_recorder(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[dict[str, Any]]]:
    """fla's kernels stood in: each call's keyword arguments recorded, zeros returned."""
    calls: list[dict[str, Any]] = []

    def kernel(module: str, kernel_name: str) -> Any:
        def call(**kwargs: Any) -> tuple[torch.Tensor, None]:
            calls.append(kwargs)
            return torch.zeros_like(kwargs["v"]), None

        return call

    monkeypatch.setattr(gated_fla, "fla_kernel", kernel)
    yield calls


@pytest.mark.parametrize(("name", "params"), [("lightning", {}), ("retention", {"gamma": 0.9})])
def test_an_fla_call_copies_no_q_sized_tensor_and_builds_no_constant(
    name: str, params: dict[str, Any], fla_recorder: list[dict[str, Any]]
) -> None:
    """lightning's layer pair is checked without building its decays (fla builds them on the
    device), retention's γ is a constant read back: no fp32 copy of an fp16 q, no host build."""
    recorded = second_call(name, "fla", torch.float16, **params)
    assert host_built(recorded.ops) == []
    q_size = 1 * HEADS * SEQ * DIM
    assert [op for op, sizes, _ in recorded.ops if "_to_copy" in op and q_size in sizes] == []
    if name == "retention":  # the same storage: made once
        assert fla_recorder[1]["g_gamma"].data_ptr() == fla_recorder[0]["g_gamma"].data_ptr()


def _every_form(name: str) -> Iterator[tuple[str, Any]]:
    """(label, call) for each impl of ``name`` that runs on this CPU (not ``compiled``, whose
    Inductor code takes no Python numbers and whose compiles cost seconds): causal or
    bidirectional as the variant masks, and its packed form on a pack of three."""
    variant = linbench.get_variant(name)
    segments = Segments.from_lengths([13, 20, 7])
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, HEADS, segments.total, DIM, generator=gen) for _ in range(3))
    extra = {
        e.name: e.draw(
            1, HEADS, segments.total, DIM, generator=gen, device="cpu", dtype=torch.float32, regime="weak", dim_v=DIM
        )
        for e in variant.extra_inputs
    }
    for impl in variant.impl_list:
        if impl.name == "compiled" or (impl.availability and impl.availability(torch.device("cpu"))):
            continue
        bound = variant.bind_params(impl, extra)
        for causal in [mask == "causal" for mask in variant.masking]:
            yield f"{impl.name} causal={causal}", functools.partial(impl.fn, q, k, v, causal=causal, **bound)
        if impl.packed is not None:
            held = {"held": impl.hold(q, k, v, segments=segments, **bound)} if impl.hold else {}
            yield (
                f"{impl.name} packed",
                functools.partial(impl.packed, q, k, v, segments=segments, causal=True, **bound, **held),
            )


@pytest.mark.parametrize("name", linbench.list_variants())
def test_no_impl_builds_a_tensor_from_host_numbers_in_a_second_call(name: str) -> None:
    """Every impl that runs here, every masking it takes and its packed form: the second call
    (a timed one) makes no tensor from Python numbers and no fp64 host constant."""
    found = {}
    for label, call in _every_form(name):
        try:
            call()
        except linbench.ImplUnavailableError:
            continue  # a masking the impl refuses
        with Recorded() as recorded:
            call()
        if host_built(recorded.ops):
            found[label] = host_built(recorded.ops)
    assert found == {}


@pytest.mark.parametrize("name", linbench.list_variants())
def test_no_decoder_builds_a_tensor_from_host_numbers_in_a_step(name: str) -> None:
    """Every decoder that runs here: after a prefill of 20 tokens and a first step, the second
    step (a timed one) makes no tensor from Python numbers and no fp64 host constant."""
    variant = linbench.get_variant(name)
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, HEADS, 22, DIM, generator=gen) for _ in range(3))
    extra = {
        e.name: e.draw(1, HEADS, 22, DIM, generator=gen, device="cpu", dtype=torch.float32, regime="weak", dim_v=DIM)
        for e in variant.extra_inputs
    }
    bound = variant.length_params(22, extra)
    found = {}
    for decoder in variant.decoders.values():
        if decoder.availability and decoder.availability(torch.device("cpu")):
            continue
        state = decoder.prefill(
            q[..., :20, :],
            k[..., :20, :],
            v[..., :20, :],
            state=None,
            capacity=22,
            **take_tokens(variant.extra_inputs, bound, 0, 20),
        )
        for t in (20, 21):
            given = take_tokens(variant.extra_inputs, bound, t, t + 1)
            with Recorded() as recorded:
                _, state = decoder.step(
                    q[..., t : t + 1, :], k[..., t : t + 1, :], v[..., t : t + 1, :], state=state, **given
                )
        if host_built(recorded.ops):
            found[decoder.name] = host_built(recorded.ops)
    assert found == {}
