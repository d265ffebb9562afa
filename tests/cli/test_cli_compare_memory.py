"""``linbench compare`` catches a planted +10% allocation in an impl, on two real CPU runs.

The impl holds its scores and their softmax at once (8 MiB at S=1k, H=1); the planted side
also holds a tensor of a tenth of that through the call: +0.8 MiB, within peak RSS's 2 MiB
floor, and caught because the CPU's memory figure is torch's count of what the call allocated.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from cli_helpers import linbench_argv

PLUGIN = """
import torch
from linbench import Impl, Variant, register_variant
from linbench.variants.flops import quadratic_flops

PLANTED_SHARE = {share}


def scores(q, k, v, *, causal):
    s = q @ k.transpose(-2, -1)
    extra = torch.ones(int(PLANTED_SHARE * 2 * s.numel()))  # held through the call
    out = s.softmax(-1) @ v
    del extra
    return out


register_variant(
    Variant(
        name="memplant",
        summary="softmax without a mask, planted with extra memory",
        impl_list=(Impl("scores", scores, "scores, then softmax", "O(s²d)", "O(s²)"),),
        reference="scores",
        param_specs=(),
        flop_formula=quadratic_flops,
        time_complexity="O(s²d)",
        memory_complexity="O(s²)",
    ),
    replace=True,
)
"""
RUN = ["--variant", "memplant:scores", "--no-against", "--seq", "1k", "--heads", "1", "--dim", "32"]
RUN += ["--device", "cpu", "--budget-s", "0.02", "--warmup-s", "0.02", "-q"]


def _run(tmp_path: Path, name: str, share: float) -> Path:
    plugin = tmp_path / f"{name}.py"
    plugin.write_text(PLUGIN.format(share=share))
    out = tmp_path / name
    done = subprocess.run(
        linbench_argv("run", *RUN, "--plugin", plugin, "--out", out), capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    (folder,) = out.iterdir()
    return folder


@pytest.mark.slow  # three real CPU runs: started first, beside the short tests
@pytest.mark.extended
def test_a_planted_10_percent_allocation_fails_the_cpu_gate(tmp_path: Path) -> None:
    base, same, planted = _run(tmp_path, "base", 0.0), _run(tmp_path, "same", 0.0), _run(tmp_path, "planted", 0.1)
    caught = subprocess.run(linbench_argv("compare", base, planted), capture_output=True, text=True, timeout=120)
    assert caught.returncode == 1, caught.stdout + caught.stderr
    assert "regression" in caught.stdout
    unchanged = subprocess.run(linbench_argv("compare", base, same), capture_output=True, text=True, timeout=120)
    assert unchanged.returncode != 1, unchanged.stdout  # the same code: no memory regression
