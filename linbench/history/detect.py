"""Change points of one segment, found by Apache Otava (the ``apache-otava`` package, its
``otava.analysis.compute_change_points``: E-divisive means with a t-test significance check,
Fleming et al., "Hunter", ICPE 2023), and each change measured the way the gate reports one: the
median before and after, their ratio, and a 95% interval of that ratio from a bootstrap of the
runs on each side, where each side has INTERVAL_RUNS runs or more (a bootstrap of one or two
runs is not an interval). ``standing`` keeps the changes that stand: each with
MIN_RUNS_AFTER runs or more after it, past the floor once measured between its neighbours, so a
one-run spike is neither a piece of its own nor followed by a phantom improvement."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MISSING = (
    "linbench history needs Apache Otava: pip install scipy && pip install --no-deps apache-otava "
    "(or pip install -e '.[history]', which also brings Otava's database and chat clients)"
)
# Otava's defaults, kept: a window of 50 runs for the split step, p ≤ 0.001 to keep a change.
WINDOW = 50
MAX_PVALUE = 0.001
# The bootstrap of the ratio's interval: resamples, and a fixed seed so a page reads the same twice.
RESAMPLES = 2000
SEED = 20261127
# The fewest runs on each side of a change for its ratio to get an interval.
INTERVAL_RUNS = 3
# The fewest runs after a change for it to stand: fewer are a slow night or two, which the
# newest runs' own judgement (newest.py) weighs instead.
MIN_RUNS_AFTER = 3


class OtavaMissingError(ImportError):
    """Apache Otava is not installed."""


@dataclass(frozen=True)
class Change:
    """A change at run ``index`` of its segment (the first run after it)."""

    index: int
    before_median: float
    after_median: float
    ratio: float  # after / before: above 1 is slower
    low: float | None  # the 95% interval of the ratio; None with fewer than INTERVAL_RUNS on a side
    high: float | None
    pvalue: float
    runs_before: int = 0  # between this change and its neighbours
    runs_after: int = 0

    @property
    def regression(self) -> bool:
        return self.ratio > 1.0


def change_points(
    values: list[float], max_pvalue: float = MAX_PVALUE, min_magnitude: float = 0.0, window: int = WINDOW
) -> list[Change]:
    """The changes Otava finds in ``values`` (in run order), each measured between its neighbours."""
    try:
        from otava.analysis import compute_change_points
    except ImportError as exc:
        raise OtavaMissingError(MISSING) from exc
    if len(values) < 3:
        return []
    found, _weak = compute_change_points(
        list(values), window_len=window, max_pvalue=max_pvalue, min_magnitude=min_magnitude
    )
    indexes = [int(cp.index) for cp in found]
    bounds = [0, *indexes, len(values)]
    pvalues = [float(cp.stats.pvalue) for cp in found]
    return [
        measure_change(
            values[bounds[i] : bounds[i + 1]], values[bounds[i + 1] : bounds[i + 2]], bounds[i + 1], pvalues[i]
        )
        for i in range(len(indexes))
    ]


def standing(values: list[float], changes: list[Change], floor: float) -> list[Change]:
    """The changes of ``changes`` that stand in ``values``: each with MIN_RUNS_AFTER runs or
    more before the next change (or the end), and past ``floor`` once measured between the
    neighbours that remain. Dropping one merges its pieces, so the others are measured again
    until none is dropped: a spike's change up (one run after it) goes first, and its change
    back down, now measured against the runs before the spike, goes as within the floor."""
    kept = list(changes)
    while True:
        bounds = [0, *(c.index for c in kept), len(values)]
        measured = [
            measure_change(values[bounds[i] : bounds[i + 1]], values[bounds[i + 1] : bounds[i + 2]], c.index, c.pvalue)
            for i, c in enumerate(kept)
        ]
        short = [c for c in measured if c.runs_after < MIN_RUNS_AFTER]
        drop = short[:1] or [c for c in measured if abs(c.ratio - 1.0) <= floor][:1]
        if not drop:
            return measured
        kept = [c for c in kept if c.index != drop[0].index]


def measure_change(before: list[float], after: list[float], index: int, pvalue: float) -> Change:
    """The change at ``index`` between the runs ``before`` and ``after`` it."""
    b, a = np.asarray(before, dtype=float), np.asarray(after, dtype=float)
    ratio = float(np.median(a) / np.median(b))
    low = high = None
    if b.size >= INTERVAL_RUNS and a.size >= INTERVAL_RUNS:
        rng = np.random.default_rng(SEED)
        boot_b = np.median(rng.choice(b, size=(RESAMPLES, b.size)), axis=1)
        boot_a = np.median(rng.choice(a, size=(RESAMPLES, a.size)), axis=1)
        low, high = (float(q) for q in np.percentile(boot_a / boot_b, [2.5, 97.5]))
    return Change(index, float(np.median(b)), float(np.median(a)), ratio, low, high, pvalue, b.size, a.size)
