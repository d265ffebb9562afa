"""Run folders written from formulas, so the reports can be checked against known answers."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from result_rows import result_row

from linbench.results.store import RunStore

SEQS = (1024, 2048, 4096, 8192, 16384)
CONTEXTS = tuple(1024 * 4**n for n in range(6))  # 1k .. 1m
FLOPS = 1e9


def series(
    variant: str,
    impl: str,
    time_ms: Callable[[int], float],
    peak_bytes: Callable[[int], float] = lambda s: 1000.0 * s,
    seqs: Iterable[int] = SEQS,
    spread: float = 0.01,
    **fixed: Any,
) -> list[dict[str, Any]]:
    """One impl's ok rows: the median from ``time_ms``, p20/p80 ``spread`` either side."""
    rows = []
    for seq in seqs:
        ms = time_ms(seq)
        row = result_row(seq, impl=impl, time_ms=ms)
        row.update(variant=variant, device_name="Test CPU", time_ms_p20=ms * (1 - spread),
                   time_ms_p80=ms * (1 + spread), samples=10, peak_bytes=peak_bytes(seq),
                   flops=FLOPS, tflops=FLOPS / (ms * 1e-3) / 1e12)  # fmt: skip
        row.update(fixed)
        rows.append(row)
    return rows


def failed(variant: str, impl: str, seq: int, status: str) -> dict[str, Any]:
    row = result_row(seq, impl=impl, time_ms=None, status=status)
    row.update(variant=variant, device_name="Test CPU", peak_bytes=None)
    return row


def write_run(folder: Path, rows: list[dict[str, Any]], baselines: list[str] | None = None) -> Path:
    store = RunStore.create(folder, "synthetic")
    store.write_meta({"command": "synthetic", "sweep": {"baselines": baselines or ["softmax:sdpa"]}})
    for row in rows:
        store.append(row)
    return store.path


def scaled(rows: list[dict[str, Any]], time: float = 1.0, memory: float = 1.0) -> list[dict[str, Any]]:
    """The same rows with every time (and its interval) times ``time``, memory times ``memory``."""
    out = []
    for row in rows:
        row = dict(row)
        for column in ("time_ms", "time_ms_p20", "time_ms_p80"):
            if row.get(column) is not None:
                row[column] *= time
        if row.get("peak_bytes") is not None:
            row["peak_bytes"] *= memory
        out.append(row)
    return out


def decode_series(
    variant: str,
    impl: str,
    time_ms: Callable[[int], float],
    state_bytes: Callable[[int], float],
    peak_bytes: Callable[[int], float] = lambda s: 4096.0,
    contexts: Iterable[int] = CONTEXTS,
) -> list[dict[str, Any]]:
    """One decoder's ok rows of a linbench decode run, the figures from formulas of the context."""
    rows = series(variant, impl, time_ms, peak_bytes, seqs=contexts, mode="decode", flops=None, tflops=None)
    for row in rows:
        row.update(context=row["seq"], time_per_token_ms=row["time_ms"], state_bytes=state_bytes(row["seq"]))
    return rows


def write_preset_run(folder: Path, rows: list[dict[str, Any]], preset: str, tp: int | None = None) -> Path:
    """A run of ``--preset PRESET [--tp TP]``: its settings in meta.json, as a real run's are."""
    store = RunStore.create(folder, "synthetic")
    settings = {"preset": preset, "tp": tp}
    store.write_meta({"command": "synthetic", "sweep": {"baselines": ["softmax"], "settings": settings}})
    for row in rows:
        store.append(row)
    return store.path


def kimi_tp4_serving_rows(budget: int = 2**30) -> list[dict[str, Any]]:
    """A serving decode run of kimi-linear-48b at TP4 (4 requests, 2 tokens a step, 1.5 kept):
    kda:recurrent at the KDA layers' shape (8 heads of 128; 64 KiB a request, bf16 state) and
    softmax:kvcache at the MLA layers' absorbed shape (8 q heads, one latent head of 512 + 64;
    1 MiB a request), at 4k of context."""
    (kda,) = decode_series("kda", "recurrent", lambda s: 0.5, lambda s: 65536.0, contexts=(4096,))
    (cache,) = decode_series("softmax", "kvcache", lambda s: 2.0, lambda s: 256.0 * s, contexts=(4096,))
    kda.update(heads=8, kv_heads=8, v_heads=8, dim_k=128, dim_v=128, state_dtype="bf16")
    cache.update(heads=8, kv_heads=1, v_heads=8, dim_k=576, dim_v=512)
    for row, each in ((kda, 65536), (cache, 1 << 20)):
        row.update(batch=4, tokens_per_step=2, accepted_per_step=1.5, state_bytes_per_request=each, tp=4)
        row.update(memory_budget_bytes=budget, requests_fit=budget // each, tokens_per_s=6 / row["time_ms"] * 1e3)
    return [kda, cache]
