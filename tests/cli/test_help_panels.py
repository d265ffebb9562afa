"""run's and decode's --help: every option shown in a named panel, none left in Typer's
catch-all "Options" (no device: reads the commands' registrations)."""

from __future__ import annotations

import pytest
import typer.main

from linbench.cli import app
from linbench.cli.fleet_options import PANEL as SEVERAL_GPUS
from linbench.cli.help_panels import MEASUREMENT, OUTPUT, SERVING, SHAPES, WHAT

PANELS = {
    "run": [WHAT, SHAPES, MEASUREMENT, OUTPUT, SEVERAL_GPUS],
    "decode": [WHAT, SHAPES, MEASUREMENT, SERVING, OUTPUT],
}


@pytest.mark.parametrize("command", sorted(PANELS))
def test_every_shown_option_is_in_one_of_the_command_s_panels(command: str) -> None:
    params = typer.main.get_command(app).commands[command].params  # type: ignore[attr-defined]
    shown = [p for p in params if not getattr(p, "hidden", False) and p.name != "help"]
    loose = [p.opts[0] for p in shown if getattr(p, "rich_help_panel", None) is None]
    assert not loose, f"{command} --help shows {loose} under no panel: declare them with a help_panels option"
    used = {p.rich_help_panel for p in shown}  # type: ignore[attr-defined]
    assert used == set(PANELS[command])
    assert len(shown) > 30  # the panels group many options, not a handful


def test_run_s_help_shows_each_panel_with_its_options() -> None:
    from typer.testing import CliRunner

    text = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "200"}).output
    for panel in PANELS["run"]:
        assert f"─ {panel} ─" in text
    assert text.index("─ Shapes ─") < text.index("--seq") < text.index("─ Measurement ─") < text.index("--budget-s")
