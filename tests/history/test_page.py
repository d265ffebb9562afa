"""The history page's figures (CPU; matplotlib's Agg): the labels of changes a few runs apart
are drawn in rows, never over each other, and none runs past the axes."""

from __future__ import annotations

import importlib.util

import pytest
from history_series import noisy, observations

from linbench.history.page import label_rows, plot
from linbench.history.series import build
from linbench.history.verdict import Options, judge

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("otava") is None, reason="the history extra (Apache Otava) is not installed"
)


def test_a_label_that_would_overlap_the_one_before_goes_up_a_row() -> None:
    assert label_rows([(0.0, 3.0), (1.0, 4.0), (2.0, 5.0), (3.5, 6.0), (10.0, 12.0)]) == [0, 1, 2, 0, 0]


def test_change_labels_three_runs_apart_do_not_overlap() -> None:
    import matplotlib.pyplot as plt

    levels = noisy(0, 1, 60, 0.01)
    levels[0, 20:] *= 1.3
    levels[0, 23:] *= 1.3
    levels[0, 26:] *= 0.7
    levels[0, 57:] *= 1.3  # the newest three: a label at the right edge
    (finding,) = judge(build(observations(levels)), Options()).findings
    fig = plot(finding)
    try:
        renderer = fig.canvas.get_renderer()
        (ax,) = fig.axes
        boxes = [t.get_window_extent(renderer=renderer) for t in ax.texts if "×" in t.get_text()]
        assert len(boxes) == 4
        assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1 :])
        frame = ax.get_window_extent(renderer=renderer)
        assert all(frame.x0 <= box.x0 and box.x1 <= frame.x1 for box in boxes)
    finally:
        plt.close(fig)
