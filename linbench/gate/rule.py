"""The time rule of ``linbench compare``: is one point slower, judged by the spread between its
worker processes?

Repetitions inside one worker process share that process's host state and move together, so
their spread says nothing of how far another process (another run) lands. The unit of
replication is the process: each process gives one time (statistic.py: its median
CUDA-graph replay time where both sides have one; else on a CPU the p20 of its repetitions'
CPU times where it ran one thread, else their wall-clock p20, what preemption moves least;
else its median), each side's estimate is the
median of those, and the noise is the spread between them, pooled from both sides
(1.4826·MAD of their logs, a robust standard deviation). Below, "medians" are those per-process times. The
standard error of a difference of two medians is 1.2533·σ̂·√(1/K_b + 1/K_c), and a change
must pass both ``z`` of them (N = e^{z·SE} − 1) and the effect-size floor ``max_slowdown``.
A point whose N alone passes ``max_noise`` cannot resolve the change the gate is asked about:
it is ``noisy`` and never fails. With fewer than the protocol's ``min_to_judge`` processes on
a side (a run made before processes.csv) there is no spread to judge with: ``unverified``.

A spread estimated from a few processes is itself unreliable: from 5 processes (10 pooled
deviations, two of them zero) the MAD often comes out small while the medians sit far apart,
and on launch-bound noise the rule then fails about 0.8% of unchanged points (3.7% from 3
processes; simulated, scripts/gate_simulation.py). The runner guards against this by adding
processes to any point whose first ones span more than the protocol's ``extend_above``; the
rule enforces the same: a side is *settled* when the protocol trusts its spread (its processes
span at most ``extend_above``, or number ``trust_processes`` or more;
linbench/results/protocol.py), and a point with an unsettled side is ``noisy``. That covers a
run made with fewer processes than the protocol's, and the eager time of a graph-timed point,
whose processes were added for the graph time's spread, not the eager one's. The numbers are
the ones the runs recorded (gate/compare.py reads them), not this module's.

Neither ``noisy`` nor ``unverified`` passes: the comparison is inconclusive (gate/verdict.py).
One change no noise explains fails even there: a *gross* regression. Every current process is
at least ``gross_ratio`` times as slow as every baseline process, each of them steady within
itself (p80/p20 of its repetitions at most ``gross_within``), and the point's ratio stands out
from the other points of the comparison: past their median log ratio by ``noise_z`` of their
spread (``gross_bar``; gate/compare.py). Tight processes were measured 1.87x apart on an H100,
and 197x apart on a busy 2-core CPU whose worker threads contend (docs/gate.md): no ratio
alone is safe from one process a side, but a point that moved far more than all the others
did is not the machine's doing. With fewer than GROSS_MIN_POINTS points there is no such
spread to compare with, and nothing is gross.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from linbench.gate.sequential import CLEAR, MOST_ROUNDS, REGRESSION, ErrorRates, outcome, rounds_to_decide
from linbench.results.processes import MAD_TO_SIGMA, MEDIAN_SE_FACTOR, median_difference_se
from linbench.results.protocol import GATE_PROCESSES, ProcessProtocol

# A gross regression: a ratio past the largest between-process offset ever measured (1.87x on
# an H100, docs/gate.md), of processes each steady within itself (p80/p20 of its repetitions).
GROSS_RATIO = 2.5
GROSS_WITHIN = 1.5
GROSS_MIN_POINTS = 5
# Set by points.py, not by this rule: a CPU point whose threads other processes oversubscribed
# on either side (results.csv's ``oversubscribed``), and one measured with other torch thread
# counts on the two sides (``threads``).
OVERSUBSCRIBED = "oversubscribed"
OTHER_THREADS = "other threads"
# The verdicts of a time that could not be judged: a comparison with one is not a pass.
UNJUDGED = ("noisy", "unverified", OVERSUBSCRIBED, OTHER_THREADS)


@dataclass(frozen=True)
class TimeRule:
    max_slowdown: float = 0.05  # the effect-size floor: smaller changes never fail
    noise_z: float = 5.0  # standard errors a change must pass
    max_noise: float = 0.30  # a point whose noise threshold passes this is noisy
    # How many processes a side needs to be judged, and when its spread is trusted.
    protocol: ProcessProtocol = field(default_factory=ProcessProtocol)
    gross_ratio: float = GROSS_RATIO  # fails where the rule cannot judge (see the docstring)
    gross_within: float = GROSS_WITHIN
    # The log ratio a gross point must also pass: the comparison's median plus noise_z of its
    # spread across points (gross_bar()); None: not known, so nothing is gross.
    gross_bar: float | None = None
    # Runs measured apart: what the whole run moved (taken out of each ratio before judging)
    # and the points' scatter beyond their processes' (added to each standard error), in log
    # (between.py).
    run_shift: float = 0.0
    run_scatter: float = 0.0
    # Runs measured until decided (the protocol's DECIDED, linbench ab): the error rates of one
    # look (gate/sequential.py), which take the place of noise_z and the settled condition.
    rates: ErrorRates = field(default_factory=ErrorRates)


@dataclass(frozen=True)
class TimeJudgement:
    """What the rule found for one point: the verdict, and the numbers behind it (None where
    the rule did not get that far)."""

    verdict: str  # regression, slower, faster, same, noisy, unverified
    ratio: float | None  # current median / baseline median
    spread: float | None = None  # σ̂: the pooled between-process spread, in log
    noise: float | None = None  # N = e^{z·SE} − 1: the change noise alone can make
    threshold: float | None = None  # T = max(max_slowdown, N): the change that fails
    settled: bool | None = None  # both sides' spreads trusted (see the module's docstring)
    gross: bool = False  # a regression found by the gross rule where the noise rule could not judge
    # Judged until decided (sequential.py): what the interval settled (regression, clear) or
    # open; None for the spread rule.
    decision: str | None = None


def judge(base: Sequence[float], cur: Sequence[float], rule: TimeRule, within: float | None = None) -> TimeJudgement:
    """The verdict on one point from each side's process times (all > 0; statistic.py); ``within`` is the
    largest p80/p20 of any process's repetitions on either side (None: not known), which the
    gross rule needs."""
    judgement = _judge(base, cur, rule)
    if judgement.verdict in UNJUDGED and is_gross(base, cur, within, rule):
        return replace(judgement, verdict="regression", gross=True)
    return judgement


def is_gross(base: Sequence[float], cur: Sequence[float], within: float | None, rule: TimeRule) -> bool:
    """Whether every current process is ``gross_ratio`` times as slow as every baseline one,
    each steady within itself, and the point moved past ``gross_bar``: a change no noise
    between processes, and no shift of the whole machine, explains."""
    if len(base) == 0 or len(cur) == 0 or within is None or within > rule.gross_within or rule.gross_bar is None:
        return False
    separated = min(cur) >= rule.gross_ratio * max(base)
    return separated and math.log(float(np.median(cur)) / float(np.median(base))) >= rule.gross_bar


def gross_bar(ratios: Sequence[float], z: float) -> float | None:
    """The log ratio past which one point moved far more than the comparison's points did:
    their median log ratio plus ``z`` times their spread (1.4826·MAD); None with fewer than
    GROSS_MIN_POINTS ratios."""
    logs = np.log(np.asarray([r for r in ratios if r and r > 0], dtype=float))
    if len(logs) < GROSS_MIN_POINTS:
        return None
    centre = float(np.median(logs))
    return centre + z * MAD_TO_SIGMA * float(np.median(np.abs(logs - centre)))


def _judge(base: Sequence[float], cur: Sequence[float], rule: TimeRule) -> TimeJudgement:
    k_b, k_c = len(base), len(cur)
    if not k_b or not k_c:
        return TimeJudgement("unverified", None)
    log_b, log_c = np.log(np.asarray(base, dtype=float)), np.log(np.asarray(cur, dtype=float))
    # The median of the process times (for an even count, the mean of the middle two), in log.
    m_b, m_c = math.log(np.median(base)), math.log(np.median(cur))
    log_ratio = m_c - m_b
    ratio = math.exp(log_ratio)
    if not (rule.protocol.can_judge(k_b) and rule.protocol.can_judge(k_c)):
        return TimeJudgement("unverified", ratio)
    deviations = np.concatenate([np.abs(log_b - m_b), np.abs(log_c - m_c)])
    spread = MAD_TO_SIGMA * float(np.median(deviations))
    se = median_difference_se(spread, k_b, k_c)
    if rule.protocol.sequential:
        return _judge_decided(log_ratio, spread, math.hypot(se, rule.run_scatter), k_b, k_c, rule)
    noise = math.expm1(rule.noise_z * math.hypot(se, rule.run_scatter))
    threshold = max(rule.max_slowdown, noise)
    settled = rule.protocol.trusts_spread(base) and rule.protocol.trusts_spread(cur)
    judged = math.exp(log_ratio - rule.run_shift)  # what this point moved beyond the whole run
    verdict = "noisy" if not settled else _verdict(judged, noise, threshold, rule)
    return TimeJudgement(verdict, ratio, spread, noise, threshold, settled)


def _judge_decided(log_ratio: float, spread: float, se: float, k_b: int, k_c: int, rule: TimeRule) -> TimeJudgement:
    """The verdict of a point measured until decided (sequential.py): a regression or cleared
    by the interval of its ratio at the gate's error rates, else open, which is not judged
    (``noisy``). The noise N is what the false-alarm quantile makes of the standard error."""
    ratio = math.exp(log_ratio)
    judged = log_ratio - rule.run_shift
    # The quantile of a few processes is in the thousands: past e^700 the noise is unbounded.
    exponent = rule.rates.alarm_quantile(k_b, k_c) * se
    noise = math.expm1(exponent) if exponent < 700 else math.inf
    threshold = max(rule.max_slowdown, noise)
    decision = outcome(judged, se, k_b, k_c, rule.max_slowdown, rule.max_noise, rule.rates)
    if decision == REGRESSION:
        verdict = "regression"
    elif decision == CLEAR:
        verdict = _verdict(math.exp(judged), noise, threshold, replace(rule, max_noise=math.inf))
    else:
        verdict = "noisy"
    return TimeJudgement(verdict, ratio, spread, noise, threshold, True, decision=decision)


def _verdict(ratio: float, noise: float, threshold: float, rule: TimeRule) -> str:
    if noise > rule.max_noise:
        return "noisy"
    if ratio - 1 > threshold:
        return "regression"
    if ratio - 1 > noise:
        return "slower"  # measured, but under the floor
    if 1 / ratio - 1 > threshold:
        return "faster"
    return "same"


def processes_to_judge(spread: float | None, rule: TimeRule, ratio: float | None = None) -> int:
    """How many processes per side would judge a point whose processes spread ``spread`` (σ̂):
    enough for the noise threshold N to fall to ``max_noise``, and no fewer than the protocol
    judges with (``min_to_judge``) or trusts a spread wider than ``extend_above`` from
    (``trust_processes``); for runs measured until decided, the rounds that would decide it at
    its ``ratio`` (sequential.py). An estimate: the spread itself is measured from few processes."""
    protocol = rule.protocol
    if protocol.sequential:  # until decided: the rounds its spread and ratio would take
        log_ratio = math.log(ratio) if ratio and ratio > 0 else 0.0
        found = rounds_to_decide(
            spread, log_ratio, protocol.min_to_judge, rule.max_slowdown, rule.max_noise, rule.rates
        )
        return found if found is not None else MOST_ROUNDS
    least = max(protocol.min_to_judge, GATE_PROCESSES)
    if spread is None:
        return least
    # N = e^{z·1.2533·σ̂·√(2/K)} − 1 ≤ max_noise  ⇔  K ≥ 2·(z·1.2533·σ̂ / log(1 + max_noise))²
    needed = 2 * (rule.noise_z * MEDIAN_SE_FACTOR * spread / math.log1p(rule.max_noise)) ** 2
    return max(least, protocol.trust_processes, math.ceil(needed))
