"""CI runs what the README tells a newcomer to run (no device: reads files).

The README's set-up line (through uv's pip interface) and test command are the ones ``.ci/run``
runs in a fresh virtual environment, so a README that drifts from CI fails here instead of on a newcomer's machine.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parents[1]
README = (ROOT / "README.md").read_text()
CI_RUN = (ROOT / ".ci" / "run").read_text()


def _block_after(heading: str) -> str:
    """The first ```bash block under ``## heading``."""
    section = README.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"```bash\n(.*?)```", section, re.DOTALL)
    assert match, f"the README's {heading!r} section has no bash block"
    return match.group(1).strip()


def _ci_lines() -> list[str]:
    return [line.strip() for line in CI_RUN.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def test_ci_installs_linbench_as_the_readme_s_set_up_line_does() -> None:
    """CI installs with uv's pip interface (its speed), with the README's arguments to pip."""
    set_up = [part.strip() for part in _block_after("Set-up and the main job").split("&&")]
    install = next(part for part in set_up if part.startswith("pip install"))
    ci_install = next(line for line in _ci_lines() if line.startswith("uv pip install"))
    assert ci_install.replace(" --quiet", "").removeprefix("uv ") == install
    assert "python3 -m venv .venv" in set_up and "python3 -m venv .venv" in _ci_lines()


def test_ci_runs_the_readme_s_test_command() -> None:
    assert _block_after("Tests") in _ci_lines()
