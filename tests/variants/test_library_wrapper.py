"""The generic wrapper every library impl is built by (linbench/variants/libraries/wrapper.py):
nothing untimed inside a timed call. Every library impl's call, given what its ``hold`` made when
the inputs were drawn, must not read a tensor on the host (a device sync inside the timed region:
``float(g.amin())``, ``.item()``, ``.tolist()``, ``.cpu()``), with each library's entry point stood
in by a function that only records and returns zeros; and the contract rows say what the
adapters do (the docs page is generated from them).
"""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest
import torch
from library_cases import DIM, case
from library_layers import no_host_sync

import linbench

LIBRARY_IMPLS = [
    ("gated-deltanet", "flash-qla"),
    ("gated-deltanet", "flashinfer"),
    ("gated-deltanet", "cudnn"),
    ("kda", "flash-kda"),
    ("kda", "flashinfer"),
    ("kda", "flashinfer-recurrent"),
    ("kda", "cudnn"),
    ("kda", "cula"),
    ("lightning", "cula"),
    *(("softmax", name) for name in ("fa2", "fa3", "fa4", "flashinfer")),
]
MODULES = (
    "flash_kda", "flashinfer", "flashinfer.cudnn", "cudnn.linear_attention.ops.kda", "cula.kda", "cula.lightning",
    "flash_qla", "flash_attn", "flash_attn_interface", "flash_attn.cute",
)  # fmt: skip
# Entry points that return the output alone (the others return (output, state) or write ``out``).
RETURN_OUTPUT = {"flashinfer.chunk_gated_delta_rule", "flashinfer.cudnn.cudnn_chunk_gated_delta_rule"}
RETURN_OUTPUT |= {"flashinfer.single_prefill_with_kv_cache"}


class Recorder(types.ModuleType):
    """A library module whose every function records its call and returns zeros like v."""

    def __init__(self, name: str, calls: list[str]) -> None:
        super().__init__(name)
        self._calls = calls

    def __getattr__(self, entry: str) -> Any:
        if entry.startswith("__"):
            raise AttributeError(entry)
        qualified = f"{self.__name__}.{entry}"

        def call(*args: Any, **kwargs: Any) -> Any:
            self._calls.append(qualified)
            q, v = (kwargs.get(name, args[i] if len(args) > i else None) for i, name in ((0, "q"), (2, "v")))
            out = v.new_zeros(*v.shape[:-2], max(q.shape[-2], v.shape[-2]), v.shape[-1])
            return out if qualified in RETURN_OUTPUT else (out, None)

        return call


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    made: list[str] = []
    for name in MODULES:
        monkeypatch.setitem(sys.modules, name, Recorder(name, made))
    return made


def _inputs(variant: str, impl: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, dict[str, Any]]:
    if variant == "softmax":
        batch = 1 if impl == "flashinfer" else 2  # FlashInfer's single prefill takes one sequence
        q = torch.randn(batch, 2, 16, DIM, dtype=torch.bfloat16)
        kv = torch.randn(batch, 1, 16, DIM, dtype=torch.bfloat16)
        return q, kv, kv, {}
    c = case("gated-deltanet" if variant == "lightning" else variant)
    extras = {} if variant == "lightning" else c.extras
    q = c.q if variant != "lightning" else c.q.repeat_interleave(2, dim=1)
    k = c.k if variant != "lightning" else c.k.repeat_interleave(2, dim=1)
    return q, k, c.v, extras


@pytest.mark.parametrize(("variant", "impl"), LIBRARY_IMPLS, ids=[f"{v}:{i}" for v, i in LIBRARY_IMPLS])
def test_no_library_call_reads_a_tensor_on_the_host(
    calls: list[str], monkeypatch: pytest.MonkeyPatch, variant: str, impl: str
) -> None:
    """Defect: kda:flash-kda and kda:cula checked the gate floor with float(g.amin()) and converted
    g and β inside the timed call. (FlashQLA plans its context parallelism in its first call and
    caches the plan: test_library_flash_qla.py times the calls after it.)"""
    spec = linbench.get_variant(variant)
    chosen = spec.impl(impl)
    q, k, v, extras = _inputs(variant, impl)
    bound = spec.bind_params(chosen, extras)
    hold = getattr(chosen, "hold", None)
    held = {"held": hold(q, k, v, segments=None, **bound)} if hold else {}  # untimed, as a workload does
    with torch.no_grad(), no_host_sync(monkeypatch):
        out = chosen.fn(q, k, v, causal=True, **bound, **held)
    assert calls and out.shape == (q.shape[0], v.shape[1] if variant != "softmax" else 2, 16, DIM)
