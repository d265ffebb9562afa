"""One point of two runs compared: its time (by the rule of rule.py, on the statistic of
statistic.py: the CUDA-graph replay time where both sides have one, with the eager time
beside it, else on a CPU each one-thread process's paced CPU time, else its CPU time, else its
p20, else its median),
its memory and its kernel launches per call, each with a verdict. Judged on the wall clock, a
CPU process whose threads other processes oversubscribed (processes.csv's ``oversubscribed``)
is left out where at least MIN_TO_JUDGE others of its side remain; a side with fewer (or with
no processes recorded, and its results row marked) has its time not judged: its verdict is
``oversubscribed``: not judged (so never a pass, rule.py's UNJUDGED), not even by the gross
rule; its memory still is. Judged on CPU time, no process is left out: waiting for a core adds
none. A point measured with other torch thread counts on the two sides (``threads``) is
``other threads``: neither its time nor its memory is judged."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from linbench.gate.between import BetweenRuns
from linbench.gate.memory import CPU_MEMORY_FLOOR_BYTES, MemoryJudgement, judge_memory
from linbench.gate.point_diff import NOT_COMPARED, ONE_SIDED, PointDiff
from linbench.gate.rule import OTHER_THREADS, OVERSUBSCRIBED, TimeJudgement, TimeRule, judge
from linbench.gate.statistic import COLUMN, CPU_TIME, GRAPH, PACED, SHOWN_COLUMN, all_positive, chosen
from linbench.report.series import plain
from linbench.results.processes import cpu_time_stands, pace_cells_alike
from linbench.results.protocol import ProcessProtocol, judged_processes
from linbench.results.rows import is_set
from linbench.units import as_number

# A CPU call's peak of the live bytes it allocated through torch (exact, like a GPU's peak_bytes).
ALLOC_COLUMN = "alloc_peak_bytes"


@dataclass(frozen=True)
class Thresholds:
    max_slowdown: float = 0.05
    max_memory_growth: float = 0.02
    memory_floor_bytes: int | None = None  # None: CPU_MEMORY_FLOOR_BYTES for peak RSS, 0 for exact counts
    max_exponents: dict[str, float] = field(default_factory=dict)  # "cosine" or "cosine:chunked"
    noise_z: float = 5.0
    max_noise: float = 0.30
    max_launch_growth: float = 0.0  # kernel launches per call are exact: any growth fails
    controls: tuple[str, ...] = ()  # "variant:impl" of the drift check's control points

    def floor_for(self, exact: bool) -> int:
        """The least growth of peak memory that fails: ``exact`` readings (an allocator's count)
        have no noise to stay above."""
        if self.memory_floor_bytes is not None:
            return self.memory_floor_bytes
        return 0 if exact else CPU_MEMORY_FLOOR_BYTES

    def time_rule(
        self, protocol: ProcessProtocol, gross_bar: float | None = None, between: BetweenRuns | None = None
    ) -> TimeRule:
        """The time rule of these thresholds, for processes recorded under ``protocol``, with
        the comparison's ``gross_bar`` (rule.py) and between-run term (between.py)."""
        shift, scatter = (between.shift, between.scatter) if between is not None else (0.0, 0.0)
        return TimeRule(self.max_slowdown, self.noise_z, self.max_noise, protocol, gross_bar=gross_bar,
                        run_shift=shift, run_scatter=scatter)  # fmt: skip


@dataclass(frozen=True)
class Side:
    """One run's view of a point: its results row and its ok processes (None: none recorded);
    ``left_out``: its oversubscribed processes not judged (``Side.of``)."""

    row: pd.Series
    processes: pd.DataFrame | None
    left_out: int = 0

    @classmethod
    def of(cls, row: pd.Series, processes: pd.DataFrame | None) -> Side:
        """The side, without its oversubscribed processes where at least 3 others remain
        (results/protocol.py's judged_processes): a process whose cores other processes took
        while it was timed is slower by what the scheduler did (on a loaded 2-core machine,
        softmax:sdpa's 19 ms call had a p20 near 28 ms in such processes, 19.25-19.28 ms in
        the others), and the clean ones of the same point say what its code does. None is left
        out where every process is judged on its CPU time, to which preemption adds nothing."""
        if processes is None or "oversubscribed" not in processes.columns or _on_cpu_clock(row, processes):
            return cls(row, processes)
        kept = judged_processes(list(processes["oversubscribed"].eq(True)))
        if all(kept):
            return cls(row, processes)
        return cls(row, processes[kept], left_out=kept.count(False))

    @property
    def ok(self) -> bool:
        return self.row["status"] == "ok"

    @property
    def oversubscribed(self) -> bool:
        """Other processes took cores this side's worker threads needed while it was timed (in
        a process it still judges: none where those were left out)."""
        return not self.left_out and is_set(self.row.get("oversubscribed"))

    @property
    def threads(self) -> int | None:
        """The torch threads its worker measured with (None: not recorded)."""
        value = as_number(self.row.get("threads"))
        return None if value is None else int(value)

    def count(self) -> int:
        return 0 if self.processes is None else len(self.processes)

    def has_graph_times(self) -> bool:
        return self.processes is not None and bool((self.processes["device_ms"] > 0).all())

    def has_cpu_time(self) -> bool:
        """Whether every process ran one torch thread and recorded its CPU time (the results
        row, where no process was recorded): statistic.py's "cpu time"."""
        return _on_cpu_clock(self.row, self.processes)

    def pace_work(self) -> str | None:
        """The reference work every process paced its calls with, where each recorded a paced
        time against the same one (statistic.py's "paced cpu time"); else None."""
        frame = self.processes
        if frame is None or not {"paced_p20", "pace_work"} <= set(frame.columns):
            return None
        works = list(frame["pace_work"])
        return str(works[0]) if pace_cells_alike(list(frame["paced_p20"]), works) else None

    def has_p20(self) -> bool:
        """Whether every process recorded the p20 of its repetitions (the results row, where
        no process was recorded)."""
        if self.processes is not None:
            return "time_ms_p20" in self.processes.columns and all_positive(list(self.processes["time_ms_p20"]))
        return all_positive([self.row.get("time_ms_p20")])

    def per_process(self, column: str) -> list[float]:
        """Each process's ``column``; the results row's own where no process was recorded."""
        if self.processes is not None:
            return [float(v) for v in pd.to_numeric(self.processes[column], errors="coerce")]
        value = as_number(self.row.get(column))
        return [value] if value is not None and value > 0 else []

    def widest_within(self) -> float | None:
        """The largest p80/p20 of any process's repetitions (the results row's where no process
        was recorded); None where one is missing. Eager repetitions: for a graph-timed point
        they bound its replays' spread from above."""
        if self.processes is not None:
            if not {"time_ms_p20", "time_ms_p80"} <= set(self.processes.columns):
                return None
            lows = pd.to_numeric(self.processes["time_ms_p20"], errors="coerce")
            highs = pd.to_numeric(self.processes["time_ms_p80"], errors="coerce")
            pairs = list(zip(lows, highs, strict=True))
        else:
            pairs = [(as_number(self.row.get("time_ms_p20")), as_number(self.row.get("time_ms_p80")))]
        widths = [float(hi) / float(lo) if lo and hi and lo > 0 else None for lo, hi in pairs]
        known = [w for w in widths if w is not None and not pd.isna(w)]
        return float(max(known)) if known and len(known) == len(widths) else None

    def readings(self, column: str) -> list[float]:
        """Each process's ``column`` (the results row's where no process recorded one)."""
        if self.processes is not None and column in self.processes:
            values = [v for v in (as_number(x) for x in self.processes[column]) if v is not None]
            if values:
                return values
        value = as_number(self.row.get(column))
        return [] if value is None else [value]

    def largest(self, column: str) -> float | None:
        """The results row's value, or the largest of its processes' where that is larger."""
        values = [as_number(self.row.get(column))]
        if self.processes is not None and column in self.processes:
            values += [as_number(v) for v in self.processes[column]]
        present = [v for v in values if v is not None]
        return max(present) if present else None


def diff_point(
    key: dict[str, Any],
    base: Side,
    cur: Side,
    thresholds: Thresholds,
    protocol: ProcessProtocol,
    gross_bar: float | None = None,
    between: BetweenRuns | None = None,
) -> PointDiff:
    """One point of two runs judged, its processes by the numbers of ``protocol`` (and the
    comparison's ``gross_bar``, rule.py, and between-run term, between.py)."""
    key = {c: plain(v) for c, v in key.items()}
    between = between.without(key) if between is not None else None
    both_ok = base.ok and cur.ok
    graph = base.has_graph_times() and cur.has_graph_times()
    cpu_time = base.has_cpu_time() and cur.has_cpu_time()
    work = base.pace_work()
    paced = work is not None and work == cur.pace_work()
    eager_statistic = chosen(key["device_type"] == "cpu", False, base.has_p20() and cur.has_p20(), cpu_time, paced)
    statistic = GRAPH if graph else eager_statistic
    column = COLUMN[statistic]
    shown = SHOWN_COLUMN[statistic]  # a paced figure is in reference calls: its CPU times are shown
    rule = thresholds.time_rule(protocol, gross_bar, between)
    time = TimeJudgement("-", None)
    if both_ok:
        within = _widest(base.widest_within(), cur.widest_within())
        time = judge(base.per_process(column), cur.per_process(column), rule, within)
    eager_column = COLUMN[eager_statistic]
    eager = judge(base.per_process(eager_column), cur.per_process(eager_column), rule) if both_ok and graph else None
    unjudged = _not_comparable(base, cur, statistic) if both_ok else None
    if unjudged is not None:
        # Not judged, not even as gross: a pool that waited for the scheduler ran 50x slow, and
        # one thread against two is another configuration, not a change of code.
        time = replace(time, verdict=unjudged, gross=False)
        eager = replace(eager, verdict=unjudged) if eager is not None else None
    # Peak RSS moves with the threads too (per-thread buffers): compared only at equal threads.
    memory = _memory(base, cur, thresholds, key["device_type"]) if both_ok and unjudged != OTHER_THREADS else None
    base_kernels, kernels = base.largest("kernels_per_call"), cur.largest("kernels_per_call")
    base_syncs, syncs = base.largest("host_syncs"), cur.largest("host_syncs")
    return PointDiff(
        key=key,
        base_status=str(base.row["status"]),
        status=str(cur.row["status"]),
        base_ms=_median(base.per_process(shown)) if base.ok else None,
        ms=_median(cur.per_process(shown)) if cur.ok else None,
        ratio=time.ratio,
        timing="graph" if graph else "eager",
        base_processes=base.count(),
        processes=cur.count(),
        spread=time.spread,
        noise=time.noise,
        threshold=time.threshold,
        settled=time.settled,
        time_verdict=_status_verdict(base, cur) or time.verdict,
        eager_ratio=eager.ratio if eager else None,
        eager_verdict=eager.verdict if eager else "-",
        base_bytes=memory.base_bytes if memory else base.largest(memory_column(base, cur, key["device_type"])),
        bytes=memory.bytes if memory else cur.largest(memory_column(base, cur, key["device_type"])),
        memory_growth=memory.growth if memory else None,
        memory_verdict=memory.verdict if memory else "-",
        base_kernels=base_kernels if both_ok else None,
        kernels=kernels if both_ok else None,
        launch_verdict=_launch_verdict(base_kernels, kernels, thresholds.max_launch_growth) if both_ok else "-",
        base_syncs=base_syncs if both_ok else None,
        syncs=syncs if both_ok else None,
        # Any wait more fails: --max-launch-growth is for launches, which may grow by design.
        sync_verdict=_launch_verdict(base_syncs, syncs, 0.0) if both_ok else "-",
        gross=time.gross,
        statistic=statistic,
        eager_statistic=eager_statistic if eager else "-",
        left_out=base.left_out + cur.left_out,
    )


def _not_comparable(base: Side, cur: Side, statistic: str) -> str | None:
    """Why the two sides' times cannot be judged against each other (None: they can): measured
    with other thread counts (default CPU runs take the idle cores, so a quiet baseline and a
    busy current run differ), or oversubscribed on a side where the wall clock is judged (a
    process's CPU time holds no preemption)."""
    if base.threads is not None and cur.threads is not None and base.threads != cur.threads:
        return OTHER_THREADS
    if statistic not in (CPU_TIME, PACED) and (base.oversubscribed or cur.oversubscribed):
        return OVERSUBSCRIBED
    return None


def _on_cpu_clock(row: pd.Series, processes: pd.DataFrame | None) -> bool:
    """Every process (the results row, where none was recorded) ran one torch thread and
    recorded its CPU time (results/processes.py's timed_on_cpu_clock)."""
    if processes is None:
        cells = [(row.get("cpu_ms_p20"), row.get("threads"))]
    elif {"cpu_ms_p20", "threads"} <= set(processes.columns) and len(processes):
        cells = list(zip(processes["cpu_ms_p20"], processes["threads"], strict=True))
    else:
        return False
    return all(cpu_time_stands(cpu, threads) for cpu, threads in cells)


def _widest(base: float | None, cur: float | None) -> float | None:
    return None if base is None or cur is None else max(base, cur)


def _median(values: list[float]) -> float | None:
    return float(pd.Series(values).median()) if values else None


def _status_verdict(base: Side, cur: Side) -> str | None:
    """The verdict the statuses alone decide (None when both are ok: the time rule decides)."""
    if base.ok and not cur.ok:
        return "broken"
    if not base.ok:
        return "fixed" if cur.ok else NOT_COMPARED
    return None


def memory_column(base: Side, cur: Side, device_type: str) -> str:
    """The memory figure a point is judged on: on a CPU, what its calls allocated through torch
    where both sides recorded it (alloc_peak_bytes), else peak RSS; on a GPU the allocator's peak."""
    if device_type == "cpu" and base.readings(ALLOC_COLUMN) and cur.readings(ALLOC_COLUMN):
        return ALLOC_COLUMN
    return "peak_bytes"


def _memory(base: Side, cur: Side, thresholds: Thresholds, device_type: str) -> MemoryJudgement:
    """Peak memory judged exactly where it is an allocator's count (a GPU's, torch's on a CPU)
    and against the measured spread of peak RSS on a CPU run that lacks the count (memory.py)."""
    column = memory_column(base, cur, device_type)
    exact = device_type != "cpu" or column == ALLOC_COLUMN
    readings = base.readings(column), cur.readings(column)
    return judge_memory(*readings, exact, thresholds.max_memory_growth, thresholds.floor_for(exact))


def _launch_verdict(base: float | None, cur: float | None, max_growth: float) -> str:
    """Kernels per call (and host syncs, at ``max_growth`` 0) are counted, not sampled: any
    growth past ``max_growth`` fails (from 0: any at all)."""
    if base is None or cur is None:
        return "-" if base is None and cur is None else ONE_SIDED
    if cur > base * (1 + max_growth):
        return "regression"
    if cur > base:
        return "more"
    return "fewer" if cur < base else "same"
