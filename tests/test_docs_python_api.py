"""docs/python-api.md's sweep example runs as written (CPU, a real four-point sweep)."""

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
