"""The sweep loop: for each point, skip it, gate it, or measure it — then write its row.

Rows are written the moment they exist. A point whose impl disagrees with the reference
is never timed; one that fails in any way is recorded with its status and the sweep
goes on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from linbench.measure.load import LoadMonitor
from linbench.results.store import RunStore, RunStoreError
from linbench.runner.plan import RunPlan
from linbench.runner.policy import SkipPolicy
from linbench.runner.supervisor import Supervisor
from linbench.runner.task import Task, gate_key, gate_point
from linbench.sweep.points import KEY_COLUMNS, Point
from linbench.sweep.spec import DECODE_MODE
from linbench.variants.registry import get_variant

Listener = Callable[[str, Point, "dict[str, Any] | None"], None]


def _silent(event: str, point: Point, row: dict[str, Any] | None) -> None:
    return None


# The columns that hold a time, empty unless the point passed its check and ran to the end.
TIME_COLUMNS = (
    *("time_ms", "time_ms_p20", "time_ms_p80", "samples", "tflops", "time_per_token_ms", "device_ms"),
    "tokens_per_s",
)


class SweepRunner:
    """Runs a plan into a store; ``listener(event, point, row)`` hears "start" and "row"."""

    def __init__(self, plan: RunPlan, store: RunStore, listener: Listener = _silent) -> None:
        self.plan = plan
        self.store = store
        self.listener = listener
        self.supervisor = Supervisor(store.log_path)
        self.policy = SkipPolicy(plan.timeout_s, plan.timing, fixed_tokens=plan.tokens is not None)
        self._gates: dict[tuple[object, ...], dict[str, Any]] = {}
        gpu = (plan.device.index or 0) if plan.device.type == "cuda" else None
        threads = plan.threads or torch.get_num_threads()
        self.load = LoadMonitor(gpu_index=gpu, threads=threads, previous=self._recorded_load())

    def _recorded_load(self) -> dict[str, Any] | None:
        """The load samples of an earlier session of this run (--resume) go on in meta.json."""
        try:
            return self.store.read_meta().get("load")
        except RunStoreError:
            return None

    def pending(self) -> list[Point]:
        """The plan's points without a row yet; earlier rows also teach the skip policy."""
        by_key = {point.key: point for point in self.plan.points}
        done = set()
        for row in self.store.rows():
            point = by_key.get(tuple(row[c] for c in KEY_COLUMNS))
            if point is not None:
                done.add(point.key)
                self.policy.record(point, row)
        return [point for point in self.plan.points if point.key not in done]

    def run(self, points: list[Point]) -> None:
        """Run ``points`` in order; the machine's load is sampled before the first, between
        points (every SAMPLE_INTERVAL_S at most) and after the last, into meta.json."""
        self._sample_load("start")
        try:
            for point in points:
                self.listener("start", point, None)
                row, samples = self.run_point(point)
                self.store.append(row, samples)
                self.policy.record(point, row)
                self.listener("row", point, row)
                if self.load.due():
                    self._sample_load("during")
        finally:
            self.supervisor.stop()
            self._sample_load("end")

    def _sample_load(self, when: str) -> None:
        self.load.sample(when)
        self.store.update_meta({"load": self.load.section()})

    def run_point(self, point: Point) -> tuple[dict[str, Any], list[float]]:
        """The row for one point and its raw time samples."""
        reason = self.policy.skip_reason(point)
        if reason is not None:
            return self._row(point, {"status": "skipped", "error": reason}, None), []
        gate = self._gate(point)
        if gate.get("status") != "ok":
            result = dict(gate)
            if result.get("status") != "mismatch" and result.get("error"):
                result["error"] = f"during the correctness check: {result['error']}"
            return self._row(point, result, gate), []
        # On probation the worker stops after its first call when that call says the point
        # cannot finish in time (runner/policy.py).
        probation = self.policy.probation(point) is not None
        task = self._task("measure", point, stop_after_s=self.plan.timeout_s if probation else None)
        result = self.supervisor.run(task, self.plan.timeout_s)
        samples = list(result.pop("samples_ms", []))
        return self._row(point, result, gate), samples

    def _gate(self, point: Point) -> dict[str, Any]:
        key = gate_key(point)
        if key not in self._gates:
            self._gates[key] = self.supervisor.run(self._task("gate", gate_point(point)), self.plan.timeout_s)
        return self._gates[key]

    def _task(self, kind: str, point: Point, stop_after_s: float | None = None) -> Task:
        return Task(
            kind=kind,  # type: ignore[arg-type]
            point=point,
            timing=self.plan.timing,
            plugins=self.plan.plugins,
            memory_limit_bytes=self.plan.memory_limit_bytes,
            cuda_graph=self.plan.cuda_graph,
            stop_after_s=stop_after_s,
            params=self.plan.impl_params(point.variant, point.impl),
            threads=self.plan.threads,
        )

    def _row(self, point: Point, result: dict[str, Any], gate: dict[str, Any] | None) -> dict[str, Any]:
        decode = point.mode == DECODE_MODE
        row = point.as_row() | {"device_name": self.plan.device_name, "params": self.plan.params_column(point)}
        row |= result
        # A variant's FLOP formula counts a whole sequence; a decode step is another thing.
        flops = None if decode else get_variant(point.variant).flops(*point.shape.sizes(), point.causal, point.mode)
        row["flops"] = flops
        if decode:
            row["context"] = point.shape.seq
        if gate is not None:
            row["check_seq"] = gate_point(point).shape.seq
            row["rel_err"] = gate.get("rel_err")
        if row.get("status") == "ok" and row.get("time_ms"):
            if flops:
                row["tflops"] = flops / (row["time_ms"] / 1e3) / 1e12
            if decode:  # a decode repetition is one step: one generated token per sequence
                row["time_per_token_ms"] = row["time_ms"]
            else:  # every position of every sequence in the batch, per second
                row["tokens_per_s"] = point.shape.batch * point.shape.seq / (row["time_ms"] / 1e3)
        else:
            # A time is reported only for a point that passed its check and ran to the end.
            for column in TIME_COLUMNS:
                row[column] = None
        return row
