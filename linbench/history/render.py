"""The history's findings in words: one line per changed or split series, the series broken in
the newest run, those it cannot judge and those left out (a few named per reason), a summary line
with the exit status, and the same as JSON."""

from __future__ import annotations

from typing import Any

from linbench.history.detect import Change
from linbench.history.observations import KEY_FIELDS
from linbench.history.verdict import INCONCLUSIVE, REGRESSION, History, SegmentFinding, SeriesFinding

VERDICT = {0: "PASS", REGRESSION: "REGRESSION", INCONCLUSIVE: "INCONCLUSIVE"}
_SHOWN = ("variant", "impl", "mode", "dtype", "batch", "heads", "seq", "dim_k", "device_name")


def point_name(key: tuple[str, ...]) -> str:
    named = dict(zip(KEY_FIELDS, key, strict=True))
    shape = f"B{named['batch']} H{named['heads']} S{named['seq']} D{named['dim_k']}"
    return f"{named['variant']}:{named['impl']} {named['mode']} {named['dtype']} {shape} ({named['device_name']})"


def lines(history: History) -> list[str]:
    span = f"oldest {_first(history)}, newest {history.newest}"
    out = [f"{len(history.findings)} series over {len(history.runs)} runs ({span})"]
    for finding in history.findings:
        out.extend(_series_lines(finding))
    out.extend(_unjudged_lines(history))
    out.extend(_left_out_lines(history))
    changed = sum(f.changed for f in history.findings)
    unjudged = sum(bool(f.unjudged) for f in history.findings)
    broken = sum(bool(f.broken) for f in history.findings)
    out.append(
        f"{VERDICT[history.status]}: {changed} series changed, "
        f"{sum(f.recent_regression is not None for f in history.findings)} regressed in the last "
        f"{history.options.recent} runs, {broken} broken in the newest run, {unjudged} cannot judge the newest runs"
    )
    return out


def _series_lines(finding: SeriesFinding) -> list[str]:
    name = point_name(finding.series.key)
    out = [f"  {name}: split where {reason}" for reason in finding.splits]
    for part, change in _changes(finding):
        run = part.run_at(change.index)
        kind = "regression" if change.regression else "improvement"
        recent = " (recent)" if change is finding.recent_regression else ""
        out.append(
            f"  {name}: {kind}{recent} at run {run.run} (commit {run.commit[:12] or '?'}): "
            f"{change.before_median:.4g} → {change.after_median:.4g} ms on {part.segment.statistic}, "
            f"{change.ratio:.3f}× ({interval_text(change)}), p {change.pvalue:.1e}"
        )
    return out


def _changes(finding: SeriesFinding) -> list[tuple[SegmentFinding, Change]]:
    """Every standing change of the series, and its recent regression where the newest runs
    alone showed it (a step within the last runs, not one of Otava's changes)."""
    found = [(part, change) for part in finding.segments for change in part.changes]
    recent = finding.recent_regression
    if recent is not None and all(change is not recent for _, change in found):
        found.append((finding.segments[-1], recent))
    return found


def interval_text(change: Change) -> str:
    """The ratio's 95% interval, or why there is none (one or two runs on a side)."""
    if change.low is None or change.high is None:
        return f"no interval from {change.runs_before} and {change.runs_after} runs"
    return f"95% {change.low:.3f}–{change.high:.3f}"


def _unjudged_lines(history: History) -> list[str]:
    """The series broken in the newest run, one line per status, and those that cannot judge
    it, one line per reason (a few named on each)."""
    by_reason: dict[str, list[str]] = {}
    for finding in history.findings:
        if finding.broken:
            reason = f"broken in the newest run, ok before: {finding.broken}"
            by_reason.setdefault(reason, []).append(point_name(finding.series.key))
    for finding in history.findings:
        if finding.unjudged:
            by_reason.setdefault(finding.unjudged, []).append(point_name(finding.series.key))
    return [f"  {len(names)} series: {reason}: {_few(names)}" for reason, names in by_reason.items()]


def _left_out_lines(history: History) -> list[str]:
    names = [point_name(f.series.key) for f in history.left_out]
    if not names:
        return []
    why = "not measured in the newest run nor in the run before it (left the suite): not judged"
    return [f"  {len(names)} series: {why}: {_few(names)}"]


def _few(names: list[str], named: int = 3) -> str:
    more = f" and {len(names) - named} more" if len(names) > named else ""
    return f"{'; '.join(names[:named])}{more}"


def as_json(history: History) -> dict[str, Any]:
    return {
        "status": history.status,
        "verdict": VERDICT[history.status],
        "runs": list(history.runs),
        "newest": history.newest,
        "options": vars(history.options),
        "series": [
            _series_json(f)
            for f in history.findings
            if f.changed or f.unjudged or f.splits or f.recent_regression or f.broken
        ],
        "series_count": len(history.findings),
        "left_out": [dict(zip(KEY_FIELDS, f.series.key, strict=True)) for f in history.left_out],
    }


def _series_json(finding: SeriesFinding) -> dict[str, Any]:
    return {
        "point": dict(zip(KEY_FIELDS, finding.series.key, strict=True)),
        "splits": finding.splits,
        "unjudged": finding.unjudged,
        "broken": finding.broken,
        "changes": [
            {
                "run": part.run_at(c.index).run,
                "commit": part.run_at(c.index).commit,
                "statistic": part.segment.statistic,
                "before_ms": c.before_median,
                "after_ms": c.after_median,
                "ratio": c.ratio,
                "ratio_95": None if c.low is None else [c.low, c.high],
                "runs_before": c.runs_before,
                "runs_after": c.runs_after,
                "pvalue": c.pvalue,
                "kind": "regression" if c.regression else "improvement",
                "recent": c is finding.recent_regression,
            }
            for part, c in _changes(finding)
        ],
    }


def _first(history: History) -> str | None:
    return history.runs[0] if history.runs else None
