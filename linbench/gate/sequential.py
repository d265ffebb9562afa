"""Sequential judgement: a point's verdict decided either way at the gate's error rates, and the
rounds (processes a side) a point still needs to get there.

``linbench ab`` measures both revisions round by round, one process a point a round, so it can
look at a point after every round and stop it as soon as its verdict is decided, instead of at
a fixed count. A verdict is decided when the interval of the point's log ratio, at the gate's
error rates, settles it:

- **regression**: the ratio is past the floor (``--max-slowdown``) and its interval at the
  false-alarm rate lies wholly above 1: log R > c·SE, c the ``false_alarm`` quantile;
- **clear**: its interval at the miss rate lies wholly below the change the gate must catch
  (``--max-noise``, +30%): log R + b·SE < log 1.3, b the ``miss`` quantile. A point cleared so
  was measured well enough that a +30% change would not have looked like this.

Anything else is *open*: more rounds can still move it either way. A point still open when the
rounds end is not judged (``noisy``), so the comparison is inconclusive, never a pass.

The quantiles are Student t's with ``0.4·(K_b + K_c) − 1`` degrees of freedom, not the normal
ones: the standard error comes from the MAD of few processes (rule.py), and that studentized
median difference has far heavier tails than a normal. Simulated (normal and t(3) noise, 400,000
draws per count), its 1e-4 quantile is 18 at 5 processes a side, 6.9 at 10, 4.9 at 20 and 4.1
at 50, against 3.7 for a normal; t with those degrees of freedom gives 22, 7.1, 4.9 and 4.1.
Each look spends the error rates again, so they are set per look: a false alarm of 1e-5 and a
miss of 1e-3 per look keep a point's whole sequence under about 1e-4 and 1% (simulated with
every round a look, up to 60 rounds, in scripts/sequential_simulation.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from linbench.results.processes import median_difference_se

# Per look: the chance that noise alone makes an unchanged point a regression, and that a +30%
# change is cleared.
FALSE_ALARM = 1e-5
MISS = 1e-3
# The degrees of freedom of a spread pooled from K_b + K_c processes' MAD: about 0.4 per
# process (the MAD's efficiency against a standard deviation is 0.37), less the two medians.
DF_PER_PROCESS = 0.4
MOST_ROUNDS = 1000  # rounds_to_decide looks no further

REGRESSION, CLEAR, OPEN = "regression", "clear", "open"


def degrees_of_freedom(k_b: int, k_c: int) -> float:
    """The t distribution's degrees of freedom for a spread pooled from ``k_b + k_c`` processes."""
    return max(DF_PER_PROCESS * (k_b + k_c) - 1.0, 0.5)


@dataclass(frozen=True)
class ErrorRates:
    """The error rates of one look at a point (see the module's docstring)."""

    false_alarm: float = FALSE_ALARM
    miss: float = MISS

    def alarm_quantile(self, k_b: int, k_c: int) -> float:
        """c: how many standard errors a slowdown must pass to be a regression."""
        return t_quantile(self.false_alarm, degrees_of_freedom(k_b, k_c))

    def miss_quantile(self, k_b: int, k_c: int) -> float:
        """b: how many standard errors below +``detect`` a ratio must stay to be cleared."""
        return t_quantile(self.miss, degrees_of_freedom(k_b, k_c))


def outcome(log_ratio: float, se: float, k_b: int, k_c: int, floor: float, detect: float, rates: ErrorRates) -> str:
    """REGRESSION, CLEAR or OPEN for a point whose log ratio is ``log_ratio`` with standard
    error ``se`` from ``k_b`` and ``k_c`` processes, a floor of ``floor`` (0.05: 5%) and a change
    to catch of ``detect`` (0.30)."""
    if log_ratio > math.log1p(floor) and log_ratio > rates.alarm_quantile(k_b, k_c) * se:
        return REGRESSION
    if log_ratio + rates.miss_quantile(k_b, k_c) * se < math.log1p(detect):
        return CLEAR
    return OPEN


def rounds_to_decide(
    spread: float | None, log_ratio: float, k: int, floor: float, detect: float, rates: ErrorRates
) -> int | None:
    """The fewest processes a side (at least ``k``) at which a point whose processes spread
    ``spread`` (σ̂, in log) and whose ratio stays at ``log_ratio`` would be decided; None when
    more than MOST_ROUNDS would be needed. An estimate: both numbers are measured from the
    rounds so far."""
    if spread is None:
        return k

    def decided(count: int) -> bool:
        se = median_difference_se(spread, count, count)
        return outcome(log_ratio, se, count, count, floor, detect, rates) != OPEN

    # More processes only narrow the interval (a smaller standard error and smaller quantiles):
    # the first count that decides is found by doubling, then halving the gap.
    low, high = max(k, 1), max(k, 1)
    while not decided(high):
        if high >= MOST_ROUNDS:
            return None
        low, high = high + 1, min(2 * high, MOST_ROUNDS)
    while low < high:
        middle = (low + high) // 2
        low, high = (low, middle) if decided(middle) else (middle + 1, high)
    return high


def t_quantile(probability: float, df: float) -> float:
    """x with P(T > x) = ``probability`` for Student's t with ``df`` degrees of freedom."""
    return _t_quantile(float(probability), round(float(df), 6))


@lru_cache(maxsize=4096)
def _t_quantile(probability: float, df: float) -> float:
    if not 0.0 < probability < 0.5:
        raise ValueError(f"a tail probability in (0, 0.5) is needed, not {probability}")
    low, high = 0.0, 1.0
    while t_tail(high, df) > probability:
        high *= 2.0
    for _ in range(200):  # bisection: the tail falls monotonically in x
        middle = 0.5 * (low + high)
        if t_tail(middle, df) > probability:
            low = middle
        else:
            high = middle
        if high - low <= 1e-9 * high:
            break
    return 0.5 * (low + high)


def t_tail(x: float, df: float) -> float:
    """P(T > x) for Student's t with ``df`` degrees of freedom, x ≥ 0: half the regularized
    incomplete beta I_{df/(df+x²)}(df/2, 1/2)."""
    return 0.5 * _incomplete_beta(df / 2.0, 0.5, df / (df + x * x))


def _incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), by its continued fraction (Lentz)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x > (a + 1.0) / (a + b + 2.0):  # the fraction converges fast only below this: use symmetry
        return 1.0 - math.exp(log_front) * _beta_fraction(b, a, 1.0 - x) / b
    return math.exp(log_front) * _beta_fraction(a, b, x) / a


def _beta_fraction(a: float, b: float, x: float) -> float:
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    result = d
    for m in range(1, 500):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            result *= c * d
        if abs(c * d - 1.0) < 1e-14:
            break
    return result
