"""How well `linbench history` finds changes, on series with the between-run noise measured on the
development machine: the figures docs/history.md quotes.

For each noise level and 100 seeds: 40 unchanged runs (any change named is a false change), a +10%
step from run 21 (found when a change is named at run 21 ± 1), a +3%-per-run drift over the last
10 of 40 runs (reported when a slower change is named among them); then the size of a history
file per month of nightly runs of suites/ci-gpu.toml. Run: python scripts/history_detection.py
"""

from __future__ import annotations

import gzip
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "history"))

from history_runs import write_history

from linbench.history.detect import change_points
from linbench.history.observations import of_folders
from linbench.history.store import add

FLOOR = 0.05
SEEDS = range(100)


def _named(values: np.ndarray) -> list:
    return [c for c in change_points(list(values), min_magnitude=FLOOR) if abs(c.ratio - 1) > FLOOR]


def detection(sigma: float) -> tuple[int, int, int]:
    false = found = drift = 0
    for seed in SEEDS:
        noise = np.exp(np.random.default_rng(seed).normal(0.0, sigma, 40))
        false += bool(_named(noise))
        step = noise.copy()
        step[20:] *= 1.10
        found += any(abs(c.index - 20) <= 1 for c in _named(step))
        drifting = noise.copy()
        drifting[30:] *= 1.03 ** np.arange(1, 11)
        drift += any(c.index >= 30 and c.ratio > 1 for c in _named(drifting))
    return false, found, drift


def month_bytes(points: int = 210) -> tuple[int, int]:
    with tempfile.TemporaryDirectory() as tmp:
        runs = write_history(Path(tmp) / "runs", 30, variants=("gated-deltanet", "softmax"))
        store = Path(tmp) / "history.csv"
        rows, _ = add(store, of_folders(runs))
        per_row = store.stat().st_size / rows
        gz = len(gzip.compress(store.read_bytes())) / rows
    return int(per_row * points * 30), int(gz * points * 30)


if __name__ == "__main__":
    header = ("between-run noise (σ, log)", "false changes in 40 unchanged runs", "+10% step found at run 21 ± 1",
              "+3%/run drift reported")  # fmt: skip
    print("| " + " | ".join(header) + " |")
    print("|---|---|---|---|")
    for sigma in (0.02, 0.047):
        false, found, drift = detection(sigma)
        print(f"| {sigma:.3f} | {false} of 100 | {found} of 100 | {drift} of 100 |")
    plain, gz = month_bytes()
    print(f"history file, 30 nightly runs of 210 points: {plain / 1e6:.2f} MB as .csv, {gz / 1e6:.2f} MB as .csv.gz")
