"""The CUDA kernels' own sources, run on the CPU against an fp64 reference (no GPU: g++ and the
CUDA headers). csrc/cuda/emulation/run.sh builds the emulation and runs its quick suite, every
dtype and feature map at a few shapes, and the fast pass (its mma.sync, ldmatrix and cp.async
emulated lane by lane) forward and backward at ragged shapes, bf16 and fp16; it skips where there is no CUDA
toolkit to build with.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

RUN = Path(__file__).parents[2] / "csrc" / "cuda" / "emulation" / "run.sh"


def _cuda_headers() -> Path:
    """Where run.sh looks for cuda_runtime.h and friends."""
    return Path(os.environ.get("CUDA_HOME") or "/usr/local/cuda") / "include"


@pytest.mark.slow
def test_the_cuda_kernels_emulated_on_the_cpu_match_the_fp64_reference(tmp_path: Path) -> None:
    if shutil.which("nvcc") is None:
        pytest.skip("no CUDA toolkit here (nvcc is not on PATH)")
    if not (_cuda_headers() / "cuda_runtime.h").is_file():
        pytest.skip(f"no CUDA headers in {_cuda_headers()} (set CUDA_HOME)")
    if shutil.which("g++") is None:
        pytest.skip("no g++ to build the emulation with")
    # run.sh builds into $TMPDIR: this test's own folder, not one shared with other work.
    env = os.environ | {"TMPDIR": str(tmp_path)}
    done = subprocess.run(["sh", str(RUN), "plain", "quick"], capture_output=True, text=True, env=env, timeout=1800)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert lines[-1] == "all passed" and not [line for line in lines if line.startswith("FAIL")], done.stdout[-3000:]
    assert sum(line.startswith("ok") for line in lines) >= 10  # the quick suite's cases ran
    # The fast pass ran forward and backward (each case checks it ran exactly where it applies).
    assert sum(line.startswith("ok") and "fast segs=" in line and "/fast" in line for line in lines) >= 5
