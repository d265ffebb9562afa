"""The verdict on a history's newest runs (CPU; simulated series, no run folders): a step that
stays is a regression when the evidence says so and inconclusive otherwise, never a pass; a
change needs runs after it; a one-night spike is neither its own piece nor followed by an
improvement; no interval from one or two runs; the false-alarm level is the suite's."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from history_series import commit_of, noisy, observations

from linbench.history.detect import Change, measure_change, standing
from linbench.history.render import interval_text, lines
from linbench.history.series import build
from linbench.history.verdict import INCONCLUSIVE, PASS, REGRESSION, Options, judge

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("otava") is None, reason="the history extra (Apache Otava) is not installed"
)


def _judged(levels: np.ndarray, **options: object):  # type: ignore[no-untyped-def]
    return judge(build(observations(levels)), Options(**options))  # type: ignore[arg-type]


def test_a_step_that_stays_in_noisy_nights_is_inconclusive_never_a_pass() -> None:
    """Eight nights at 20% noise, +30% from night 6 on: not evidence enough to page, and no pass."""
    for seed in range(3):
        levels = noisy(seed, 6, 8, 0.20)
        levels[0, 5:] = np.exp(np.log(levels[0, 5:]) * 0.1) * 1.6  # well past the floor, every night
        history = _judged(levels)
        assert history.status in (REGRESSION, INCONCLUSIVE)
        assert history.findings[0].recent_regression is not None or history.findings[0].unjudged


def test_a_step_that_stays_in_quiet_nights_is_named_at_its_first_night() -> None:
    levels = noisy(0, 10, 15, 0.02)
    levels[3, 12:] *= 1.30
    history = _judged(levels)
    assert history.status == REGRESSION
    (finding,) = [f for f in history.findings if f.recent_regression is not None]
    change = finding.recent_regression
    assert finding is history.findings[3] and finding.segments[-1].run_at(change.index).commit == commit_of(12)


def test_a_change_needs_three_runs_after_it_and_two_are_not_yet_a_regression() -> None:
    levels = noisy(1, 5, 15, 0.02)
    levels[0, 13:] *= 1.30  # two nights
    history = _judged(levels)
    assert history.status == INCONCLUSIVE and "not yet evidence" in (history.findings[0].unjudged or "")
    assert not history.findings[0].changed


def test_a_one_night_spike_is_no_piece_of_its_own_and_no_improvement_follows() -> None:
    levels = noisy(2, 5, 30, 0.02)
    levels[0, 20] *= 1.6
    history = _judged(levels)
    assert history.status == PASS and not any(f.changed for f in history.findings)
    values = list(levels[0])
    spike = [measure_change(values[:20], values[20:21], 20, 1e-9), measure_change(values[20:21], values[21:], 21, 1e-9)]
    assert standing(values, spike, 0.05) == []


def test_no_interval_is_given_from_one_or_two_runs() -> None:
    change = measure_change([1.0, 1.01, 0.99, 1.0], [1.3, 1.31], 4, 1e-4)
    assert change.low is None and interval_text(change) == "no interval from 4 and 2 runs"
    full = measure_change([1.0, 1.01, 0.99, 1.0], [1.3, 1.31, 1.29], 4, 1e-4)
    assert full.low is not None and interval_text(full).startswith("95% ")


def test_flat_quiet_nights_pass_whatever_the_suite_size() -> None:
    """The false-alarm level is the suite's: 60 flat series at 2% pass, each at its share."""
    for seed in range(3):
        history = _judged(noisy(seed, 60, 30, 0.02), recent=12)
        assert history.status == PASS, lines(history)


def test_the_newest_night_alone_is_inconclusive_only_past_the_noise_of_the_nights_before() -> None:
    levels = noisy(3, 4, 15, 0.02)
    levels[0, 14] *= 1.5  # far past 2% nights
    assert _judged(levels).status == INCONCLUSIVE
    levels = noisy(3, 4, 15, 0.02)
    levels[0, 14] *= 1.06
    assert _judged(levels, min_magnitude=0.10).status == PASS  # under the floor: not news


def test_a_regression_reported_recent_nights_ago_is_not_reported_again() -> None:
    levels = noisy(4, 3, 30, 0.02)
    levels[0, 15:] *= 1.30
    history = _judged(levels)
    assert history.status == PASS and history.findings[0].changed  # found, standing, reported back then
    assert isinstance(next(c for p in history.findings[0].segments for c in p.changes), Change)
