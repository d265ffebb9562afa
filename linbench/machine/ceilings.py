"""The ceilings ``linbench run`` records in meta.json: copy bandwidth and matmul rate.

``linbench report`` divides each point's achieved bandwidth and FLOP rate by them. They are
measured at the start of every run rather than read from a cache that ``linbench doctor``
might have left: a ceiling describes the machine as it is during the sweep (its clocks,
power cap, driver, the other processes on it), a cached figure may be days old and from
another driver, and a results folder has to stand on its own when copied elsewhere. The
measurement is cheap: about a second on a GPU (once the process is up), 0.2-0.5 s on a CPU.

On a GPU it runs in a short-lived child process (``python -m linbench.machine.ceilings``),
so the sweep's own process never holds a CUDA context, cuBLAS workspaces or cached blocks
that would sit on the device, and in every point's device-wide NVML figure, for the whole
sweep. On CPU it runs in-process: freed buffers go back to the system and nothing lingers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import torch

# A child process that has not answered by then is killed; the run goes on without ceilings.
CHILD_TIMEOUT_S = 300


def ceilings_json(
    device: torch.device, copy: Any, matmuls: dict[str, Any], *, source: str, seconds: float
) -> dict[str, Any]:
    """The "ceilings" record of meta.json from measured ``probes.Rate`` figures."""
    from linbench.machine.facts import device_name
    from linbench.machine.nominal import nominal_for

    name = device_name(device)
    record: dict[str, Any] = {
        "device": str(device),
        "device_name": name,
        "copy_gb_per_s": copy.value,
        "matmul_tflops": {dtype: rate.value for dtype, rate in matmuls.items()},
        "copy_bytes": copy.size,
        "matmul_n": {dtype: rate.size for dtype, rate in matmuls.items()},
        "method": (
            "copy: read + write bytes of a buffer copy, median of repetitions; matmul: 2·n³ FLOPs of an "
            "n×n by n×n matmul, median of repetitions" + (" (CUDA events)" if device.type == "cuda" else "")
        ),
        "source": source,
        "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "seconds": round(seconds, 3),
    }
    if device.type == "cuda":
        record["tf32"] = bool(torch.backends.cuda.matmul.allow_tf32)
        nominal = nominal_for(name)
        if nominal is not None:
            record["nominal"] = {
                "model": nominal.model,
                "bandwidth_gb_s": nominal.bandwidth_gb_s,
                "tflops": {d: nominal.rate(d) for d in matmuls if nominal.rate(d) is not None},
            }
    else:
        record["torch_threads"] = torch.get_num_threads()
    return record


def measure_ceilings(device: torch.device, dtypes: list[str]) -> dict[str, Any]:
    """Copy bandwidth and the matmul rate of each dtype on ``device``, in this process."""
    from linbench.machine.probes import copy_rate, matmul_rate

    start = time.perf_counter()
    with torch.random.fork_rng(devices=[]):
        copy = copy_rate(device)
        matmuls = {dtype: matmul_rate(device, dtype) for dtype in dict.fromkeys(dtypes)}
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return ceilings_json(device, copy, matmuls, source="run", seconds=time.perf_counter() - start)


def run_ceilings(device: torch.device, dtypes: list[str], *, isolate: bool | None = None) -> dict[str, Any]:
    """The ceilings for a run's meta.json; ``{"error": ...}`` when they cannot be measured
    (the run goes on without them). ``isolate`` (default: on GPUs) measures in a child."""
    isolate = device.type == "cuda" if isolate is None else isolate
    try:
        if not isolate:
            return measure_ceilings(device, dtypes)
        return _measure_in_child(device, dtypes)
    except Exception as exc:  # a ceiling is a nicety: never let it stop a sweep
        return {"error": f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:500]}


def _measure_in_child(device: torch.device, dtypes: list[str]) -> dict[str, Any]:
    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    command = [sys.executable, "-m", "linbench.machine.ceilings", str(device), ",".join(dtypes)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=CHILD_TIMEOUT_S, check=False)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"the ceiling measurement exited with status {done.returncode}: {last}")
    return json.loads(lines[-1])


def main(argv: list[str] | None = None) -> None:
    """``python -m linbench.machine.ceilings DEVICE DTYPE[,DTYPE...]``: the ceilings as one JSON line."""
    device_spec, dtypes = (argv if argv is not None else sys.argv[1:])[:2]
    print(json.dumps(measure_ceilings(torch.device(device_spec), dtypes.split(","))))


if __name__ == "__main__":
    main()
