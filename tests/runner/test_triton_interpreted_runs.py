"""Runs whose points run autotuned Triton kernels, on the CPU under Triton's interpreter, through
real worker processes: each point's configs chosen at its own length, none crossing points,
recorded in every row and process, and read back from the store by a later run.

The runs are one process of their own (tests/runner/triton_interpreted_runs.py: the interpreter
must be on before a kernel is defined and fla is first imported), made once for the module.
Skipped without fla-core or triton (``pip install -e '.[fla-cpu]'``).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SCRIPT = Path(__file__).with_name("triton_interpreted_runs.py")
MISSING = [name for name in ("fla", "triton") if importlib.util.find_spec(name) is None]
pytestmark = [
    pytest.mark.skipif(bool(MISSING), reason=f"not installed: {', '.join(MISSING)} (pip install -e '.[fla-cpu]')"),
    pytest.mark.slow,
    # About 50 s of CPU: extended. CI's suite proves the same watch on a small kernel (tests/measure/test_autotune.py).
    pytest.mark.extended,
]
# The autotuned kernels of fla-core 0.6.0's chunk_gated_delta_rule forward.
FLA_FORWARD_KERNELS = {
    "chunk_fwd_kernel_o",
    "chunk_gated_delta_rule_fwd_kernel_h_blockdim64",
    "chunk_gated_delta_rule_fwd_kkt_solve_kernel",
    "chunk_local_cumsum_scalar_kernel",
    "l2norm_fwd_kernel",
    "recompute_w_u_fwd_kernel",
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Every case of the script by name, run on the CPU (no GPU visible), its store of choices
    a folder of its own."""
    import json

    out = tmp_path_factory.mktemp("triton-runs")
    env = os.environ | {"CUDA_VISIBLE_DEVICES": "", "LINBENCH_AUTOTUNE_DIR": str(out / "store")}
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(out)], capture_output=True, text=True, env=env, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return {line["case"]: line for line in lines}


def _kernels(configs: str) -> dict[str, str]:
    return dict(entry.split(": ", 1) for entry in configs.split(";"))


def test_each_point_is_tuned_at_its_own_length_and_no_config_crosses_points(runs: dict[str, Any]) -> None:
    """The kernel's key leaves the length out: the gate and the 16-token point ran in the curve's
    worker before the 128-token point, and still each row ran the config chosen at its length."""
    rows = runs["plugin"]["rows"]
    assert rows["16"]["triton_configs"] == "_double: BLOCK=16 warps=1 stages=3"
    assert rows["128"]["triton_configs"] == "_double: BLOCK=64 warps=2 stages=3"
    assert {row["triton_config_source"] for row in rows.values()} == {"tuned"}
    assert all(row["autotune_s"] is not None and row["autotune_s"] >= 0 for row in rows.values())
    processes = {str(p["seq"]): p["triton_configs"] for p in runs["plugin"]["processes"]}
    assert processes == {seq: row["triton_configs"] for seq, row in rows.items()}


def test_a_later_run_reads_each_point_s_choice_back_from_the_store(runs: dict[str, Any]) -> None:
    again, first = runs["plugin again"]["rows"], runs["plugin"]["rows"]
    assert {seq: row["triton_configs"] for seq, row in again.items()} == {
        seq: row["triton_configs"] for seq, row in first.items()
    }
    assert {(row["triton_config_source"], row["autotune_s"]) for row in again.values()} == {("cache", 0.0)}


def test_a_gated_run_of_fla_records_a_config_per_fla_kernel_per_row_and_process(runs: dict[str, Any]) -> None:
    fla = runs["fla"]
    assert set(fla["rows"]) == {"32", "64"}
    for record in (*fla["rows"].values(), *fla["processes"]):
        assert record["status"] == "ok", record["error"]
        kernels = _kernels(record["triton_configs"])
        assert set(kernels) == FLA_FORWARD_KERNELS
        assert all("warps=" in config and "stages=" in config for config in kernels.values())


def test_warm_tunes_each_point_once_before_a_run_which_reads_it_back(runs: dict[str, Any]) -> None:
    """linbench warm: each point tuned at its own length into the store, the estimate's tuning
    gone once it is there, a second warm finding it warm, and a run reading the choice back."""
    warmed = runs["warm"]
    assert warmed["warmed"] == {"32": "_double: BLOCK=16 warps=1 stages=3", "256": "_double: BLOCK=64 warps=2 stages=3"}
    assert warmed["cold_before"] == 0.0  # a plugin's impl: not known to be Triton's until it runs
    assert warmed["first"].startswith("warmed 2 point(s) in ") and "2 ran autotuned Triton kernels" in warmed["first"]
    assert warmed["second"].startswith("warmed 0 point(s) in ") and "2 already warm" in warmed["second"]
    row = runs["run after warm"]["rows"]["256"]
    assert (row["triton_configs"], row["triton_config_source"]) == ("_double: BLOCK=64 warps=2 stages=3", "cache")
