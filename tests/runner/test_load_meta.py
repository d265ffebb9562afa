"""A run records the machine's load in meta.json: before its first point and after its last."""

from __future__ import annotations

import json
from pathlib import Path

from sweep_helpers import make_points, run_points


def test_meta_json_holds_load_samples_from_the_start_and_the_end(tmp_path: Path) -> None:
    run_points(tmp_path, make_points([("cosine", "chunked")], [64]))
    (folder,) = tmp_path.iterdir()
    section = json.loads((folder / "meta.json").read_text())["load"]
    whens = [s["when"] for s in section["samples"]]
    assert len(whens) >= 2 and whens[0] == "start" and whens[-1] == "end"
    for sample in section["samples"]:
        assert set(sample) >= {"at", "load_avg", "busy_processes", "busy", "window_s"}
        for process in sample["busy_processes"]:  # never linbench's own workers or fork server
            assert set(process) == {"pid", "name", "cpu_percent"}
    assert isinstance(section["busy"], bool) and section["cores"] >= 1 and "rule" in section
