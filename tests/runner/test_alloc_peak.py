"""A CPU point's alloc_peak_bytes (device: cpu): the peak of what one call allocates through
torch is the point's own, whatever its process ran before, and follows the impl's memory.

Peak RSS of one cosine:recurrent point read 129, 29 and 35 MiB in three runs; this figure is
torch's count of the bytes the call allocated, so equal readings are asserted exactly.
"""

from __future__ import annotations

import csv
import subprocess
import sys
from itertools import pairwise
from pathlib import Path

from linbench.results.processes import ProcessResult
from linbench.runner.execute import run_measure
from linbench.runner.kinds import RUN
from linbench.runner.task import Task, TimingPolicy
from linbench.shape import Shape
from linbench.sweep.points import Point

# Short timings: the figure does not depend on them.
TIMING = TimingPolicy.for_device("cpu", budget_s=0.02)


def _measure(seq: int) -> ProcessResult:
    point = Point("cosine", "recurrent", "fwd", True, "fp32", "cpu", Shape(1, 4, seq, 32, 32))
    result = run_measure(Task(job="measure", point=point, timing=TIMING, kind=RUN, threads=1))
    assert result.status == "ok", result.error
    return result


def _alone(seq: int) -> int:
    """The figure of the point measured by a fresh process that measures nothing else."""
    code = f"from tests.runner.test_alloc_peak import _measure; print(_measure({seq}).alloc_peak_bytes)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    return int(done.stdout.split()[-1])


def test_a_points_figure_is_the_same_alone_first_in_a_warm_process_and_after_a_larger_point() -> None:
    first = _measure(512).alloc_peak_bytes
    _measure(2048)  # a larger point: its freed memory stays in the process's heap
    after_larger = _measure(512).alloc_peak_bytes
    assert first is not None and first > 0
    assert first == after_larger == _alone(512)


def test_cosine_recurrent_grows_with_length_on_the_cpu(tmp_path: Path) -> None:
    """Its state is fixed-size, so what a call allocates grows as the length (the output and
    the per-step temporaries): doubling the length about doubles the figure."""
    argv = [sys.executable, "-m", "linbench", "run", "--variant", "cosine:recurrent", "--no-against"]
    argv += ["--seq", "256,512,1k", "--device", "cpu", "--budget-s", "0.02", "--warmup-s", "0.02", "-q"]
    done = subprocess.run([*argv, "--out", tmp_path], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    (folder,) = tmp_path.iterdir()
    with (folder / "results.csv").open(newline="") as handle:
        rows = sorted(csv.DictReader(handle), key=lambda row: int(row["seq"]))
    figures = [int(row["alloc_peak_bytes"]) for row in rows]
    assert [int(row["seq"]) for row in rows] == [256, 512, 1024]
    for shorter, longer in pairwise(figures):
        assert 1.8 < longer / shorter < 2.2, figures
