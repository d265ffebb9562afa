"""Fakes for ab's command-line tests: what an A/B left in its temporary folder (conftest.py's
``ab_temp``), and round folders as linbench run writes them."""

from __future__ import annotations

from pathlib import Path

from result_rows import result_row

from linbench.ab.worktree import checkout_root, registered_worktrees
from linbench.results.store import RunStore


def left_behind(temp: Path) -> set[Path]:
    """What an A/B made in ``temp`` and left: a worktree there, as git knows it, and a
    temporary folder there."""
    trees = {tree for tree in registered_worktrees(checkout_root()) if tree.resolve().is_relative_to(temp.resolve())}
    return trees | set(temp.glob("linbench-ab-*"))


def write_rounds(out: Path, times: tuple[float, ...]) -> list[Path]:
    """Round folders as linbench run writes them, one ok point timed ``times[r]`` in round r,
    its repetitions within 1% (a quiet point)."""
    folders = []
    for index, time_ms in enumerate(times):
        store = RunStore.create(out / str(index), "round")
        row = result_row(1024, time_ms=time_ms) | {"device_name": "Test CPU", "samples": 10, "flops": 1e9}
        store.append(row | {"time_ms_p20": time_ms * 0.99, "time_ms_p80": time_ms * 1.01})
        store.write_meta({"status": "complete"})
        folders.append(store.path)
    return folders
