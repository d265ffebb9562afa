"""A test plugin: one variant whose impls fail in every way a sweep must survive.

Loaded with ``--plugin`` (or load_plugin_file); each impl is softmax attention, except
where its name says otherwise. Its decoders are softmax's KV cache, failing the same ways.
"""

from __future__ import annotations

import os
import signal
import tempfile
import time
from pathlib import Path

import torch

from linbench import Decoder, Impl, Variant, register_variant
from linbench.variants.flops import quadratic_flops
from linbench.variants.registry import PrefillFn, StreamFn
from linbench.variants.softmax.decode import KVCache, kvcache_prefill, kvcache_step
from linbench.variants.softmax.naive import naive

# Lengths at which the failing impls fail; shorter calls behave, so the gate passes.
FAIL_FROM_SEQ = 512


def good(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool) -> torch.Tensor:
    return naive(q, k, v, causal=causal)


def wrong(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool) -> torch.Tensor:
    return naive(q, k, v, causal=causal) + 0.1


def oom(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool) -> torch.Tensor:
    if q.shape[-2] >= FAIL_FROM_SEQ:
        # A real allocation far past any worker's memory cap (16 TiB).
        torch.empty(1 << 42, dtype=torch.float32, device=q.device).fill_(1.0)
    return naive(q, k, v, causal=causal)


def crash(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool) -> torch.Tensor:
    if q.shape[-2] >= FAIL_FROM_SEQ:
        os.kill(os.getpid(), signal.SIGSEGV)
    return naive(q, k, v, causal=causal)


FLAKY_CRASHES_IN = 3  # the third process to call it: gate, first measurement, then this one


def flaky_ledger(server_pid: int) -> Path:
    """The file listing the workers that called flaky, one per fork server (a test session)."""
    return Path(tempfile.gettempdir()) / f"linbench-planted-flaky-{server_pid}"


def flaky(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool) -> torch.Tensor:
    """Crashes in the third worker process that calls it, and only there. (Workers are
    forks of one fork server, which holds no environment a test sets later: the ledger is
    named after the server.)"""
    if q.shape[-2] < FAIL_FROM_SEQ:
        with flaky_ledger(os.getppid()).open("a+") as handle:
            handle.seek(0)
            seen = handle.read().split()
            if str(os.getpid()) not in seen:
                handle.write(f"{os.getpid()}\n")
                seen.append(str(os.getpid()))
        if seen.index(str(os.getpid())) + 1 == FLAKY_CRASHES_IN:
            os.kill(os.getpid(), signal.SIGSEGV)
    return naive(q, k, v, causal=causal)


def hang(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool) -> torch.Tensor:
    if q.shape[-2] >= FAIL_FROM_SEQ:
        time.sleep(3600)
    return naive(q, k, v, causal=causal)


def wrong_step(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, state: KVCache | None) -> tuple:
    out, state = kvcache_step(q, k, v, state=state)
    return out + 0.1, state


def oom_prefill(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, state: KVCache | None, capacity: int) -> KVCache:
    if capacity >= FAIL_FROM_SEQ:
        torch.empty(1 << 42, dtype=torch.float32, device=q.device).fill_(1.0)
    return kvcache_prefill(q, k, v, state=state, capacity=capacity)


def crash_step(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, state: KVCache | None) -> tuple:
    if state is not None and state.length >= FAIL_FROM_SEQ:
        os.kill(os.getpid(), signal.SIGSEGV)
    return kvcache_step(q, k, v, state=state)


def _decoder(name: str, prefill: PrefillFn = kvcache_prefill, step: StreamFn = kvcache_step) -> Decoder:
    return Decoder(name, f"a KV cache that behaves: {name}", prefill, step, "O(sd)", "O(sd)")


register_variant(
    Variant(
        name="planted",
        summary="softmax attention, with impls planted to fail",
        impl_list=tuple(
            Impl(fn.__name__, fn, f"softmax that behaves: {fn.__name__}", "O(s²d)", "O(s²)")
            for fn in (good, wrong, oom, crash, hang, flaky)
        ),
        reference="good",
        param_specs=(),
        flop_formula=quadratic_flops,
        time_complexity="O(s²d)",
        memory_complexity="O(s²)",
        decoder_list=(
            _decoder("good"),
            _decoder("wrong", step=wrong_step),
            _decoder("oom", prefill=oom_prefill),
            _decoder("crash", step=crash_step),
        ),
    ),
    replace=True,
)
