"""Sequential judgement (CPU, pure arithmetic): Student t's quantiles without scipy, when a
point's verdict is decided either way, and the rounds a point would need."""

from __future__ import annotations

import math

import pytest

from linbench.gate.rule import TimeRule, judge
from linbench.gate.sequential import CLEAR, OPEN, REGRESSION, ErrorRates, outcome, rounds_to_decide, t_quantile
from linbench.results.protocol import ProcessProtocol

RATES = ErrorRates()


@pytest.mark.parametrize(
    ("probability", "df", "expected"),
    # scipy.stats.t.isf(probability, df), to the digits shown
    [
        (0.01, 3.0, 4.540703),
        (1e-3, 10.0, 4.143700),
        (1e-5, 15.0, 6.108868),
        (0.025, 1e6, 1.959966),
        (0.1, 1.0, 3.077684),
    ],
)
def test_t_quantiles_match_the_tables(probability: float, df: float, expected: float) -> None:
    assert t_quantile(probability, df) == pytest.approx(expected, rel=1e-5)


def test_few_processes_need_far_more_standard_errors_than_many() -> None:
    few, many = RATES.alarm_quantile(5, 5), RATES.alarm_quantile(50, 50)
    assert few > 3 * many and many > 4.0  # a MAD from 10 processes is itself far from sure


def test_a_point_is_a_regression_cleared_or_open_by_its_interval() -> None:
    se = 0.01
    assert outcome(math.log(1.30), se, 20, 20, 0.05, 0.30, RATES) == REGRESSION
    assert outcome(math.log(1.03), se, 20, 20, 0.05, 0.30, RATES) == CLEAR  # under the floor: not failed
    assert outcome(math.log(1.25), se, 20, 20, 0.05, 0.30, RATES) == REGRESSION
    assert outcome(math.log(1.25), 0.05, 20, 20, 0.05, 0.30, RATES) == OPEN  # could be +30%, could be noise
    assert outcome(math.log(0.7), 0.05, 20, 20, 0.05, 0.30, RATES) == CLEAR  # faster: no +30% there


def test_the_rounds_needed_grow_with_the_spread_and_a_decided_point_needs_none_more() -> None:
    quiet, noisy = rounds_to_decide(0.01, 0.0, 3, 0.05, 0.30, RATES), rounds_to_decide(0.1, 0.0, 3, 0.05, 0.30, RATES)
    assert quiet is not None and noisy is not None and quiet < noisy
    assert rounds_to_decide(0.01, 0.0, 40, 0.05, 0.30, RATES) == 40
    assert rounds_to_decide(5.0, 0.2, 3, 0.05, 0.30, RATES) is None  # more than anyone would run


def test_the_rule_judges_a_run_measured_until_decided_by_its_interval_not_its_spread() -> None:
    """The spread rule calls 20 processes spread 5% each noisy when fewer than 20 and more than 2%
    apart; until decided, 12 such processes are judged, and a point still open is noisy."""
    spread = [10.0 * math.exp(0.05 * ((i % 5) - 2) / 2) for i in range(12)]
    decided = TimeRule(protocol=ProcessProtocol.rounds(3, 100))
    by_spread = TimeRule(protocol=ProcessProtocol.of(5, 20))
    assert judge(spread, spread, by_spread).verdict == "noisy"
    same = judge(spread, spread, decided)
    assert (same.verdict, same.decision) == ("same", CLEAR)
    slower = judge(spread, [t * 1.3 for t in spread], decided)
    assert (slower.verdict, slower.decision) == ("regression", REGRESSION)
    wide = [10.0, 14.0, 8.0, 12.5]
    assert judge(wide, [t * 1.2 for t in wide], decided).verdict == "noisy"


def test_a_few_widely_spread_processes_are_open_not_an_error() -> None:
    """3 processes a side spread by a factor of 3: c·SE passes e^700, the noise is unbounded."""
    decided = TimeRule(protocol=ProcessProtocol.rounds(3, 100))
    found = judge([1.0, 3.0, 9.0], [1.0, 3.0, 9.0], decided)
    assert (found.verdict, found.decision, found.noise) == ("noisy", OPEN, math.inf)
