"""Series in run order, split where the environment changed, each segment on one statistic."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from history_runs import write_history

from linbench.history.observations import Environment, of_folders
from linbench.history.series import build, environment_change
from linbench.history.verdict import Options, judge


def test_a_series_is_ordered_by_commit_time_and_split_where_torch_changed(tmp_path: Path) -> None:
    runs = write_history(tmp_path, 4, meta_changes={3: {"torch": "2.14.0+cpu"}})
    shuffled = of_folders([runs[2], runs[0], runs[3], runs[1]])
    series = build(shuffled)
    assert series and all(len(s.segments) == 2 for s in series)
    first, second = series[0].segments
    assert [o.run for o in first.observations] == [runs[0].name, runs[1].name]
    assert second.split_reason == "torch 2.13.0+cpu → 2.14.0+cpu"
    assert first.statistic == second.statistic


def test_ceilings_split_only_past_their_ratio() -> None:
    base = Environment(device_name="x", copy_gb_per_s=10.0)
    assert environment_change(base, Environment(device_name="x", copy_gb_per_s=12.0)) is None
    assert environment_change(base, Environment(device_name="x", copy_gb_per_s=20.0)) == "copy_gb_per_s 10 → 20"
    assert environment_change(base, Environment(device_name="y")) == "device_name x → y"


@pytest.mark.skipif(
    importlib.util.find_spec("otava") is None, reason="the history extra (Apache Otava) is not installed"
)
def test_a_step_at_a_driver_change_is_a_split_not_a_change(tmp_path: Path) -> None:
    runs = write_history(
        tmp_path,
        12,
        step=1.5,
        step_from=7,
        point=("softmax", "sdpa", "2048"),
        meta_changes={1: {"driver_version": "570.1"}, 7: {"driver_version": "580.1"}},
    )
    # A floor past what three runs' median moves by at this noise (4.7% a run): the 1.5x step is
    # far past it, so only the split can keep it from being a change.
    history = judge(build(of_folders(runs)), Options(min_magnitude=0.2))
    assert not any(f.changed for f in history.findings)
    assert all(f.splits == ["driver 570.1 → 580.1"] for f in history.findings)
    assert history.status == 0
