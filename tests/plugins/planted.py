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


def flaky_ledger(session_pid: int) -> Path:
    """The file listing the workers that called flaky, one per test session (the process
    whose fork server forked them): the test that uses flaky removes its session's own."""
    return Path(tempfile.gettempdir()) / f"linbench-planted-flaky-{session_pid}"


def _session_pid() -> int:
    """The process that started this worker's fork server (Linux: /proc). Workers are forks
    of one fork server, which holds no environment a test sets later, so the ledger is named
    after the session that the test can name itself."""
    stat = Path(f"/proc/{os.getppid()}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[1])  # the field after the state: the parent's pid


def flaky(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool) -> torch.Tensor:
    """Crashes in the third worker process that calls it, and only there."""
    if q.shape[-2] < FAIL_FROM_SEQ:
        with flaky_ledger(_session_pid()).open("a+") as handle:
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


# The file through which stall stops a run (tests that start a run set it for that run).
STALL_MARKER_ENV = "LINBENCH_PLANTED_STALL"
_calls_by_length: dict[int, int] = {}  # this worker's calls of stall, by sequence length


def stall(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool) -> torch.Tensor:
    """Behaves, except in the first worker that measures it at FAIL_FROM_SEQ or longer while
    $LINBENCH_PLANTED_STALL names a file that does not exist yet: that worker creates the file,
    writes its pid and a newline there, and waits to be killed. A run stops there, every shorter
    point's row written, for a test to kill or interrupt it; the same run resumed behaves.
    Measuring is the second call at one length in a worker (the gate makes one)."""
    length = q.shape[-2]
    _calls_by_length[length] = _calls_by_length.get(length, 0) + 1
    marker = os.environ.get(STALL_MARKER_ENV)
    if marker and length >= FAIL_FROM_SEQ and _calls_by_length[length] == 2:
        try:
            fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return naive(q, k, v, causal=causal)  # stalled once already: this is the resume
        os.write(fd, f"{os.getpid()}\n".encode())
        os.close(fd)
        while True:
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
            for fn in (good, wrong, oom, crash, hang, flaky, stall)
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
