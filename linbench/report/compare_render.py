"""A Comparison as a table and a one-line verdict (rich for people, markdown for CI)."""

from __future__ import annotations

from typing import Any

from linbench.report.compare import Comparison, ExponentCheck, PointDiff
from linbench.report.fit import FLAT, NONE, quality_text
from linbench.report.render import ReportTable
from linbench.units import format_bytes, format_ms, format_size

VERDICT_STYLE = {"regression": "bold red", "broken": "bold red", "slower": "yellow", "faster": "green"}


def point_label(key: dict[str, Any]) -> str:
    dims = f"D={key['dim_k']}" if key["dim_k"] == key["dim_v"] else f"Dk={key['dim_k']} Dv={key['dim_v']}"
    masking = "causal" if key["causal"] else "bidir"
    return (
        f"{key['variant']}:{key['impl']} {key['mode']} {key['dtype']} {masking} {key['device_type']} "
        f"B={key['batch']} H={key['heads']} S={format_size(int(key['seq']))} {dims}"
    )


def _percent(value: float | None, signed: bool = True) -> str:
    if value is None:
        return "-"
    return f"{value * 100:+.1f}%" if signed else f"±{value * 100:.1f}%"


def _time_cells(point: PointDiff) -> list[str]:
    base = format_ms(point.base_ms) if point.base_status == "ok" else point.base_status
    cur = format_ms(point.ms) if point.status == "ok" else point.status
    ratio = f"{point.ratio:.3f}x" if point.ratio is not None else "-"
    return [base, cur, ratio, _percent(point.noise, signed=False), point.time_verdict]


def _memory_cells(point: PointDiff) -> list[str]:
    return [
        format_bytes(point.base_bytes),
        format_bytes(point.bytes),
        _percent(point.memory_growth),
        point.memory_verdict,
    ]


def points_table(comparison: Comparison) -> ReportTable:
    columns = ["point", "baseline", "current", "ratio", "noise", "time", "base mem", "cur mem", "growth", "memory"]
    rows = [[point_label(p.key), *_time_cells(p), *_memory_cells(p)] for p in comparison.points]
    return ReportTable(f"{comparison.current} against {comparison.baseline}", columns, rows)


def exponent_table(checks: list[ExponentCheck]) -> ReportTable:
    rows = []
    for check in checks:
        fixed = check.fixed
        size = f"B={fixed['batch']}" if "batch" in fixed else f"tokens={fixed.get('tokens')}"
        where = f"{fixed['dtype']} {fixed['mode']} {size} H={fixed['heads']} D={fixed['dim_k']}"
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


def verdict_line(comparison: Comparison) -> str:
    counts: dict[str, int] = {}
    for point in comparison.points:
        counts[point.time_verdict] = counts.get(point.time_verdict, 0) + 1
    memory = sum(p.memory_verdict == "regression" for p in comparison.points)
    exponents = sum(c.regressed for c in comparison.exponents)
    parts = [f"{n} {verdict}" for verdict, n in sorted(counts.items())]
    summary = f"{len(comparison.points)} points compared: {', '.join(parts)}; {memory} memory regression(s)"
    if comparison.exponents:
        summary += f"; {exponents} of {len(comparison.exponents)} exponent bound(s) exceeded"
    return ("REGRESSION: " if comparison.failed else "PASS: ") + summary
