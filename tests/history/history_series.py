"""Simulated nightly histories without run folders: one observation per series per night, the
night's time given (series x nights), as scripts/history_detection.py judges them too."""

from __future__ import annotations

import numpy as np

from linbench.history.observations import KEY_FIELDS, Environment, Observation

POINT = {"variant": "sim", "impl": "chunked", "mode": "fwd", "causal": "True", "dtype": "fp32", "device_type": "cpu",
         "batch": "1", "heads": "4", "dim_k": "32", "dim_v": "32", "device_name": "Sim CPU"}  # fmt: skip


def commit_of(night: int) -> str:
    return f"{night + 0xC0FFEE:08x}" + "0" * 32


def observations(levels: np.ndarray) -> list[Observation]:
    """One observation per series per night of ``levels`` (series x nights, night 0 first)."""
    found = []
    for night in range(levels.shape[1]):
        when = f"2026-10-{night + 1:02d}T02:17:00+00:00"
        for series in range(levels.shape[0]):
            named = POINT | {"seq": str(1000 + series)}
            found.append(
                Observation(
                    tuple(named.get(field, "") for field in KEY_FIELDS),
                    f"night-{night:02d}",
                    commit_of(night),
                    when,
                    when,
                    Environment(),
                    5,
                    cpu_ms=float(levels[series, night]),
                )
            )
    return found


def noisy(seed: int, series: int, nights: int, sigma: float) -> np.ndarray:
    """Flat levels with run-to-run noise ``sigma`` (in log)."""
    return np.exp(np.random.default_rng(seed).normal(0.0, sigma, (series, nights)))
