"""The time rule on process medians: the noise between processes sets the threshold, the
floor keeps tiny shifts from failing, and points too noisy or too thin to judge say so."""

from __future__ import annotations

import math
import statistics
from statistics import NormalDist

import pytest

from linbench.gate.rule import TimeRule, judge
from linbench.results.protocol import ProcessProtocol

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
