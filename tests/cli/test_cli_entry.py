"""The CLI starts without torch and answers ``--help`` and ``--version`` from any entry point."""

from __future__ import annotations

import subprocess
import sys

import pytest

from linbench import __version__

# Runs the console-script entry point in a fresh interpreter, then checks what it imported.
NO_TORCH = """
import sys
from linbench.cli import main
sys.argv = ["linbench", *sys.argv[1:]]
try:
    main()
except SystemExit as exc:
    assert exc.code in (0, None), f"exit status {exc.code}"
assert "torch" not in sys.modules, "torch was imported"
"""


def run_python(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.parametrize(
    "args", [["--help"], ["list", "--help"], ["check", "--help"], ["run", "--help"], ["merge", "--help"], ["--version"]]
)
def test_help_and_version_do_not_import_torch(args: list[str]) -> None:
    result = run_python("-c", NO_TORCH, *args)
    assert result.returncode == 0, result.stderr
    assert ("Usage" in result.stdout) != (args == ["--version"])


def test_version_prints_the_package_version() -> None:
    result = run_python("-c", NO_TORCH, "--version")
    assert result.stdout.strip() == f"linbench {__version__}"


def test_python_dash_m_runs_the_cli_under_its_own_name() -> None:
    result = run_python("-m", "linbench", "--help")
    assert result.returncode == 0, result.stderr
    assert "Usage: linbench" in result.stdout
    assert "list" in result.stdout and "check" in result.stdout


def test_no_arguments_shows_help() -> None:
    result = run_python("-m", "linbench")
    assert "Usage: linbench" in result.stdout + result.stderr
