"""Points whose two sides ran different Triton configs, kernel by kernel (device: none; run
folders written from formulas)."""

from __future__ import annotations

from pathlib import Path

from synthetic_processes import write_process_run
from synthetic_runs import series

from linbench.gate.compare import Thresholds, compare_runs
from linbench.gate.configs import config_changes, config_lines
from linbench.report.load import read_single_run

GPU = {"device": "cuda:0", "device_name": "Test GPU"}


def _run(folder: Path, configs: dict[int, str | None]) -> Path:
    rows = series("gated-deltanet", "fla", lambda s: 0.001 * s, seqs=tuple(configs), **GPU)
    for row in rows:
        row["triton_configs"] = configs[row["seq"]]
    return write_process_run(folder, rows)


def test_only_the_kernels_that_ran_other_configs_are_named(tmp_path: Path) -> None:
    base = _run(tmp_path / "base", {1024: "h: BV=32 warps=4 stages=2;o: BV=64 warps=4 stages=3", 2048: "h: BV=32"})
    cur = _run(tmp_path / "cur", {1024: "h: BV=64 warps=8 stages=3;o: BV=64 warps=4 stages=3", 2048: "h: BV=32"})
    runs = read_single_run(base), read_single_run(cur)
    (change,) = config_changes(*runs, compare_runs(*runs, Thresholds()))
    assert change.key["seq"] == 1024 and change.verdict == "same"
    assert change.kernels == (("h", "BV=32 warps=4 stages=2", "BV=64 warps=8 stages=3"),)
    assert config_lines([change])[0].startswith("1 other point(s) ran other Triton configs")


def test_a_kernel_that_ran_two_configs_or_only_on_one_side_is_named(tmp_path: Path) -> None:
    base = _run(tmp_path / "base", {1024: "h: BV=32;h: BV=64"})
    cur = _run(tmp_path / "cur", {1024: "h: BV=32;o: BV=16"})
    runs = read_single_run(base), read_single_run(cur)
    (change,) = config_changes(*runs, compare_runs(*runs, Thresholds()))
    assert change.kernels == (("h", "BV=32 | BV=64", "BV=32"), ("o", "", "BV=16"))
    assert "o not run → BV=16" in change.describe()


def test_a_run_that_recorded_no_configs_is_not_compared_on_them(tmp_path: Path) -> None:
    base = _run(tmp_path / "base", {1024: None})
    cur = _run(tmp_path / "cur", {1024: "h: BV=32"})
    runs = read_single_run(base), read_single_run(cur)
    assert config_changes(*runs, compare_runs(*runs, Thresholds())) == []
