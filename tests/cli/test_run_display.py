"""A finished point's line says when one call made the host wait for the GPU (host_syncs), and
says nothing of it otherwise; no device is needed (rows as the runner writes them)."""

from __future__ import annotations

from typing import Any

import pytest

from linbench.cli.run_display import row_line


def _row(**cells: Any) -> dict[str, Any]:
    row = {"variant": "mamba2", "impl": "mamba-ssm", "mode": "fwd", "seq": 4096, "heads": 16, "status": "ok"}
    return row | {"time_ms": "1.5", "peak_bytes": "1048576", "tflops": "12.0"} | cells


def test_a_call_that_made_the_host_wait_says_so_with_its_count() -> None:
    line = row_line(_row(host_syncs="3"))
    assert "mamba2:mamba-ssm fwd" in line and "host waits for the GPU 3× a call: the time includes the host's" in line


@pytest.mark.parametrize("syncs", ["0", "", None])
def test_a_call_without_a_wait_or_without_a_count_says_nothing_of_it(syncs: Any) -> None:
    assert "host waits" not in row_line(_row(host_syncs=syncs))
