"""How often does ``linbench compare`` cry wolf, and how often does it catch a planted change?

A simulation, not a measurement: the noise model of docs/gate.md ("Simulated results"),
fitted to two back-to-back H100 runs of suites/ci-gpu.toml (tests/data/ci-reruns), drives the
gate's own time rule (linbench/gate/rule.py ``judge``) over many simulated rerun pairs.

The model: a point's time in one worker process is μ·e^b, with the per-process log offset b drawn
from its noise class's pool {±d/√2} (d = log(median_ci2 / median_ci1) of the class's points),
jittered by e^{0.2·N(0,1)}. Classes: L, the chunked impls (launch-bound); S, fused points whose
p20–p80 half-width reaches 2% in either run (host-sensitive); Q, the other fused points (quiet).
Each side runs 5 processes per point, 20 where its first 5 span more than 2% (the runner's
adaptive extension). With ``--timing graph`` L points are judged on CUDA-graph replays, assumed
to be as noisy as Q points times ``--graph-noise`` (an ASSUMPTION until measured on a GPU), and
their eager time, drawn from L, is judged beside them as information (compare reports it and
never fails on it). ``--no-settle`` drops the rule's settled condition (a point whose few processes
disagree is noisy), to show what it guards against.

    python scripts/gate_simulation.py --runs 3000 --timing graph
    python scripts/gate_simulation.py --runs 3000 --timing eager
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from linbench.gate.rule import TimeRule, judge
from linbench.report.load import read_run
from linbench.results.protocol import TRUST_PROCESSES, ProcessProtocol

ROOT = Path(__file__).resolve().parents[1]
PAIR = (
    ROOT / "tests/data/ci-reruns/ci1/20261122T190155Z-ci-gpu",
    ROOT / "tests/data/ci-reruns/ci2/20261122T190624Z-ci-gpu",
)
KEY = ["variant", "impl", "mode", "causal", "dtype", "batch", "heads", "seq", "dim_k", "dim_v"]
JITTER = 0.2  # the smoothed bootstrap's jitter: resampled ties cannot collapse the MAD
HOST_SENSITIVE = 0.02  # p20–p80 half-width, relative to the median, that makes a fused point S


@dataclass(frozen=True)
class Point:
    label: str
    noise_class: str  # L, S or Q


def load_points(pair: tuple[Path, Path]) -> tuple[list[Point], dict[str, np.ndarray]]:
    """The points ok in both runs with their noise class, and each class's pool of offsets."""
    first, second = (read_run(path).results for path in pair)
    both = first.merge(second, on=KEY, suffixes=("_1", "_2"))
    both = both[(both["status_1"] == "ok") & (both["status_2"] == "ok")]
    points, shifts = [], {"L": [], "S": [], "Q": []}
    for _, row in both.iterrows():
        noise_class = _class(row)
        points.append(Point(f"{row['variant']}:{row['impl']} {row['mode']} {row['seq']}", noise_class))
        shifts[noise_class].append(math.log(row["time_ms_2"] / row["time_ms_1"]))
    pools = {c: np.concatenate([d, -np.asarray(d)]) / math.sqrt(2) for c, d in shifts.items()}
    return points, pools


def _class(row) -> str:
    if row["impl"] == "chunked":
        return "L"
    half_widths = [(row[f"time_ms_p80_{n}"] - row[f"time_ms_p20_{n}"]) / (2 * row[f"time_ms_{n}"]) for n in (1, 2)]
    return "S" if max(half_widths) >= HOST_SENSITIVE else "Q"


class Simulator:
    def __init__(self, pools: dict[str, np.ndarray], rule: TimeRule, seed: int) -> None:
        self.pools, self.protocol, self.rule = pools, rule.protocol, rule
        self.rng = np.random.default_rng(seed)

    def offsets(self, pool: np.ndarray, count: int) -> np.ndarray:
        return self.rng.choice(pool, count) * np.exp(JITTER * self.rng.standard_normal(count))

    def side(self, pool: np.ndarray) -> np.ndarray:
        """One run's process log medians of a point: K₀, or K_max where the first K₀ disagree."""
        first = self.offsets(pool, self.protocol.wanted)
        if np.ptp(first) <= self.protocol.extend_above:
            return first
        more = self.offsets(pool, self.protocol.most - self.protocol.wanted)
        return np.concatenate([first, more])

    def verdict(self, base: np.ndarray, cur: np.ndarray, planted: float = 1.0) -> str:
        return judge(np.exp(base), planted * np.exp(cur), self.rule).verdict

    def point(self, gated_pool: np.ndarray, eager_pool: np.ndarray | None, planted: float = 1.0) -> tuple[str, str]:
        """(the gated verdict, the eager verdict or '-') of one simulated rerun pair of a point."""
        base, cur = self.side(gated_pool), self.side(gated_pool)
        gated = self.verdict(base, cur, planted)
        if eager_pool is None:
            return gated, "-"
        # The same processes timed eagerly: as many as the graph times asked for.
        eager_base, eager_cur = self.offsets(eager_pool, len(base)), self.offsets(eager_pool, len(cur))
        return gated, self.verdict(eager_base, eager_cur, planted)


def pools_for(points: list[Point], pools: dict[str, np.ndarray], timing: str, graph_noise: float):
    """Each point's (gated pool, eager pool or None)."""
    chosen = []
    for point in points:
        if point.noise_class == "L" and timing == "graph":
            chosen.append((pools["Q"] * graph_noise, pools["L"]))
        else:
            chosen.append((pools[point.noise_class], None))
    return chosen


def false_alarms(sim: Simulator, chosen: list, runs: int) -> tuple[int, int, float]:
    """(runs with a regression in the eager column, runs with a gated-time regression (a false
    alarm), mean noisy points per run)."""
    any_alarm = gated_alarm = noisy = 0
    for _ in range(runs):
        verdicts = [sim.point(gated, eager) for gated, eager in chosen]
        gated_alarm += any(g == "regression" for g, _ in verdicts)
        any_alarm += any(e == "regression" for _, e in verdicts)
        noisy += sum(g == "noisy" for g, _ in verdicts)
    return any_alarm, gated_alarm, noisy / runs


def detection(sim: Simulator, chosen: list, points: list[Point], factor: float, trials: int, classes: str):
    """Per class: (mean, minimum) over its points of the share of trials a plant of ``factor``
    on that point alone is a regression."""
    rates: dict[str, list[float]] = {c: [] for c in classes}
    for point, (gated, eager) in zip(points, chosen, strict=True):
        if point.noise_class in classes:
            caught = sum(sim.point(gated, eager, factor)[0] == "regression" for _ in range(trials))
            rates[point.noise_class].append(caught / trials)
    return {c: (float(np.mean(r)), float(np.min(r))) for c, r in rates.items() if r}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=2000, help="simulated rerun pairs of the whole suite")
    parser.add_argument("--trials", type=int, default=300, help="simulated pairs per point and plant")
    parser.add_argument("--timing", choices=("graph", "eager"), default="graph")
    parser.add_argument("--graph-noise", type=float, default=1.0, help="graph noise of L points, in Q's")
    parser.add_argument("--noise-z", type=float, default=5.0)
    parser.add_argument("--max-slowdown", type=float, default=0.05)
    parser.add_argument("--max-noise", type=float, default=0.30)
    parser.add_argument("--processes", type=int, default=5)
    parser.add_argument("--max-processes", type=int, default=TRUST_PROCESSES)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--no-settle", action="store_true", help="judge few processes however much they disagree (no settled rule)"
    )
    args = parser.parse_args()

    points, pools = load_points(PAIR)
    protocol = ProcessProtocol.of(args.processes, args.max_processes)
    if args.no_settle:
        protocol = replace(protocol, trust_processes=0)  # every side trusted, however few and spread
    rule = TimeRule(args.max_slowdown, args.noise_z, args.max_noise, protocol)
    sim = Simulator(pools, rule, args.seed)
    chosen = pools_for(points, pools, args.timing, args.graph_noise)
    counts = {c: sum(p.noise_class == c for p in points) for c in "LSQ"}
    sizes = ", ".join(f"{c} {counts[c]} (pool SD {np.std(pools[c]):.3f})" for c in "LSQ")
    print(f"{len(points)} points: {sizes}; timing {args.timing}, graph noise x{args.graph_noise:g}")

    eager_alarm, gated_alarm, noisy = false_alarms(sim, chosen, args.runs)
    print(f"false-alarm runs: {gated_alarm} / {args.runs} ({gated_alarm / args.runs:.2%}); runs whose eager "
          f"column (not gated) said regression: {eager_alarm}; noisy points per run: {noisy:.2f}")  # fmt: skip
    for factor, classes in ((1.3, "LSQ"), (1.1, "SQ")):
        found = detection(sim, chosen, points, factor, args.trials, classes)
        text = "; ".join(f"{c} {mean:.1%} (min {low:.1%})" for c, (mean, low) in found.items())
        print(f"+{factor - 1:.0%} detected: {text}")


if __name__ == "__main__":
    main()
