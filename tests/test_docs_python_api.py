"""docs/python-api.md's Python blocks run as written, every one, in order (CPU: calls of the
variants, then tiny real sweeps that the later blocks read back). A sweep is the point of the
page, so the test measures a few: 4-point sweeps at budget 0.05 s, and a 2-point decode."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import linbench
from linbench.results.loaded import LoadedRun
from linbench.runner.pipeline import Outcome

DOC = Path(__file__).parents[1] / "docs" / "python-api.md"


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


def test_every_python_block_runs_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = _blocks()
    assert len(blocks) == 5, "a block was added or removed: say here what it must leave behind"
    monkeypatch.chdir(tmp_path)  # the examples write to ./results
    namespace: dict[str, object] = {}
    for block in blocks:  # the documented examples themselves, sharing their names as a reader would
        exec(compile(block, str(DOC), "exec"), namespace)
    # The sweep left a run folder of typed rows, which the listener heard as Outcome.rows holds them.
    outcome = namespace["outcome"]
    assert isinstance(outcome, Outcome) and outcome.status == "complete"
    assert len(outcome.rows) == 4 and {row["status"] for row in outcome.rows} == {"ok"}
    assert all(row["causal"] is True and isinstance(row["time_ms"], float) for row in outcome.rows)
    assert namespace["left"] == () and namespace["decode"].status == "complete"  # type: ignore[attr-defined]
    # The loader read it back: the same rows, its processes, and a frame of them.
    run = namespace["run"]
    assert isinstance(run, LoadedRun) and run.rows == outcome.rows and run.left_out == []
    assert len(run.processes) == 4 and len(namespace["frame"]) == 4  # type: ignore[arg-type]


def test_the_calling_example_lists_every_variant_and_passes_the_gates() -> None:
    calling = _blocks()[0]
    listed = re.search(r"list_variants\(\)  # (\[.*?\])", calling, re.S)
    assert listed is not None
    names = re.findall(r"'([\w-]+)'", listed.group(1))
    assert set(names) == set(linbench.list_variants())
    assert "g=g, beta=beta" in calling
