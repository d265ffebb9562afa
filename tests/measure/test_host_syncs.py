"""Counting the times one call makes the host wait for the GPU: None off CUDA; the counting of
torch's sync debug warnings (CPU, the debug mode stood in); on CUDA, a value read on the host
and a blocking copy counted, device-only work and the impls that must not sync counted 0."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
import torch

from linbench.api import get_variant
from linbench.measure.host_syncs import SYNC_WARNING, count_host_syncs

CUDA = torch.device("cuda", 0)


def test_off_cuda_there_is_no_count_and_the_call_does_not_run() -> None:
    calls: list[int] = []
    assert count_host_syncs(lambda: calls.append(1), torch.device("cpu")) is None
    assert calls == []


@pytest.fixture
def modes(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """torch.cuda's sync debug mode stood in on the CPU: the modes set, in order."""
    set_to: list[Any] = [0]
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)
    monkeypatch.setattr(torch.cuda, "get_sync_debug_mode", lambda: set_to[-1])
    monkeypatch.setattr(torch.cuda, "set_sync_debug_mode", set_to.append)
    return set_to


def test_each_sync_warning_of_the_call_is_counted_once_and_others_are_not(modes: list[Any]) -> None:
    def call() -> None:
        for _ in range(3):  # one line warning three times: each counted (no once-per-line filter)
            warnings.warn(f"{SYNC_WARNING} (an item read)", UserWarning, stacklevel=1)
        warnings.warn("some other warning", UserWarning, stacklevel=1)

    assert count_host_syncs(call, CUDA) == 3
    assert modes == [0, "warn", 0]  # on for the call, then as it was


def test_the_mode_is_put_back_when_the_call_raises(modes: list[Any]) -> None:
    def call() -> None:
        raise RuntimeError("the impl failed")

    with pytest.raises(RuntimeError, match="the impl failed"):
        count_host_syncs(call, CUDA)
    assert modes == [0, "warn", 0]


@pytest.mark.cuda
def test_a_host_read_and_a_blocking_copy_are_counted_device_work_is_not() -> None:
    x = torch.randn(1 << 10, device=CUDA)
    assert count_host_syncs(lambda: x.sum().item(), CUDA) == 1
    assert count_host_syncs(lambda: torch.tensor([1.0, 2.0], device=CUDA), CUDA) >= 1
    assert count_host_syncs(lambda: torch.add(x, 1.0), CUDA) == 0


@pytest.mark.cuda
@pytest.mark.parametrize(("variant", "impl"), [("cosine", "chunked"), ("retention", "chunked"), ("mamba2", "chunked")])
def test_linbench_s_own_forms_make_the_host_wait_nowhere_after_their_first_call(variant: str, impl: str) -> None:
    """Called as the runner calls them (the impl's function, its inputs checked once before):
    retention's decays and mamba2's A_log, dt_bias and D are device constants
    (variants/device_constants.py), made in the first call, none copied from the host after."""
    spec = get_variant(variant)
    chosen = spec.impl(impl)
    gen = torch.Generator(device=CUDA).manual_seed(0)
    q, k, v = (torch.randn(1, 4, 64, 16, device=CUDA, generator=gen) for _ in range(3))
    extra = {"dt": torch.randn(1, 4, 64, device=CUDA, generator=gen)} if variant == "mamba2" else {}
    bound = spec.bind_params(chosen, extra)
    chosen.fn(q, k, v, causal=True, **bound)
    assert count_host_syncs(lambda: chosen.fn(q, k, v, causal=True, **bound), CUDA) == 0
