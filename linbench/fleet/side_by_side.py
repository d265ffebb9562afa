"""Do agents side by side move each other's times? A launch-bound control point measured by the
first GPU's agent alone, then again while every other agent measures it too.

Agents share the host: its memory bandwidth, caches, power budget and turbo headroom, and,
for launch-bound points (the PyTorch chunked forms, decode steps), the CPU time that issues
the launches. The control is such a point (cosine:chunked, fwd, fp32, one short sequence). The
first agent measures it in ``PROCESSES`` fresh processes alone, then again beside the others,
each of which measures it ``NEIGHBOUR_FACTOR`` times as often so they are still busy while it
runs; the two sets of process medians are judged by the regression gate's own rule
(linbench/gate/rule.py), so "beside the others it is slower" means what a gate would call a
regression, and a check too noisy to say so says that instead. The agents' rows record when
each ran: a run in which the neighbours did not overlap the first agent's whole measurement
is not judged.

On the test suite's fake inventory the "GPUs" are the CPU: agents side by side then share
the CPU, not GPUs, and the figures say nothing about GPU agents. The check runs (so its
machinery is tested) but its verdict is "not judged".
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from linbench.fleet.local import run_local
from linbench.fleet.merge import merge_run
from linbench.fleet.placement import Placement
from linbench.fleet.plan import plan_fleet

if TYPE_CHECKING:
    from linbench.gate.rule import TimeJudgement
    from linbench.sweep.request import SweepRequest

PROCESSES, MOST_PROCESSES = 5, 10
NEIGHBOUR_FACTOR = 3


@dataclass
class SideBySide:
    """The first agent's process medians alone and beside the others, and what they say."""

    control: str
    alone_ms: list[float] = field(default_factory=list)
    beside_ms: list[float] = field(default_factory=list)
    neighbours: int = 0
    overlapped: bool = False
    judgement: TimeJudgement | None = None
    judged: bool = False
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        j = self.judgement
        return {
            "control": self.control,
            "alone_ms": self.alone_ms,
            "beside_ms": self.beside_ms,
            "neighbours": self.neighbours,
            "overlapped": self.overlapped,
            "judged": self.judged,
            "verdict": j.verdict if j is not None else None,
            "ratio": j.ratio if j is not None else None,
            "threshold": j.threshold if j is not None else None,
            "note": self.note,
        }


def control_request(fake: bool, processes: int = PROCESSES, most: int = MOST_PROCESSES) -> SweepRequest:
    """The control point: launch-bound on a GPU (a 1k sequence of the PyTorch chunked form); on
    the fake inventory the same impl at a size the CPU measures quickly."""
    from linbench.sweep.request import SweepRequest

    size = {"seq": "256", "heads": 2, "dim": 16, "budget_s": 0.05} if fake else {"seq": "1k", "heads": 8, "dim": 64}
    return SweepRequest(
        variants=("cosine:chunked",),
        no_against=True,
        dtypes=("fp32",),
        modes=("fwd",),
        device="cpu" if fake else "cuda",
        processes=processes,
        max_processes=most,
        **size,  # type: ignore[arg-type]
    )


def side_by_side(placements: Sequence[Placement], work_dir: Path, fake: bool, runner: str = "linbench") -> SideBySide:
    """Measure the control on the first placement alone, then beside the others (see module)."""
    from linbench.runner.pipeline import prepare

    prepared = prepare(control_request(fake), work_dir)
    result = SideBySide(control=prepared.plan.points[0].label, neighbours=len(placements) - 1)
    if len(placements) < 2:
        result.note = "one GPU: no neighbours to measure beside"
        return result
    plan = plan_fleet(prepared, "linbench doctor --devices")
    busy = plan_fleet(prepare(control_request(fake, *(2 * [PROCESSES * NEIGHBOUR_FACTOR])), work_dir), "neighbour")
    plan.write(work_dir / "alone")
    result.alone_ms = _medians(work_dir / "alone", [placements[0]], runner)[0]
    runs = [(work_dir / "beside-0", plan, placements[0])]
    runs += [(work_dir / f"beside-{i}", busy, p) for i, p in enumerate(placements[1:], start=1)]
    for folder, one_plan, _ in runs:
        one_plan.write(folder)
    found: dict[int, tuple[list[float], tuple[str, str]]] = {}
    threads = [
        threading.Thread(target=lambda i=i, f=f, p=p: found.__setitem__(i, _medians(f, [p], runner)))
        for i, (f, _, p) in enumerate(runs)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    result.beside_ms = found[0][0]
    first = found[0][1]
    result.overlapped = all(span[0] <= first[0] and first[1] <= span[1] for _, span in list(found.values())[1:])
    _judge(result, fake)
    return result


def _medians(folder: Path, placements: list[Placement], runner: str) -> tuple[list[float], tuple[str, str]]:
    """Run the one-point plan in ``folder``; its process medians and (started_at, finished_at)."""
    from linbench.results.store import RunStore

    run_local(folder, placements, runner=runner)
    merge_run(folder, allow_partial=True)
    merged = RunStore(folder)  # read through results/rows.py, as every run is
    times = [float(p["time_ms"]) for p in merged.process_rows() if p.get("time_ms")]
    rows = merged.rows()
    span = (rows[0]["started_at"], rows[0]["finished_at"]) if rows else ("", "")
    return times, span


def _judge(result: SideBySide, fake: bool) -> None:
    from linbench.gate.rule import TimeRule, judge
    from linbench.results.protocol import ProcessProtocol

    if not result.alone_ms or not result.beside_ms:
        result.note = "the control point did not run to the end alone and beside the others (see the agents' logs)"
        return
    protocol = ProcessProtocol.of(PROCESSES, MOST_PROCESSES)
    result.judgement = judge(result.alone_ms, result.beside_ms, TimeRule(protocol=protocol))
    if fake:
        result.note = "fake GPUs (a test-only inventory) measure on the CPU: this shows CPU sharing, not GPU agents"
    elif not result.overlapped:
        result.note = "the other agents did not run all the while the first measured: run doctor again"
    else:
        result.judged = result.judgement.verdict not in ("noisy", "unverified")
        if not result.judged:
            result.note = f"the control point is too noisy here to say ({result.judgement.verdict})"
