"""Helpers for the runner tests: real sweeps through real worker processes, at tiny sizes
and short timing budgets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from linbench.measure.timing_policy import TimingPolicy
from linbench.results.protocol import ProcessProtocol
from linbench.results.store import RunStore
from linbench.runner.kinds import kind_of_mode
from linbench.runner.plan import RunPlan
from linbench.runner.sweep_runner import SweepRunner
from linbench.runner.targets import Targets
from linbench.shape import Shape
from linbench.sweep.points import Point
from linbench.variants.plugins import load_plugin_file

PLANTED = str(Path(__file__).parents[1] / "plugins" / "planted.py")
FAST = TimingPolicy(warmup_s=0.0, budget_s=0.05, min_reps=2, max_reps=5)


def make_points(
    pairs: list[tuple[str, str]], seqs: list[int], shape: tuple[int, int, int] = (1, 2, 16), mode: str = "fwd"
) -> list[Point]:
    batch, heads, dim = shape
    return [
        Point(variant, impl, mode, True, "fp32", "cpu", Shape(batch, heads, seq, dim, dim))
        for seq in seqs
        for variant, impl in pairs
    ]


def run_points(
    tmp_path: Path,
    points: list[Point],
    timeout_s: float = 60.0,
    timing: TimingPolicy = FAST,
    processes: int = 1,
    share_workers: bool = False,
) -> list[dict[str, Any]]:
    """Run ``points`` in this order through the supervisor (each in ``processes`` worker
    processes); the rows written, typed as the store reads them back."""
    return run_store(tmp_path, points, timeout_s, timing, processes, share_workers).rows()


def run_store(
    tmp_path: Path,
    points: list[Point],
    timeout_s: float = 60.0,
    timing: TimingPolicy = FAST,
    processes: int = 1,
    share_workers: bool = False,
    store: RunStore | None = None,
    threads: int | None = None,
) -> RunStore:
    """As run_points; the run folder (``store`` to go on with one; ``threads`` as --threads)."""
    store = store or RunStore.create(tmp_path, "test")
    runner = SweepRunner(sweep_plan(points, timeout_s, timing, processes, share_workers, threads), store)
    runner.run(runner.pending())
    return store


def sweep_plan(
    points: list[Point],
    timeout_s: float = 60.0,
    timing: TimingPolicy = FAST,
    processes: int = 1,
    share_workers: bool = False,
    threads: int | None = None,
) -> RunPlan:
    """The plan of ``points`` in this order (the planted plugin loaded), as run_store runs it."""
    load_plugin_file(PLANTED)
    pairs = tuple(dict.fromkeys((p.variant, p.impl) for p in points))
    return RunPlan(
        points=tuple(points),
        targets=Targets(pairs=pairs, baselines=(), notes=()),
        device=torch.device(points[0].device),
        device_name="test cpu",
        timeout_s=timeout_s,
        timing=timing,
        plugins=(PLANTED,),
        memory_limit_bytes=4 << 30 if points[0].device == "cpu" else None,
        processes=ProcessProtocol(processes, processes),
        share_workers=share_workers,
        kind=kind_of_mode(points[0].mode),
        threads=threads,
    )
