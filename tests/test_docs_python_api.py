"""docs/python-api.md's examples run as written (CPU: calls of the variants, and a real four-point sweep)."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from linbench.runner.pipeline import Outcome

DOC = Path(__file__).parents[1] / "docs" / "python-api.md"


def test_the_sweep_example_runs_and_leaves_a_run_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = DOC.read_text()
    section = text[text.index("## Running a sweep from Python") :]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "the sweep example is missing"
    monkeypatch.chdir(tmp_path)  # the example writes to ./results
    namespace: dict[str, object] = {}
    exec(compile(match.group(1), str(DOC), "exec"), namespace)  # the documented example itself
    outcome = namespace["outcome"]
    assert isinstance(outcome, Outcome)
    (folder,) = (tmp_path / "results").iterdir()
    assert outcome.status == "complete" and outcome.path.resolve() == folder.resolve()
    with (folder / "results.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 4 and {row["status"] for row in rows} == {"ok"}


def test_the_calling_example_runs_and_lists_every_variant() -> None:
    import linbench

    text = DOC.read_text()
    section = text[text.index("## Calling a variant") : text.index("## Running a sweep from Python")]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "the calling example is missing"
    namespace: dict[str, object] = {}
    exec(compile(match.group(1), str(DOC), "exec"), namespace)  # the documented example itself
    # Every registered variant is named in the example's list, and the gated call ran with its inputs.
    listed = re.search(r"list_variants\(\)  # (\[.*?\])", match.group(1), re.S)
    assert listed is not None
    names = re.findall(r"'([\w-]+)'", listed.group(1))
    assert set(names) == set(linbench.list_variants())
    assert "g=g, beta=beta" in match.group(1)
