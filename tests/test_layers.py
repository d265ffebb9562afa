"""The package's floors and import rules (pyproject.toml's ``[tool.importlinter]``) hold, and an
import planted against them breaks them (device: none; import-linter reads the sources).

Each case plants one import in a copy of the package under tmp_path, inside a function, so it
also shows that a lazy import counts as much as one at the top of a file.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

pytest.importorskip("importlinter", reason="import-linter checks the floors: pip install -e '.[dev]'")

ROOT = Path(__file__).resolve().parents[1]
# Contract id -> the name lint-imports reports it by.
CONTRACTS = {
    contract["id"]: contract["name"]
    for contract in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
}
LINT = "from importlinter.cli import lint_imports_command; lint_imports_command()"
PLANTED = "\n\ndef _planted() -> None:\n    {line}  # noqa\n"


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` on the package under ``root``, with the contracts of its pyproject.toml."""
    env = {**os.environ, "PYTHONPATH": str(root)}  # the package under root, not an installed one
    argv = [sys.executable, "-c", LINT, "--no-cache", "--no-logo", "--config", str(root / "pyproject.toml")]
    return subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True, timeout=300, check=False)


def planted_copy(tmp_path: Path, module: str, line: str) -> Path:
    """A copy of the package and its pyproject.toml with ``line`` planted in a function of ``module``."""
    shutil.copytree(ROOT / "linbench", tmp_path / "linbench", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / "linbench" / module
    text = target.read_text() if target.exists() else '"""A room no floor was given."""\n'
    target.write_text(text + PLANTED.format(line=line))
    return tmp_path


def test_every_contract_is_kept() -> None:
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        # An arrow up the floors: measurement importing the runner.
        ("measure/timer.py", "from linbench.runner import plan", "floors"),
        # Siblings on one floor stay apart: a report importing the doctor command.
        ("report/render.py", "from linbench.doctor import checks", "floors"),
        # A new room must be given a floor.
        ("newroom.py", "from linbench import units", "floors"),
        ("report/render.py", "import torch", "reading-side"),
        ("runner/plan.py", "from linbench.doctor import checks", "runner-apart"),
        ("machine/facts.py", "from linbench.variants import registry", "measurement"),
        ("sweep/points.py", "from linbench.variants import registry", "sweep-plans"),
    ],
)
def test_a_planted_import_breaks_its_contract(tmp_path: Path, module: str, line: str, contract: str) -> None:
    result = lint_imports(planted_copy(tmp_path, module, line))
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"{CONTRACTS[contract]} BROKEN" in result.stdout.splitlines(), result.stdout
