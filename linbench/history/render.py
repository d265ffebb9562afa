"""The history's findings in words: one line per changed, split or unjudged series, a summary
line with the exit status, and the same as JSON."""

from __future__ import annotations

from typing import Any

from linbench.history.observations import KEY_FIELDS
from linbench.history.verdict import INCONCLUSIVE, REGRESSION, History, SeriesFinding

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
    changed = sum(f.changed for f in history.findings)
    insufficient = sum(bool(f.unjudged) for f in history.findings)
    out.append(
        f"{VERDICT[history.status]}: {changed} series changed, "
        f"{sum(f.recent_regression is not None for f in history.findings)} regressed in the last "
        f"{history.options.recent} runs, {insufficient} cannot judge the newest run"
    )
    return out


def _series_lines(finding: SeriesFinding) -> list[str]:
    name = point_name(finding.series.key)
    out = [f"  {name}: split where {reason}" for reason in finding.splits]
    for part in finding.segments:
        for change in part.changes:
            run = part.run_at(change.index)
            kind = "regression" if change.regression else "improvement"
            recent = " (recent)" if change is finding.recent_regression else ""
            recent = " (unconfirmed: the newest run only)" if part.unconfirmed(change) else recent
            out.append(
                f"  {name}: {kind}{recent} at run {run.run} (commit {run.commit[:12] or '?'}): "
                f"{change.before_median:.4g} → {change.after_median:.4g} ms on {part.segment.statistic}, "
                f"{change.ratio:.3f}× (95% {change.low:.3f}–{change.high:.3f}), p {change.pvalue:.1e}"
            )
    return out


def _unjudged_lines(history: History, named: int = 3) -> list[str]:
    """The series that cannot judge the newest run, one line per reason (a few named)."""
    by_reason: dict[str, list[str]] = {}
    for finding in history.findings:
        if finding.unjudged:
            by_reason.setdefault(finding.unjudged, []).append(point_name(finding.series.key))
    out = []
    for reason, names in by_reason.items():
        more = f" and {len(names) - named} more" if len(names) > named else ""
        out.append(f"  {len(names)} series: {reason}: {'; '.join(names[:named])}{more}")
    return out


def as_json(history: History) -> dict[str, Any]:
    return {
        "status": history.status,
        "verdict": VERDICT[history.status],
        "runs": list(history.runs),
        "options": vars(history.options),
        "series": [_series_json(f) for f in history.findings if f.changed or f.unjudged or f.splits],
        "series_count": len(history.findings),
    }


def _series_json(finding: SeriesFinding) -> dict[str, Any]:
    return {
        "point": dict(zip(KEY_FIELDS, finding.series.key, strict=True)),
        "splits": finding.splits,
        "unjudged": finding.unjudged,
        "changes": [
            {
                "run": part.run_at(c.index).run,
                "commit": part.run_at(c.index).commit,
                "statistic": part.segment.statistic,
                "before_ms": c.before_median,
                "after_ms": c.after_median,
                "ratio": c.ratio,
                "ratio_95": [c.low, c.high],
                "pvalue": c.pvalue,
                "kind": "regression" if c.regression else "improvement",
                "recent": c is finding.recent_regression,
                "unconfirmed": part.unconfirmed(c),
            }
            for part in finding.segments
            for c in part.changes
        ],
    }


def _first(history: History) -> str | None:
    return history.runs[0] if history.runs else None
