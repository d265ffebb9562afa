"""A Comparison as a table and a one-line verdict (rich for people, markdown for CI)."""

from __future__ import annotations

import math
from typing import Any

from linbench.gate.compare import Comparison, ExponentCheck, PointDiff
from linbench.gate.statistic import CPU_TIME, P20, PACED
from linbench.report.fit import FLAT, NONE, quality_text
from linbench.report.render import ReportTable
from linbench.results.protocol import MIN_TO_JUDGE
from linbench.units import format_bytes, format_ms, format_size

P20_MEANING = "the median across processes of each process's 20th percentile of its repetitions, not a median"
CPU_TIME_MEANING = (
    "the median across processes of each one-thread process's 20th percentile of its calls' CPU times: the "
    "work a call did, to which waiting for a core adds nothing"
)
PACED_MEANING = (
    "judged on each one-thread process's 20th percentile of its calls' CPU times over a fixed reference "
    "call's timed beside each, which divides out the core's slow and fast phases; the times shown are the "
    "CPU times, the ratio the paced one's"
)
ENVIRONMENT = "regression (environment)"
GROSS = "regression (gross)"
NOT_JUDGED = ("noisy", "unverified", "oversubscribed", "other threads")
VERDICT_STYLE = {
    "regression": "bold red",
    "broken": "bold red",
    "slower": "yellow",
    "faster": "green",
    "noisy": "magenta",
    "unverified": "magenta",
    "oversubscribed": "magenta",
    "other threads": "magenta",
    GROSS: "bold red",
    ENVIRONMENT: "yellow",
}
ADVICE = {
    "noisy": "{n} point(s) noisy (not judged): their processes disagree too much to resolve {floor}, or "
    "are too few for how much they disagree; they need more processes per point or, on GPU, launch-bound "
    "impls timed as CUDA-graph replays (--cuda-graph).",
    "unverified": "{n} point(s) unverified (not judged): a side has fewer than {k} worker processes per point "
    "(a run made before processes.csv, or --processes below {k}), too few to judge time with; memory, kernel "
    "launches and broken points are still gated.",
    "oversubscribed": "{n} point(s) oversubscribed (not judged): on a side, other processes took the cores the "
    "worker's threads needed while it was timed (results.csv's oversubscribed and neighbour_cpu), so their time "
    "says more about the scheduler than the code; memory and broken points are still gated.",
    "other threads": "{n} point(s) measured with other torch thread counts on the two sides (not judged: "
    "results.csv's threads; a CPU run takes the idle cores by default, so a quiet and a busy run differ); "
    "give both runs the same --threads, as suites/gate-cpu.toml does.",
}


def point_label(key: dict[str, Any]) -> str:
    dims = f"D={key['dim_k']}" if key["dim_k"] == key["dim_v"] else f"Dk={key['dim_k']} Dv={key['dim_v']}"
    masking = "causal" if key["causal"] else "bidir"
    return (
        f"{key['variant']}:{key['impl']} {key['mode']} {key['dtype']} {masking} {key['device_type']} "
        f"B={key['batch']} H={key['heads']} S={format_size(int(key['seq']))} {dims}"
    )


# A threshold past this is shown as past it: at 3 rounds a side the rule's quantile is about
# 1,800 standard errors, and a threshold of 10^20 % says no more than "not judgeable yet".
SHOWN_MOST = 9.99


def _percent(value: float | None, signed: bool = True) -> str:
    if value is None:
        return "-"
    if not signed and value > SHOWN_MOST:
        return f"±>{SHOWN_MOST * 100:.0f}%"
    return f"{value * 100:+.1f}%" if signed else f"±{value * 100:.1f}%"


def _ratio(value: float | None) -> str:
    return f"{value:.3f}x" if value is not None else "-"


def _shown_verdict(verdict: str, environment_changed: bool, gross: bool = False) -> str:
    """A time regression the drift check excuses is shown as such, not as a failure; one
    found by the gross rule says so."""
    if verdict != "regression":
        return verdict
    return ENVIRONMENT if environment_changed else GROSS if gross else verdict


def _time_cells(point: PointDiff, environment_changed: bool) -> list[str]:
    # Each time names its statistic: a p20 read as a median would look 20-80% too fast.
    base = format_ms(point.base_ms) if point.base_status == "ok" else point.base_status
    cur = format_ms(point.ms) if point.status == "ok" else point.status
    processes = f"{point.base_processes}/{point.processes}" if point.base_processes or point.processes else "-"
    statistic = f" ({point.statistic})"
    eager = "-"
    if point.eager_verdict != "-":
        shown = _shown_verdict(point.eager_verdict, environment_changed)
        eager = f"{_ratio(point.eager_ratio)} {shown} ({point.eager_statistic})"
    return [
        base + (statistic if point.base_status == "ok" else ""),
        cur + (statistic if point.status == "ok" else ""),
        _ratio(point.ratio),
        processes,
        _percent(point.threshold, signed=False) + (" (unsettled)" if point.settled is False else ""),
        _shown_verdict(point.time_verdict, environment_changed, point.gross),
        eager,
    ]


def _memory_cells(point: PointDiff) -> list[str]:
    return [
        format_bytes(point.base_bytes),
        format_bytes(point.bytes),
        _percent(point.memory_growth),
        point.memory_verdict,
    ]


def _launch_cell(point: PointDiff) -> str:
    """Kernels per call, then the host syncs of a call where a side has any."""
    cell = _count_cell(point.base_kernels, point.kernels, point.launch_verdict)
    if point.base_syncs or point.syncs:
        cell += f"; host syncs {_count_cell(point.base_syncs, point.syncs, point.sync_verdict)}"
    return cell


def _count_cell(base: float | None, cur: float | None, verdict: str) -> str:
    if base is None or cur is None:
        return "-"
    return f"{base:g} {verdict}" if base == cur else f"{base:g} → {cur:g} {verdict}"


POINT_COLUMNS = [
    *("point", "baseline", "current", "ratio", "K", "threshold", "time", "eager"),
    *("base mem", "cur mem", "growth", "memory", "launches"),
]


def points_table(comparison: Comparison) -> ReportTable:
    """A row per compared point. Baseline and current are the median across a side's
    processes of each process's statistic, named beside it (cpu time or p20 on a CPU, graph
    median, or median: a GPU's eager time, or a CPU's where a side recorded no p20); K is the worker
    processes per side, threshold the change the point had to pass (the larger of
    --max-slowdown and its noise)."""
    changed = comparison.environment_changed
    rows = [
        [point_label(p.key), *_time_cells(p, changed), *_memory_cells(p), _launch_cell(p)] for p in comparison.points
    ]
    title = f"{comparison.current} against {comparison.baseline}"
    marked = {s for p in comparison.points for s in (p.statistic, p.eager_statistic)}
    if P20 in marked:
        title += f" (a time marked p20: {P20_MEANING})"
    if CPU_TIME in marked:
        title += f" (a time marked cpu time: {CPU_TIME_MEANING})"
    if PACED in marked:
        title += f" (a time marked paced cpu time: {PACED_MEANING})"
    return ReportTable(title, POINT_COLUMNS, rows)


def exponent_table(checks: list[ExponentCheck]) -> ReportTable:
    rows = []
    for check in checks:
        fixed = check.fixed
        size = f"B={fixed['batch']}" if "batch" in fixed else f"tokens={fixed.get('tokens')}"
        where = f"{fixed['dtype']} {fixed['mode']} {size} H={fixed['heads']} D={fixed['dim_k']}, {check.statistic}s"
        verdict = "regression" if check.regressed else "ok"
        rows.append(
            [
                f"{check.variant}:{check.impl}",
                where,
                _exponent_cell(check),
                f"≤ {check.bound:g}",
                verdict,
            ]
        )
    return ReportTable("Fitted time exponents in length", ["impl", "scenario", "exponent", "bound", "verdict"], rows)


def _exponent_cell(check: ExponentCheck) -> str:
    quality = quality_text(check.law, check.r2, check.points)
    if check.law == FLAT:
        return f"flat (s^{check.exponent:.2f}, {quality})"
    if check.law == NONE:
        return f"no power law found (one line: s^{check.exponent:.2f}, R² {check.r2:.3f}, {quality})"
    return f"s^{check.exponent:.2f} ({quality})"


def unmatched_lines(comparison: Comparison) -> list[str]:
    lines = []
    sides = (("only in the baseline", comparison.baseline_only), ("only in current", comparison.current_only))
    for side, keys in sides:
        if keys:
            lines.append(f"{len(keys)} point(s) {side}: " + "; ".join(point_label(k) for k in keys))
    return lines


def advice_lines(comparison: Comparison, max_slowdown: float) -> list[str]:
    """Once per kind, not per point: what the noisy and unverified points need, and which
    time was judged where it was not the one meant."""
    protocol = comparison.protocol
    lines = []
    for verdict, text in ADVICE.items():
        n = comparison.count(verdict)
        if n:
            lines.append(text.format(n=n, floor=f"{max_slowdown * 100:g}%", k=protocol.min_to_judge))
    return lines + statistic_lines(comparison)


def statistic_lines(comparison: Comparison) -> list[str]:
    """The CPU points judged on process medians for want of a p20, and the oversubscribed
    processes left out of judgements (never silently)."""
    lines = []
    crowded = [p for p in comparison.points if p.left_out]
    if crowded:
        lines.append(
            f"{sum(p.left_out for p in crowded)} oversubscribed process(es) of {len(crowded)} point(s) left out: "
            "other processes took their cores while they were timed; each of those points was judged on the "
            f"{MIN_TO_JUDGE} or more processes per side that ran with their cores free"
        )
    fallback = [p for p in comparison.points if p.fell_back]
    if not fallback:
        return lines
    return [
        *lines,
        f"{len(fallback)} CPU point(s) judged on process medians, not p20s: a side recorded no p20 of its "
        "repetitions (a run made before the column, or without processes.csv); on a busy CPU a median moves "
        "with preemption, so these are more often noisy: " + "; ".join(point_label(p.key) for p in fallback),
    ]


def drift_lines(comparison: Comparison) -> list[str]:
    """What the control points say about the machine (nothing without controls)."""
    drift = comparison.drift
    if drift is None:
        return []
    names = ", ".join(drift.controls)
    if drift.median_ratio is None:
        return [f"drift check ({names}): no control point could be judged (noisy, unverified or not ok)"]
    moved = "; ".join(f"{point_label(p.key)} {p.ratio:.3f}x" for p in drift.moved) or "none past the threshold"
    if drift.changed:
        return [
            f"environment changed: the control points ({names}) all moved the same way, median "
            f"{drift.median_ratio:.3f}x; time verdicts are not counted as regressions (memory, launches and "
            f"broken points still are). Moved: {moved}. Record a new baseline on this machine."
        ]
    return [f"drift check ({names}): {len(drift.points)} control point(s), median {drift.median_ratio:.3f}x: no drift"]


def between_lines(comparison: Comparison) -> list[str]:
    """What the whole run moved, for runs measured apart (nothing for an A/B or a few points)."""
    between = comparison.between
    if between is None:
        return []
    where = "the controls'" if between.source == "controls" else "every point's"
    return [
        f"runs measured apart: the whole current run moved {math.expm1(between.shift):+.1%} ({where} median, "
        f"{between.points} points); each point is judged beyond that, its noise widened by the points' scatter "
        f"around it ({between.scatter:.3f} in log)"
    ]


def verdict_line(comparison: Comparison) -> str:
    changed = comparison.environment_changed
    counts: dict[str, int] = {}
    for point in comparison.points:
        shown = _shown_verdict(point.time_verdict, changed, point.gross)
        if shown in NOT_JUDGED:
            shown += " (not judged, same code)" if comparison.same_code(point) else " (not judged)"
        counts[shown] = counts.get(shown, 0) + 1
    memory = sum(p.memory_verdict == "regression" for p in comparison.points)
    launches = sum(p.launch_verdict == "regression" for p in comparison.points)
    syncs = sum(p.sync_verdict == "regression" for p in comparison.points)
    eager = sum(p.eager_verdict == "regression" for p in comparison.points)
    exponents = sum(c.regressed for c in comparison.exponents)
    parts = [f"{n} {shown}" for shown, n in sorted(counts.items())]
    summary = f"{len(comparison.points)} points compared: {', '.join(parts)}"
    if eager:
        summary += f"; {eager} eager-time slowdown(s) of graph-timed points (not gated)"
    summary += f"; {memory} memory regression(s); {launches} launch regression(s)"
    if syncs:
        summary += f"; {syncs} host-sync regression(s)"
    if comparison.exponents:
        summary += f"; {exponents} of {len(comparison.exponents)} exponent bound(s) exceeded"
    if comparison.one_sided:
        summary += f"; {len(comparison.one_sided)} point(s) with a count or memory on one side only (not judged)"
    if comparison.judged_nothing:
        summary += "; no point was judged"
    if comparison.covered().mismatched:
        summary += "; the runs do not match"
    if comparison.unmeasured:
        summary += f"; {len(comparison.unmeasured)} changed impl(s) not measured"
    if comparison.run_moved and comparison.between is not None:
        summary += f"; the whole run moved {math.expm1(comparison.between.shift):+.1%}"
    if comparison.stopped is not None:
        summary += f"; the --max-job-s deadline stopped the rounds after {comparison.stopped.rounds} complete"
    return f"{comparison.verdict.upper()}: {summary}"
