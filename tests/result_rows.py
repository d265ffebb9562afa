"""A results.csv row for the tests that write run folders by hand (store, report readers).

Importable from every test folder: tests/conftest.py puts this folder on sys.path.
"""

from __future__ import annotations

from typing import Any


def result_row(seq: int, impl: str = "chunked", time_ms: float | None = 1.0, status: str = "ok") -> dict[str, Any]:
    """An ok-by-default cosine fwd fp32 row at B1 H8 D64 and length ``seq``."""
    return {
        "variant": "cosine",
        "impl": impl,
        "mode": "fwd",
        "causal": True,
        "dtype": "fp32",
        "device": "cpu",
        "batch": 1,
        "heads": 8,
        "seq": seq,
        "dim_k": 64,
        "dim_v": 64,
        "status": status,
        "time_ms": time_ms,
        "peak_bytes": 1000,
    }


def process_row(seq: int, process: int, time_ms: float = 1.0, status: str = "ok") -> dict[str, Any]:
    """A processes.csv row of the same point as ``result_row(seq)``: one worker's measurement."""
    point = {k: v for k, v in result_row(seq, time_ms=time_ms, status=status).items()}
    return point | {"process": process, "pid": 1000 + process, "samples": 3, "timed_s": 3 * time_ms / 1e3}
