"""The package's floors and import rules (pyproject.toml's ``[tool.importlinter]``) hold, and an
import planted against them breaks them (device: none; import-linter reads the sources).

One copy of the package under tmp_path holds one planted import per rule, each inside a
function, so it also shows that a lazy import counts as much as one at the top of a file. One
lint of that copy proves the wiring: every contract breaks, each on its own plant. (A copy per
plant, one lint each, tested import-linter more than linbench, at a lint and a package copy a
case.)
"""

from __future__ import annotations

import os
import re
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
PLANTED = "\n\ndef _planted_{n}() -> None:\n    {line}  # noqa\n"
# Each plant: the module it goes in, the import, the contract it breaks, and what the report
# of that contract names for it.
PLANTS = [
    # An arrow up the floors: measurement importing the runner.
    (
        "measure/timer.py",
        "from linbench.runner import plan",
        "floors",
        "linbench.measure.timer -> linbench.runner.plan",
    ),
    # Siblings on one floor stay apart: a report importing the doctor command.
    (
        "report/render.py",
        "from linbench.doctor import checks",
        "floors",
        "linbench.report.render -> linbench.doctor.checks",
    ),
    # A new room must be given a floor.
    ("newroom.py", "from linbench import units", "floors", "- linbench.newroom"),
    ("report/render.py", "import torch", "reading-side", "linbench.report.render -> torch"),
    (
        "runner/plan.py",
        "from linbench.doctor import checks",
        "runner-apart",
        "linbench.runner.plan -> linbench.doctor.checks",
    ),
    # check/'s own floors: the closeness rules never use the gate that uses them.
    (
        "check/closeness.py",
        "from linbench.check import correctness",
        "check-floors",
        "linbench.check.closeness -> linbench.check.correctness",
    ),
    ("machine/facts.py", "from linbench.variants import registry", "measurement", "linbench.machine.facts -> "),
    ("sweep/points.py", "from linbench.variants import registry", "sweep-plans", "linbench.sweep.points -> "),
]


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` on the package under ``root``, with the contracts of its pyproject.toml."""
    env = {**os.environ, "PYTHONPATH": str(root)}  # the package under root, not an installed one
    argv = [sys.executable, "-c", LINT, "--no-cache", "--no-logo", "--config", str(root / "pyproject.toml")]
    return subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True, timeout=300, check=False)


def planted_copy(root: Path) -> Path:
    """A copy of the package and its pyproject.toml under ``root`` with every plant of PLANTS."""
    shutil.copytree(ROOT / "linbench", root / "linbench", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    for n, (module, line, _, _) in enumerate(PLANTS):
        target = root / "linbench" / module
        text = target.read_text() if target.exists() else '"""A room no floor was given."""\n'
        target.write_text(text + PLANTED.format(n=n, line=line))
    return root


def broken_sections(report: str) -> dict[str, str]:
    """The report's "Broken contracts" part, by contract name: what each names as breaking it."""
    broken = report.split("Broken contracts\n----------------\n", 1)[-1]
    parts = re.split(r"^(\S.*)\n-+\n", broken, flags=re.MULTILINE)
    return {name.strip(): body for name, body in zip(parts[1::2], parts[2::2], strict=True)}


@pytest.fixture(scope="module")
def planted_report(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
    return lint_imports(planted_copy(tmp_path_factory.mktemp("planted")))


def test_every_contract_is_kept() -> None:
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_every_contract_has_a_plant() -> None:
    assert {contract for _, _, contract, _ in PLANTS} == set(CONTRACTS)


@pytest.mark.parametrize(("module", "line", "contract", "named"), PLANTS, ids=[f"{p[2]}:{p[0]}" for p in PLANTS])
def test_a_planted_import_breaks_its_contract(
    planted_report: subprocess.CompletedProcess[str], module: str, line: str, contract: str, named: str
) -> None:
    assert planted_report.returncode == 1, planted_report.stdout + planted_report.stderr
    assert f"{CONTRACTS[contract]} BROKEN" in planted_report.stdout.splitlines(), planted_report.stdout
    assert named in broken_sections(planted_report.stdout)[CONTRACTS[contract]], planted_report.stdout
