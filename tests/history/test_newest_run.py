"""The newest run is the one judged, whatever its points' statuses (CPU; simulated series, no run
folders): a point ok before and oom, timeout, mismatch, error or crashed in the newest run is a
regression; one it skipped or has no row for is inconclusive, named; a run whose points all
crashed is still the newest run; a point that left the suite before the run before the newest is
left out, named, not judged; a point never ok is no series."""

from __future__ import annotations

import importlib.util
from dataclasses import replace

import numpy as np
import pytest
from history_series import noisy, observations

from linbench.history.observations import Observation
from linbench.history.render import as_json, lines
from linbench.history.series import build
from linbench.history.verdict import INCONCLUSIVE, PASS, REGRESSION, History, Options, judge

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("otava") is None, reason="the history extra (Apache Otava) is not installed"
)

SERIES, NIGHTS = 6, 8
NEWEST = f"night-{NIGHTS - 1:02d}"


def _nights() -> list[Observation]:
    """Six flat, quiet series over eight nights: every one passes as it is."""
    return observations(noisy(0, SERIES, NIGHTS, 0.005))


def _seq(observation: Observation) -> int:
    return int(observation.key[8]) - 1000  # its series (history_series: seq 1000 + series)


def _with(found: list[Observation], status: str, series: set[int], nights: set[int]) -> list[Observation]:
    """``found`` with the rows of ``series`` on ``nights`` ended with ``status`` and no time
    (status "" drops them: no row at all)."""
    out = []
    for o in found:
        if _seq(o) in series and int(o.run[-2:]) in nights:
            if status:
                out.append(replace(o, status=status, cpu_ms=None))
        else:
            out.append(o)
    return out


def _judged(found: list[Observation]) -> History:
    return judge(build(found), Options())


def test_the_nights_as_they_are_pass() -> None:
    history = _judged(_nights())
    assert history.status == PASS and history.newest == NEWEST, lines(history)


@pytest.mark.parametrize("status", ["oom", "timeout", "mismatch", "error", "crashed"])
def test_points_ok_before_and_broken_in_the_newest_run_are_a_regression_named(status: str) -> None:
    history = _judged(_with(_nights(), status, {0, 1, 2, 3}, {NIGHTS - 1}))
    assert history.status == REGRESSION
    assert [f.broken for f in history.findings] == [status] * 4 + [None, None]
    text = "\n".join(lines(history))
    assert f"4 series: broken in the newest run, ok before: {status}: sim:chunked" in text and "and 1 more" in text
    assert text.endswith(", 4 broken in the newest run, 0 cannot judge the newest runs")
    assert [s["broken"] for s in as_json(history)["series"]] == [status] * 4


def test_a_point_still_broken_is_still_a_regression() -> None:
    history = _judged(_with(_nights(), "oom", {0}, {NIGHTS - 2, NIGHTS - 1}))
    assert history.status == REGRESSION and history.findings[0].broken == "oom"


def test_a_newest_run_whose_points_all_crashed_is_the_newest_run() -> None:
    history = _judged(_with(_nights(), "crashed", set(range(SERIES)), {NIGHTS - 1}))
    assert history.newest == NEWEST and len(history.runs) == NIGHTS
    assert lines(history)[0].endswith(f"newest {NEWEST})")
    assert history.status == REGRESSION and all(f.broken == "crashed" for f in history.findings)
    assert as_json(history)["newest"] == NEWEST


def test_a_point_the_newest_run_skipped_is_inconclusive_named() -> None:
    history = _judged(_with(_nights(), "skipped", {2}, {NIGHTS - 1}))
    assert history.status == INCONCLUSIVE
    assert history.findings[2].unjudged == "skipped in the newest run, ok before: not judged"
    assert any(line.startswith("  1 series: skipped in the newest run") and "S1002" in line for line in lines(history))


def test_a_point_the_newest_run_has_no_row_for_is_inconclusive_named() -> None:
    history = _judged(_with(_nights(), "", {1, 4}, {NIGHTS - 1}))
    assert history.status == INCONCLUSIVE and history.newest == NEWEST
    (line,) = [line for line in lines(history) if "not measured in the newest run" in line]
    assert line.startswith("  2 series:") and "S1001" in line and "S1004" in line
    assert [f.unjudged is not None for f in history.findings] == [False, True, False, False, True, False]


def test_a_point_that_left_the_suite_nights_ago_is_left_out_named_not_judged() -> None:
    history = _judged(_with(_nights(), "", {3}, {NIGHTS - 3, NIGHTS - 2, NIGHTS - 1}))
    assert history.status == PASS and history.findings[3].left_out
    (line,) = [line for line in lines(history) if "left the suite" in line]
    assert line.startswith("  1 series: not measured in the newest run nor in the run before it") and "S1003" in line
    assert [p["seq"] for p in as_json(history)["left_out"]] == ["1003"]


def test_a_point_never_ok_is_no_series() -> None:
    found = _nights()
    never = [replace(o, key=(*o.key[:8], "9999", *o.key[9:]), status="oom", cpu_ms=None) for o in found if _seq(o) == 0]
    history = _judged(found + never)
    assert history.status == PASS and len(history.findings) == SERIES


def test_only_the_newest_run_decides_a_point_is_missing() -> None:
    """A point with no row in one earlier night and ok in the newest is judged as ever."""
    levels = noisy(0, SERIES, NIGHTS, 0.005)
    history = _judged(_with(observations(levels), "", {0}, {3}))
    assert history.status == PASS and history.findings[0].current
    assert np.isclose(history.findings[0].series.segments[0].values[-1], levels[0, -1])
