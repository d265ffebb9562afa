"""report and compare say when a run was measured on a busy machine (meta.json's load samples)."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import Invoke
from synthetic_runs import series, write_run

BUSY = {
    "cores": 2,
    "samples": [
        {"busy": False, "load_avg": [0.4, 0.4, 0.4], "busy_processes": []},
        {
            "busy": True,
            "load_avg": [3.1, 2.0, 1.0],
            "busy_processes": [{"name": "stress", "pid": 42, "cpu_percent": 99}],
        },
    ],
}


def _run(folder: Path, load: dict | None) -> Path:
    rows = series("cosine", "chunked", lambda s: s / 1000) + series("softmax", "sdpa", lambda s: (s / 1000) ** 2)
    path = write_run(folder, rows)
    if load is not None:
        meta_file = path / "meta.json"
        meta = json.loads(meta_file.read_text())
        meta_file.write_text(json.dumps(meta | {"load": load}))
    return path


def test_report_warns_about_a_busy_run_in_every_text_format(invoke: Invoke, tmp_path: Path) -> None:
    busy = _run(tmp_path / "busy", BUSY)
    for fmt in ("table", "md"):
        result = invoke("report", busy, "--format", fmt)
        assert result.exit_code == 0, result.output
        assert "the machine was busy during this run" in result.stdout and "stress (pid 42)" in result.stdout


def test_report_of_a_quiet_or_unrecorded_run_has_no_warning(invoke: Invoke, tmp_path: Path) -> None:
    quiet = {"cores": 2, "samples": [{"busy": False, "load_avg": [0.1, 0.1, 0.1]}]}
    for name, load in (("quiet", quiet), ("unrecorded", None)):
        result = invoke("report", _run(tmp_path / name, load))
        assert result.exit_code == 0 and "busy" not in result.stdout, result.output


def test_compare_names_the_run_that_was_busy(invoke: Invoke, tmp_path: Path) -> None:
    baseline, current = _run(tmp_path / "base", None), _run(tmp_path / "cur", BUSY)
    result = invoke("compare", baseline, current)
    assert result.exit_code == 4, result.output  # runs of one process per point: inconclusive
    assert "warning: current: the machine was busy" in result.stdout
    assert "warning: baseline" not in result.stdout
    payload = json.loads(invoke("compare", baseline, current, "--json").stdout)
    assert len(payload["load_warnings"]) == 1 and payload["load_warnings"][0].startswith("warning: current")
