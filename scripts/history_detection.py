"""How well `linbench history` judges a nightly suite, on simulated histories: the detection and
false-alarm tables of docs/history.md.

Each history is a suite of ``--series`` series (one per point) over N nights, each night's time
the point's level times e^{σ·N(0,1)} (σ the run-to-run noise, in log), judged by linbench's own
verdict (linbench/history/verdict.py) as the nightly job judges it after its last night
(``--recent 3``, the 5% floor, the suite-wide false-alarm level 0.01). Three kinds of history:

- **flat**: nothing changes: exit 1 is a false alarm (the suite's, not one series');
- **step**: one series +30% from night N-2 on, 3 nights that stay: exit 1 naming the step's first
  night is a detection; exit 4 is inconclusive; exit 0 would pass a step blind;
- **spike**: one series +60% on night N-1 alone: a regression named is a false alarm, an
  improvement named after it a phantom one.

Then the size of a history file per month of nightly runs of suites/ci-gpu.toml. Needs Otava
(the history extra). Run: python scripts/history_detection.py   (about 10 minutes on two cores)
"""

from __future__ import annotations

import argparse
import gzip
import sys
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "history"))

from history_series import observations

from linbench.history.series import build
from linbench.history.verdict import Options, judge

STEP, SPIKE = 1.30, 1.60
NIGHTS = (8, 15, 30)
NOISES = (0.02, 0.20)


def history(rng: np.random.Generator, series: int, nights: int, sigma: float, kind: str) -> tuple[int, list[str]]:
    """Judge one simulated history: its exit status and the kinds of change it named where."""
    levels = np.exp(rng.normal(0.0, sigma, (series, nights)))
    if kind == "step":
        levels[0, nights - 3 :] *= STEP
    elif kind == "spike":
        levels[0, nights - 2] *= SPIKE
    verdict = judge(build(observations(levels)), Options())
    named = []
    for finding in verdict.findings:
        for part in finding.segments:
            named += [f"{'regression' if c.regression else 'improvement'}@{c.index}" for c in part.changes]
        if finding.recent_regression is not None and finding.recent_regression not in finding.segments[-1].changes:
            named.append(f"regression@{finding.recent_regression.index}")
    return verdict.status, named


def table(seeds: int, series: int) -> list[str]:
    header = (
        "| noise (σ, log) | nights | flat: false alarm (exit 1) | flat: inconclusive (exit 4) "
        "| +30% step, 3 nights: caught at its night (exit 1) | step: inconclusive | step: passed "
        "| one-night +60% spike: regression named | spike: improvement named |"
    )
    lines = [header, "|" + "---|" * 9]
    for sigma in NOISES:
        for nights in NIGHTS:
            rng = np.random.default_rng(int(sigma * 1000) + nights)
            flat = Counter(history(rng, series, nights, sigma, "flat")[0] for _ in range(seeds))
            step_found, step = 0, Counter()
            spike_reg = spike_imp = 0
            for _ in range(seeds):
                status, named = history(rng, series, nights, sigma, "step")
                step[status] += 1
                step_found += status == 1 and f"regression@{nights - 3}" in named
                status, named = history(rng, series, nights, sigma, "spike")
                spike_reg += status == 1
                spike_imp += any(n.startswith("improvement") for n in named)
            cells = [f"{sigma:.0%}", nights, f"{flat[1]} of {seeds}", f"{flat[4]} of {seeds}",
                     f"{step_found} of {seeds}", f"{step[4]} of {seeds}", f"{step[0]} of {seeds}",
                     f"{spike_reg} of {seeds}", f"{spike_imp} of {seeds}"]  # fmt: skip
            lines.append("| " + " | ".join(map(str, cells)) + " |")
            print(lines[-1], file=sys.stderr, flush=True)
    return lines


def month_bytes(points: int = 210) -> tuple[int, int]:
    from history_runs import write_history

    from linbench.history.observations import of_folders
    from linbench.history.store import add

    with tempfile.TemporaryDirectory() as tmp:
        runs = write_history(Path(tmp) / "runs", 30, variants=("gated-deltanet", "softmax"))
        store = Path(tmp) / "history.csv"
        rows, _ = add(store, of_folders(runs))
        per_row = store.stat().st_size / rows
        gz = len(gzip.compress(store.read_bytes())) / rows
    return int(per_row * points * 30), int(gz * points * 30)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100, help="histories per row and kind")
    parser.add_argument("--series", type=int, default=20, help="series (points) in each history")
    args = parser.parse_args()
    print(f"{args.seeds} histories per row and kind, {args.series} series each:")
    print("\n".join(table(args.seeds, args.series)))
    plain, gz = month_bytes()
    print(f"history file, 30 nightly runs of 210 points: {plain / 1e6:.2f} MB as .csv, {gz / 1e6:.2f} MB as .csv.gz")
