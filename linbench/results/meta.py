"""meta.json's sections, each with its one writer and its one reader.

Nothing here imports torch or another layer: a report reads these records on any machine.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class SweepRecord:
    """meta.json's ``sweep`` section: the sweep a run folder holds, as merged settings and
    tables (enough to plan it again for --resume), with its impls, baselines and point count.
    This is its one writer (``section``) and its one reader (``read``)."""

    command: str  # "run" or "decode"
    name: str
    suite: str | None
    settings: dict[str, Any]  # every key but the [[sweep]] tables, defaults filled in
    tables: list[dict[str, Any]]  # the suite's [[sweep]] tables, as given
    impls: list[str]  # "variant:impl", baselines included
    baselines: list[str]
    points: int

    def section(self) -> dict[str, Any]:
        """The section as meta.json holds it."""
        return asdict(self)

    @classmethod
    def read(cls, meta: Mapping[str, Any]) -> SweepRecord | None:
        """The sweep ``meta`` records; None when it records none that could be planned again (a
        folder not made by run or decode, or a damaged meta.json). A run from before
        ``command`` was recorded is a ``run``."""
        recorded = meta.get("sweep")
        try:
            record = cls(
                command=str(recorded.get("command", "run")),
                name=str(recorded["name"]),
                suite=recorded.get("suite"),
                settings=recorded["settings"],
                tables=recorded["tables"],
                impls=list(recorded.get("impls", [])),
                baselines=list(recorded.get("baselines", [])),
                points=int(recorded.get("points", 0)),
            )
        except (AttributeError, KeyError, TypeError, ValueError):
            return None
        return record if isinstance(record.settings, dict) and isinstance(record.tables, list) else None
