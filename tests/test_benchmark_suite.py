"""The pytest-benchmark suite collects and passes (each benchmark run once, untimed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SUITE = Path(__file__).parents[1] / "suites" / "test_benchmark_attention.py"


def test_the_benchmark_suite_runs_every_variant() -> None:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(SUITE), "--benchmark-disable"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:]
    assert "5 passed" in result.stdout


def test_the_normal_test_run_does_not_collect_it() -> None:
    import tomllib

    config = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    assert config["tool"]["pytest"]["ini_options"]["testpaths"] == ["tests"]
