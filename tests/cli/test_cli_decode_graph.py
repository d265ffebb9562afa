"""``linbench decode --cuda-graph``: refused off CUDA; on CUDA every decoder's step is replayed."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from cli_helpers import Invoke, assert_usage_error

TINY = ("--context", "64,128", "--heads", "2", "--dim", "16", "--tokens", "4")


def test_cuda_graph_on_cpu_is_refused_with_one_line_and_no_folder(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke("decode", "--variant", "cosine", *TINY, "--device", "cpu", "--cuda-graph", "--out", tmp_path)
    assert_usage_error(result, "--cuda-graph", "CUDA device")
    assert not tmp_path.exists() or not any(tmp_path.iterdir())


@pytest.mark.cuda
def test_cuda_graph_times_every_decoder_step_as_a_replay(invoke: Invoke, tmp_path: Path) -> None:
    variants = ("--variant", "cosine,linear,cosformer,heinsen")
    result = invoke("decode", *variants, *TINY, "--device", "cuda", "--cuda-graph", "--out", tmp_path)
    assert result.exit_code == 0, result.output
    (folder,) = tmp_path.iterdir()
    with (folder / "results.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 2 * 6 and all(row["status"] == "ok" for row in rows)
    for row in rows:
        where = f"{row['variant']}:{row['impl']} at {row['context']}: {row['error']}"
        assert row["cuda_graph"] == "True", where
        # A time, not a comparison with the eager one: timing noise must not fail a test.
        assert 0 < float(row["device_ms"]) < float("inf"), where
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["sweep"]["settings"]["cuda_graph"] is True
