"""``linbench run --cuda-graph`` (and a suite's ``cuda_graph = true``): refused off CUDA; on
CUDA every point is also timed as CUDA-graph replays."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from cli_helpers import Invoke, assert_usage_error

TINY = ("--seq", "256", "--heads", "2", "--dim", "16", "--budget-s", "0.05")


def _assert_no_folder(out: Path) -> None:
    assert not out.exists() or not any(out.iterdir())


def test_cuda_graph_on_cpu_is_refused_with_one_line_and_no_folder(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke("run", "--variant", "cosine:chunked", *TINY, "--device", "cpu", "--cuda-graph", "--out", tmp_path)
    assert_usage_error(result, "--cuda-graph", "CUDA device")
    _assert_no_folder(tmp_path)


def test_a_run_suite_takes_cuda_graph_and_is_refused_the_same_way_on_cpu(invoke: Invoke, tmp_path: Path) -> None:
    suite = tmp_path / "graph.toml"
    suite.write_text('variant = ["cosine:chunked"]\nseq = 256\ncuda_graph = true\n')
    out = tmp_path / "runs"
    result = invoke("run", "--suite", suite, "--no-against", "--device", "cpu", "--out", out)
    assert_usage_error(result, "--cuda-graph", "CUDA device")
    _assert_no_folder(out)


@pytest.mark.cuda
def test_cuda_graph_times_every_run_point_as_a_replay(invoke: Invoke, tmp_path: Path) -> None:
    variants = ("--variant", "cosine:chunked,heinsen:chunked", "--no-against", "--mode", "fwd,fwdbwd")
    result = invoke("run", *variants, *TINY, "--device", "cuda", "--cuda-graph", "--out", tmp_path)
    assert result.exit_code == 0, result.output
    (folder,) = tmp_path.iterdir()
    with (folder / "results.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 2 * 2 and all(row["status"] == "ok" for row in rows)
    for row in rows:
        where = f"{row['variant']}:{row['impl']} {row['mode']}: {row['error']}"
        assert row["cuda_graph"] == "True", where
        # A time, not a comparison with the eager one: timing noise must not fail a test.
        assert 0 < float(row["device_ms"]) < float("inf"), where
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["sweep"]["settings"]["cuda_graph"] is True
