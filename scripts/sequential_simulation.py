"""How often does an A/B judged in time (linbench/gate/sequential.py) cry wolf, miss +30%, and how
many rounds does a point take? A simulation, not a measurement: the figures docs/gate.md quotes.

Each trial is one point of an A/B: both sides' process times e^{σ·x}, x normal or Student t(3)
(heavy tails), the current side shifted by the change (none, or +30%). After each round from the
third on, the point is judged as linbench judges it (the MAD of both sides' logs, the standard
error of a difference of medians, and the quantiles of gate/sequential.py at its error rates per
look); it stops at the first decided verdict. Vectorised over trials; ``--check`` also judges a
few hundred trials with linbench's own rule (gate/rule.py ``judge``) and asserts they agree.

    python scripts/sequential_simulation.py              # the table, about a minute
    python scripts/sequential_simulation.py --check
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from linbench.gate.rule import TimeRule, judge
from linbench.gate.sequential import ErrorRates
from linbench.results.processes import MAD_TO_SIGMA, MEDIAN_SE_FACTOR
from linbench.results.protocol import ProcessProtocol

FLOOR, DETECT, MOST = 0.05, 0.30, 60
RATES = ErrorRates()


def draws(rng: np.random.Generator, trials: int, sigma: float, tails: str) -> np.ndarray:
    shape = (trials, 2, MOST)
    x = rng.standard_normal(shape) if tails == "normal" else rng.standard_t(3, shape)
    return x * sigma


def sequence(logs: np.ndarray, shift: float) -> tuple[np.ndarray, np.ndarray]:
    """Each trial's outcome (1 regression, 2 cleared, 0 open at MOST) and the rounds it took."""
    logs = logs.copy()
    logs[:, 1] += shift
    trials = logs.shape[0]
    outcome, rounds = np.zeros(trials, dtype=int), np.full(trials, MOST)
    live = np.ones(trials, dtype=bool)
    for k in range(3, MOST + 1):
        x = logs[live, :, :k]
        medians = np.log(np.median(np.exp(x), axis=2))  # as rule.py: the median time, then its log
        spread = MAD_TO_SIGMA * np.median(np.abs(x - medians[..., None]).reshape(x.shape[0], -1), axis=1)
        se = MEDIAN_SE_FACTOR * spread * math.sqrt(2 / k)
        ratio = medians[:, 1] - medians[:, 0]
        regression = (ratio > math.log1p(FLOOR)) & (ratio > RATES.alarm_quantile(k, k) * se)
        cleared = ~regression & (ratio + RATES.miss_quantile(k, k) * se < math.log1p(DETECT))
        index = np.flatnonzero(live)
        outcome[index[regression]], outcome[index[cleared]] = 1, 2
        rounds[index[regression | cleared]] = k
        live[index[regression | cleared]] = False
        if not live.any():
            break
    return outcome, rounds


def check(rng: np.random.Generator) -> None:
    """The vectorised rule agrees with linbench's judge on 300 trials of each kind."""
    rule = TimeRule(protocol=ProcessProtocol.rounds(3, MOST))
    for shift in (0.0, math.log(1.3)):
        logs = draws(rng, 300, 0.05, "normal")
        outcome, rounds = sequence(logs, shift)
        for t in range(300):
            k = int(rounds[t])
            base, cur = np.exp(logs[t, 0, :k]), np.exp(logs[t, 1, :k] + shift)
            decision = judge(list(base), list(cur), rule).decision
            expected = {1: "regression", 2: "clear", 0: "open"}[int(outcome[t])]
            assert decision == expected, (t, decision, expected)
    print("the vectorised rule agrees with gate/rule.py's judge on 600 trials")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20000)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    rng = np.random.default_rng(20261128)
    if args.check:
        check(rng)
        return
    print(f"| noise | σ | unchanged: false alarm | unchanged: rounds (mean) | +30%: caught | +30%: cleared (missed) "
          f"| +30%: rounds (mean) |  ({args.trials} trials each, every round a look, up to {MOST})")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for tails in ("normal", "t(3)"):
        for sigma in (0.01, 0.03, 0.05, 0.1):
            same, same_rounds = sequence(draws(rng, args.trials, sigma, tails), 0.0)
            slow, slow_rounds = sequence(draws(rng, args.trials // 4, sigma, tails), math.log(1.3))
            caught, missed = f"{np.mean(slow == 1):.4f}", f"{np.mean(slow == 2):.4f}"
            cells = (tails, sigma, f"{np.mean(same == 1):.5f}", f"{same_rounds.mean():.1f}", caught, missed,
                     f"{slow_rounds.mean():.1f}")  # fmt: skip
            print("| " + " | ".join(map(str, cells)) + " |", flush=True)


if __name__ == "__main__":
    main()
