"""Running a script of fla cases on the CPU under Triton's interpreter, as its own process (the
interpreter must be on before triton and fla are first imported), and reading its cases back:
one JSON line each, by name. Shared by test_gated_fla_interpreted.py and
test_fla_serving_interpreted.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any


def run_interpreted(script: Path, *args: str) -> dict[str, dict[str, Any]]:
    """``script``'s cases by name, run on the CPU (no GPU visible) under the interpreter."""
    env = os.environ | {"TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run(
        [sys.executable, str(script), *args], capture_output=True, text=True, env=env, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return {line["case"]: line for line in lines}
