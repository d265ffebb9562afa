"""Every command the CLI registers is in the README's command table and in docs/cli.md's (no
device: reads files and the command group's registrations)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from linbench.cli import app

ROOT = Path(__file__).parents[1]
# A table row that opens with a command: "| `linbench NAME ...` |".
ROW = re.compile(r"^\| `linbench ([a-z-]+)[^`]*` \|", re.MULTILINE)
COMMANDS = sorted(command.name for command in app.registered_commands if command.name)


def test_the_command_group_registers_commands() -> None:
    assert len(COMMANDS) >= 10 and "merge" in COMMANDS


@pytest.mark.parametrize("page", ["README.md", "docs/cli.md"])
def test_every_registered_command_has_a_row_in_the_page_s_table(page: str) -> None:
    listed = set(ROW.findall((ROOT / page).read_text()))
    assert not set(COMMANDS) - listed, f"{page} has no row for {sorted(set(COMMANDS) - listed)}"
    assert not listed - set(COMMANDS), f"{page} lists commands that do not exist: {sorted(listed - set(COMMANDS))}"
