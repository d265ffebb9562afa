"""The time rule on process medians (CPU, no device: numbers only): the noise between processes sets the threshold, the
floor keeps tiny shifts from failing, and points too noisy or too thin to judge say so."""

from __future__ import annotations

import math
import statistics
from statistics import NormalDist

import numpy as np
import pytest

from linbench.gate.rule import TimeRule, gross_bar, judge, processes_to_judge
from linbench.results.protocol import ENOUGH_SE, ENOUGH_THRESHOLD, ProcessProtocol, comparison_se

RULE = TimeRule()


def _medians(centre: float, offsets: tuple[float, ...]) -> list[float]:
    return [centre * math.exp(o) for o in offsets]


QUIET = (-0.002, -0.001, 0.0, 0.001, 0.002)  # 5 processes within 0.4%: settled
MODERATE = tuple(0.06 * NormalDist().inv_cdf((n + 0.5) / 20) for n in range(20))  # σ̂ ≈ 6%, 20 processes
NOISY = tuple(0.22 * NormalDist().inv_cdf((n + 0.5) / 20) for n in range(20))  # σ̂ ≈ 22%


def test_the_numbers_follow_the_documented_formulas() -> None:
    result = judge(_medians(10.0, MODERATE), _medians(10.0, MODERATE), RULE)
    spread = 1.4826 * statistics.median(abs(o) for o in MODERATE)  # pooled from both sides
    se = 1.2533 * spread * math.sqrt(1 / 20 + 1 / 20)
    assert result.spread == pytest.approx(spread)
    assert result.noise == pytest.approx(math.expm1(5 * se))
    assert result.threshold == pytest.approx(math.expm1(5 * se)) == pytest.approx(0.127, abs=0.001)
    assert result.verdict == "same" and result.ratio == pytest.approx(1.0) and result.settled


@pytest.mark.parametrize(
    ("offsets", "factor", "verdict"),
    [
        (QUIET, 1.10, "regression"),  # a quiet point: the 5% floor is the threshold
        (QUIET, 1.03, "slower"),  # measured (past the noise) but under the floor
        (QUIET, 1.0, "same"),
        (QUIET, 0.90, "faster"),
        (MODERATE, 1.30, "regression"),
        (MODERATE, 1.10, "same"),  # inside the 12.7% its processes' spread allows
        (NOISY, 1.50, "noisy"),  # its noise threshold passes 30%: never judged, never failed
        (NOISY, 1.0, "noisy"),
    ],
)
def test_verdicts(offsets: tuple[float, ...], factor: float, verdict: str) -> None:
    result = judge(_medians(2.0, offsets), _medians(2.0 * factor, offsets), RULE)
    assert result.verdict == verdict
    assert result.ratio == pytest.approx(factor)


def test_a_quiet_points_threshold_is_the_floor() -> None:
    result = judge(_medians(2.0, QUIET), _medians(2.0, QUIET), TimeRule(max_slowdown=0.05))
    assert result.threshold == pytest.approx(0.05) and result.noise < 0.01


def test_one_wild_process_is_no_alarm() -> None:
    wild = math.log(2.0)  # one process twice as slow
    # Among 5, it unsettles the point (the runner would have added processes): noisy.
    assert judge(_medians(1.0, QUIET), _medians(1.0, (*QUIET[:4], wild)), RULE).verdict == "noisy"
    # Among 20, the median of the process medians does not see it.
    assert judge(_medians(1.0, QUIET * 4), _medians(1.0, (*QUIET * 3, *QUIET[:4], wild)), RULE).verdict == "same"


def test_few_processes_that_disagree_are_noisy_however_small_their_spread_looks() -> None:
    # 5 processes spanning 8%: their MAD (σ̂ 3%) is too unreliable to judge 30% with.
    five = (-0.04, -0.02, 0.0, 0.02, 0.04)
    result = judge(_medians(1.0, five), _medians(1.3, five), RULE)
    assert result.verdict == "noisy" and not result.settled and result.noise < 0.30
    # The same spread in 20 processes (as the runner extends such a point) is judged.
    twenty = five * 4
    assert judge(_medians(1.0, twenty), _medians(1.3, twenty), RULE).verdict == "regression"
    # So is a side of 5 that agree within 2%, against 20 that do not.
    assert judge(_medians(1.0, QUIET), _medians(1.3, twenty), RULE).verdict == "regression"


def test_the_protocol_says_how_many_processes_are_trusted_and_judged() -> None:
    five = (-0.04, -0.02, 0.0, 0.02, 0.04)
    trusting = TimeRule(protocol=ProcessProtocol(trust_processes=5))
    assert judge(_medians(1.0, five), _medians(1.3, five), trusting).verdict == "regression"
    two = TimeRule(protocol=ProcessProtocol(min_to_judge=2))
    assert judge(_medians(1.0, QUIET[:2]), _medians(1.3, QUIET[:2]), two).verdict == "regression"


def test_fewer_than_three_processes_on_a_side_is_unverified_with_its_ratio() -> None:
    for base, cur in (([1.0], [2.0]), ([1.0, 1.0], _medians(2.0, QUIET)), (_medians(1.0, QUIET), [2.0, 2.0])):
        result = judge(base, cur, RULE)
        assert result.verdict == "unverified" and result.ratio == pytest.approx(2.0)
        assert result.noise is None and result.threshold is None


def test_a_higher_z_or_a_lower_noise_cap_is_stricter_about_judging() -> None:
    base, cur = _medians(1.0, MODERATE), _medians(1.3, MODERATE)
    assert judge(base, cur, TimeRule(noise_z=5)).verdict == "regression"
    assert judge(base, cur, TimeRule(noise_z=20)).verdict == "noisy"  # N = e^{20·SE} − 1 ≈ 61%
    assert judge(base, cur, TimeRule(max_noise=0.10)).verdict == "noisy"


# The other points of the comparison did not move (their median log ratio and spread 0).
STILL = TimeRule(gross_bar=0.0)


def test_a_gross_slowdown_of_steady_processes_fails_even_unverified() -> None:
    # One process a side, each steady within itself (p80/p20 1.1): 3x is no noise's doing.
    gross = judge([2.0], [6.0], STILL, within=1.1)
    assert gross.verdict == "regression" and gross.gross and gross.ratio == pytest.approx(3.0)
    # +30%, or 2x (tight processes were measured 1.87x apart), is not gross: still unjudged.
    assert judge([2.0], [2.6], STILL, within=1.1).verdict == "unverified"
    assert judge([2.0], [4.0], STILL, within=1.1).verdict == "unverified"
    # Processes unsteady within themselves, or of unknown steadiness, prove nothing.
    assert judge([2.0], [6.0], STILL, within=2.0).verdict == "unverified"
    assert judge([2.0], [6.0], STILL).verdict == "unverified"


def test_a_gross_slowdown_must_stand_out_from_how_far_the_other_points_moved() -> None:
    assert judge([2.0], [6.0], RULE, within=1.1).verdict == "unverified"  # no bar: too few points to tell
    assert judge([2.0], [6.0], TimeRule(gross_bar=math.log(4.0)), within=1.1).verdict == "unverified"
    # The bar: the points' median log ratio plus z of their spread (1.4826·MAD).
    ratios = [1.0, 1.1, 0.9, 1.0, 3.0]
    logs = [math.log(r) for r in ratios]
    mad = statistics.median(abs(x - statistics.median(logs)) for x in logs)
    assert gross_bar(ratios, 5.0) == pytest.approx(5 * 1.4826 * mad)
    assert gross_bar(ratios[:4], 5.0) is None  # fewer than 5 points: no spread to compare with
    scattered = [1.0, 3.0, 0.3, 10.0, 0.1, 2.0]  # a machine on which points move by 10x either way
    assert judge([2.0], [6.0], TimeRule(gross_bar=gross_bar(scattered, 5.0)), within=1.1).verdict == "unverified"


def test_a_gross_slowdown_of_noisy_points_fails_only_where_every_process_moved() -> None:
    base = _medians(1.0, NOISY)  # 20 processes spanning 0.52x..1.9x
    assert judge(base, _medians(1.5, NOISY), STILL, within=1.2).verdict == "noisy"
    slowest_base = max(base)
    cleared = [slowest_base * 2.6 * math.exp(o - min(NOISY)) for o in NOISY]
    result = judge(base, cleared, STILL, within=1.2)
    assert result.verdict == "regression" and result.gross
    # The same medians but one current process inside the baseline's range: not gross.
    overlapping = [slowest_base, *cleared[1:]]
    assert judge(base, overlapping, STILL, within=1.2).verdict == "noisy"


def test_a_judged_point_is_never_marked_gross() -> None:
    result = judge(_medians(1.0, QUIET), _medians(3.0, QUIET), STILL, within=1.1)
    assert result.verdict == "regression" and not result.gross


@pytest.mark.parametrize(
    ("spread", "expected"),
    [
        (None, 5),  # unverified: the gate's 5 processes
        (0.001, 20),  # quiet, but unsettled: as many as the protocol trusts whatever they span
        (0.10, 20),  # N ≈ 22% at 20 processes: 20 judge it
        (0.20, 46),  # 2·(5·1.2533·0.2 / log 1.3)² = 45.6
    ],
)
def test_processes_to_judge_a_point(spread: float | None, expected: int) -> None:
    assert processes_to_judge(spread, RULE) == expected
    if spread and expected > 20:  # with that many the noise threshold is within --max-noise
        se = 1.2533 * spread * math.sqrt(2 / expected)
        assert math.expm1(5 * se) <= RULE.max_noise


def test_the_rule_takes_arrays_as_it_takes_lists() -> None:
    """scripts/gate_simulation.py feeds it numpy arrays."""
    base, cur = np.asarray(_medians(2.0, QUIET)), np.asarray(_medians(6.0, QUIET))
    assert judge(base, cur, STILL, within=1.1).verdict == "regression"
    assert judge(np.asarray([2.0]), np.asarray([6.0]), STILL, within=1.1).gross


def test_a_point_the_protocol_settles_past_twenty_is_judged_within_its_promise() -> None:
    """The protocol extends a point past 20 until the standard error its processes give is at
    most ENOUGH_SE (results/protocol.py); two such sides get a threshold of ENOUGH_THRESHOLD at
    most, so a +30% change fails. NOISY's 22% spread stops being noisy at that count."""
    protocol = ProcessProtocol(5, 200)
    count = next(k for k in range(20, 200) if not protocol.extends(k, lambda k=k: _spread(0.22, k)))
    assert comparison_se(_spread(0.22, count)) <= ENOUGH_SE < comparison_se(_spread(0.22, count - 1))
    same = judge(_spread(0.22, count), _spread(0.22, count), RULE)
    assert same.verdict == "same" and same.threshold is not None and same.threshold <= ENOUGH_THRESHOLD + 1e-9
    assert math.expm1(RULE.noise_z * ENOUGH_SE) == pytest.approx(ENOUGH_THRESHOLD)
    slower = [t * 1.3 for t in _spread(0.22, count)]
    assert judge(_spread(0.22, count), slower, RULE).verdict == "regression"


def _spread(sigma: float, count: int) -> list[float]:
    """``count`` process times whose logs sit at the normal quantiles of spread ``sigma``."""
    return _medians(10.0, tuple(sigma * NormalDist().inv_cdf((n + 0.5) / count) for n in range(count)))
