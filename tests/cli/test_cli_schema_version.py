"""A run folder written by a newer linbench (its meta.json's schema_version above this one's)
is refused by every reader in one line naming both versions, exit 2; an older one is read
(device: cpu; synthetic runs, nothing measured)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import Invoke
from synthetic_runs import series, write_run

from linbench.results.schema import SCHEMA_VERSION

NEWER = 99


def _run(tmp_path: Path, version: int) -> Path:
    folder = write_run(tmp_path / str(version), series("cosine", "chunked", lambda s: s / 1000))
    meta = json.loads((folder / "meta.json").read_text())
    (folder / "meta.json").write_text(json.dumps(meta | {"schema_version": version}))
    return folder


@pytest.mark.parametrize("command", ["report", "plot", "compare", "resume"])
def test_a_run_from_a_newer_schema_is_refused_in_one_line_naming_both_versions(
    invoke: Invoke, tmp_path: Path, command: str
) -> None:
    newer = _run(tmp_path, NEWER)
    args = {
        "report": ("report", newer),
        "plot": ("plot", newer),
        "compare": ("compare", _run(tmp_path, SCHEMA_VERSION), newer),
        "resume": ("run", "--resume", newer),
    }[command]
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    (line,) = [line for line in result.stderr.splitlines() if line.strip()]
    assert line.startswith("linbench: error: ") and f"schema version {NEWER}" in line
    assert f"up to {SCHEMA_VERSION}" in line and "meta.json" in line


def test_a_run_from_an_older_schema_is_read(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke("report", _run(tmp_path, 1), "--json")
    assert result.exit_code == 0, result.output
