"""The CLI starts without torch and answers ``--help`` and ``--version`` from any entry point.
No device: nothing is measured."""

from __future__ import annotations

import itertools
import re
import subprocess
import sys

import pytest

from linbench import __version__

# Runs the console-script entry point in a fresh interpreter, then checks what it imported.
NO_TORCH = """
import sys
import linbench.cli
from linbench.cli import main
linbench.cli.teardown_worth_skipping = lambda: False  # else os._exit once torch is loaded: no check
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


def _command_entries(help_text: str) -> tuple[dict[str, list[str]], int]:
    """Each command's summary lines in the Commands panel of ``--help``, and the width of the
    column they are wrapped in."""
    panel = [line.strip("│") for line in help_text.split("Commands")[1].splitlines() if line.startswith("│")]
    entries: dict[str, list[str]] = {}
    column, width, name = 0, 0, ""
    for body in panel:
        named = re.match(r" (\S+) +", body)
        if named:  # a command's first line: its name in the first column, the summary after it
            name, column = named.group(1), named.end()
            width = len(body) - column - 1  # the panel pads one space before its border
            entries[name] = []
        entries[name].append(body[column:].rstrip())
    return entries, width


@pytest.mark.parametrize("columns", ["80", "200"])
def test_the_command_list_wraps_each_summary_as_one_paragraph(columns: str) -> None:
    """A summary written over two source lines once kept its line break in the list: a short
    line, then the rest on the next."""
    import os

    from linbench.cli import app

    env = os.environ | {"COLUMNS": columns}
    result = subprocess.run(
        [sys.executable, "-m", "linbench", "--help"], capture_output=True, text=True, timeout=60, env=env, check=False
    )
    entries, width = _command_entries(result.stdout)
    for command in app.registered_commands:
        lines = entries[str(command.name)]
        doc = (command.callback.__doc__ if command.callback else "") or ""
        assert " ".join(lines) == " ".join(doc.split("\n\n")[0].split()), command.name
        for line, after in itertools.pairwise(lines):
            assert len(line) + 1 + len(after.split()[0]) > width, f"{command.name}: {line!r} broken short"
