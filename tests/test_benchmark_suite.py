"""The pytest-benchmark suite collects and passes (each benchmark run once, untimed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SUITE = Path(__file__).parents[1] / "suites" / "test_benchmark_attention.py"


def _run_suite(env: dict[str, str]) -> None:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(SUITE), "--benchmark-disable"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
    assert result.returncode == 0, result.stdout[-3000:]
    assert "5 passed" in result.stdout


def test_the_benchmark_suite_runs_every_variant() -> None:
    """On the CPU: the suite takes the GPU wherever one is, so the GPU is hidden from it."""
    _run_suite({**os.environ, "CUDA_VISIBLE_DEVICES": ""})


@pytest.mark.cuda
def test_the_benchmark_suite_runs_every_variant_on_cuda() -> None:
    _run_suite(dict(os.environ))


def test_the_normal_test_run_does_not_collect_it() -> None:
    import tomllib

    config = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    assert config["tool"]["pytest"]["ini_options"]["testpaths"] == ["tests"]
