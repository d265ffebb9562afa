"""`linbench compare` (and so `ab`) says where the two sides ran different Triton configs for a point,
and names a slower point that did, beside its verdict (device: none; run folders written from formulas)."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import Invoke
from synthetic_processes import planted, write_process_run
from synthetic_runs import series

GPU = {"device": "cuda:0", "device_name": "Test GPU"}
AT_1K = "chunk_fwd_kernel_h: BV=32 warps=4 stages=2;chunk_fwd_kernel_o: BK=64 BV=64 warps=4 stages=3"
AT_1K_OTHER = "chunk_fwd_kernel_h: BV=64 warps=8 stages=3;chunk_fwd_kernel_o: BK=64 BV=64 warps=4 stages=3"


def _rows(configs: dict[int, str]) -> list[dict]:
    rows = series("gated-deltanet", "fla", lambda s: 0.001 * s, seqs=(1024, 2048), **GPU)
    for row in rows:
        row["triton_configs"] = configs[row["seq"]]
    return rows


def test_two_runs_differing_only_in_a_recorded_config_say_so(invoke: Invoke, tmp_path: Path) -> None:
    same = {1024: AT_1K, 2048: AT_1K}
    base = write_process_run(tmp_path / "base", _rows(same))
    cur = write_process_run(tmp_path / "cur", _rows(same | {1024: AT_1K_OTHER}))
    result = invoke("compare", base, cur)
    assert result.exit_code == 0, result.output  # the same times: the verdict is the times'
    assert "1 other point(s) ran other Triton configs on the two sides" in result.stdout
    assert "chunk_fwd_kernel_h BV=32 warps=4 stages=2 → BV=64 warps=8 stages=3" in result.stdout
    assert "chunk_fwd_kernel_o" not in result.stdout.split("ran other Triton configs")[1]  # it ran the same
    report = json.loads(invoke("compare", base, cur, "--json").stdout)
    (differing,) = report["triton_configs_differ"]
    assert differing["seq"] == 1024 and differing["kernels"] == [
        ["chunk_fwd_kernel_h", "BV=32 warps=4 stages=2", "BV=64 warps=8 stages=3"]
    ]
    assert "Triton configs" not in invoke("compare", base, base).stdout


def test_a_regression_that_ran_other_configs_is_named_as_such(invoke: Invoke, tmp_path: Path) -> None:
    base = write_process_run(tmp_path / "base", _rows({1024: AT_1K, 2048: AT_1K}))
    slower = planted(_rows({1024: AT_1K_OTHER, 2048: AT_1K}), 0, time_ms=1.3)
    result = invoke("compare", base, write_process_run(tmp_path / "cur", slower))
    assert result.exit_code == 1, result.output
    assert "1 slower or regressed point(s) ran other Triton configs" in result.stdout
    assert "may be the autotuner's choice, not the code" in result.stdout
