"""Points whose two sides ran different Triton configs: a change in time there may be the
autotuner's choice, not the code.

A Triton impl (fla) records, per point, each autotuned kernel it ran and the config that ran
(results.csv's ``triton_configs``: ``KERNEL: BT=64 BV=32 warps=4 stages=2``, ``;``-separated,
every config any of the point's processes ran). Where the baseline's and the current run's
differ for a point, ``compare`` and ``ab`` say so, kernel by kernel, and a point the gate calls
slower or a regression is named as having run other configs: the verdict stands, and the reader
is told what else changed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from linbench.gate.compare import MATCH_COLUMNS, Comparison
from linbench.gate.render import point_label
from linbench.report.load import Run

COLUMN = "triton_configs"


@dataclass(frozen=True)
class ConfigChange:
    """A point whose autotuned kernels ran other configs on the two sides."""

    key: dict[str, Any]
    kernels: tuple[tuple[str, str, str], ...]  # (kernel, baseline's configs, current's), each differing kernel
    verdict: str  # the point's time verdict

    @property
    def slower(self) -> bool:
        return self.verdict in ("regression", "slower")

    def describe(self) -> str:
        changed = "; ".join(f"{kernel} {base or 'not run'} → {cur or 'not run'}" for kernel, base, cur in self.kernels)
        return f"{point_label(self.key)}: {changed}"


def config_changes(baseline: Run, current: Run, comparison: Comparison) -> list[ConfigChange]:
    """The compared points whose recorded Triton configs differ between the two runs (none where
    a run recorded none: a run older than the column, or no Triton impl)."""
    base, cur = _configs(baseline), _configs(current)
    changes = []
    for point in comparison.points:
        key = tuple(str(point.key[column]) for column in MATCH_COLUMNS)
        if key not in base or key not in cur:
            continue
        kernels = _differing(base[key], cur[key])
        if kernels:
            changes.append(ConfigChange(point.key, kernels, point.time_verdict))
    return changes


def config_lines(changes: list[ConfigChange]) -> list[str]:
    """What compare prints: the slower points first (their change may be the autotuner's), then
    the rest; nothing where every point ran the same configs."""
    slower = [change for change in changes if change.slower]
    rest = [change for change in changes if not change.slower]
    lines = []
    if slower:
        lines.append(
            f"{len(slower)} slower or regressed point(s) ran other Triton configs on the two sides (triton_configs): "
            "the change in time may be the autotuner's choice, not the code; "
            + "; ".join(change.describe() for change in slower)
        )
    if rest:
        lines.append(
            f"{len(rest)} other point(s) ran other Triton configs on the two sides: "
            + "; ".join(change.describe() for change in rest)
        )
    return lines


def config_json(changes: list[ConfigChange]) -> list[dict[str, Any]]:
    return [
        {**change.key, "verdict": change.verdict, "kernels": [list(kernel) for kernel in change.kernels]}
        for change in changes
    ]


def _configs(run: Run) -> dict[tuple[str, ...], dict[str, set[str]]]:
    """Each point's recorded configs by kernel, keyed as compare matches points."""
    frame = run.results
    if COLUMN not in frame.columns:
        return {}
    found: dict[tuple[str, ...], dict[str, set[str]]] = {}
    for row in frame.to_dict("records"):
        text = row.get(COLUMN)
        if not isinstance(text, str) or not text:
            continue
        row = row | {"device_type": str(row["device"]).split(":")[0]}
        key = tuple(str(row.get(column)) for column in MATCH_COLUMNS)
        found[key] = _by_kernel(text)
    return found


def _by_kernel(text: str) -> dict[str, set[str]]:
    kernels: dict[str, set[str]] = {}
    for entry in text.split(";"):
        kernel, _, config = entry.partition(": ")
        if kernel:
            kernels.setdefault(kernel.strip(), set()).add(config.strip())
    return kernels


def _differing(base: dict[str, set[str]], cur: dict[str, set[str]]) -> tuple[tuple[str, str, str], ...]:
    return tuple(
        (kernel, " | ".join(sorted(base.get(kernel, ()))), " | ".join(sorted(cur.get(kernel, ()))))
        for kernel in sorted(set(base) | set(cur))
        if base.get(kernel) != cur.get(kernel)
    )
