"""Synthetic histories made from a committed reference run: copies of its files, each copy's
times multiplied by measured noise (and a planted step where asked), with its own commit and
times, as a nightly job's run folders would be."""

from __future__ import annotations

import csv
import hashlib
import json
import math
import random
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

REFERENCE = Path(__file__).resolve().parents[2] / "results/cpu-reference/20261124T060541Z-gated"
# The scatter of one-thread CPU times between two runs measured apart on the loaded 2-core
# development machine (docs/gate.md, "Between runs": the points scattered 4.7%).
BETWEEN_RUN_SIGMA = 0.047
START = datetime(2026, 10, 1, tzinfo=timezone.utc)


def commit(index: int) -> str:
    return hashlib.sha1(str(index).encode()).hexdigest()


def write_history(
    root: Path,
    copies: int,
    seed: int = 0,
    step: float = 1.0,
    step_from: int | None = None,
    point: tuple[str, str, str] | None = None,
    meta_changes: dict[int, dict[str, object]] | None = None,
    variants: tuple[str, ...] = ("gated-deltanet", "softmax"),
) -> list[Path]:
    """``copies`` run folders under ``root`` (copy 1 oldest). From copy ``step_from`` on, the
    times of ``point`` (variant, impl, seq) are multiplied by ``step``; ``meta_changes`` sets
    meta.json entries from a copy on. Only the points of ``variants`` are copied (a test reads
    dozens of runs: fewer points keep it quick)."""
    rng = random.Random(seed)
    meta = json.loads((REFERENCE / "meta.json").read_text())
    folders = []
    changes: dict[str, object] = {}
    for index in range(1, copies + 1):
        noise: dict[tuple[str, ...], float] = {}
        changes |= (meta_changes or {}).get(index, {})

        def factor(row: dict[str, str], index: int = index, noise: dict[tuple[str, ...], float] = noise) -> float:
            key = (row["variant"], row["impl"], row["mode"], row["seq"])
            if key not in noise:
                noise[key] = math.exp(rng.gauss(0.0, BETWEEN_RUN_SIGMA))
            planted = point is not None and step_from is not None and index >= step_from
            hit = planted and (row["variant"], row["impl"], row["seq"]) == point
            return noise[key] * (step if hit else 1.0)

        when = START + timedelta(days=index)
        folder = root / f"{when:%Y%m%dT%H%M%SZ}-nightly"
        folder.mkdir(parents=True)
        for name in ("results.csv", "processes.csv"):
            _scaled_copy(REFERENCE / name, folder / name, factor, variants)
        copy = (
            meta
            | changes
            | {
                "git_sha": commit(index),
                "git_commit_time": (when - timedelta(hours=1)).isoformat(),
                "started_at": when.isoformat(),
                "schema_version": meta.get("schema_version"),
            }
        )
        (folder / "meta.json").write_text(json.dumps(copy))
        folders.append(folder)
    return folders


def _scaled_copy(source: Path, target: Path, factor, variants: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
    with source.open(newline="") as handle:
        reader = csv.DictReader(handle)
        fields = list(reader.fieldnames or [])
        rows = [row for row in reader if row["variant"] in variants]
    timed = [f for f in fields if f.endswith("_ms") or "_ms_" in f]
    with target.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            f = factor(row)
            for name in timed:
                if row[name] not in ("", None):
                    row[name] = repr(float(row[name]) * f)
            writer.writerow(row)


def edit_rows(folder: Path, edit: Callable[[int, dict[str, str]], dict[str, str] | None]) -> None:
    """Rewrites ``folder``'s results.csv with each row (its index, its cells) as ``edit`` returns
    it; a row it returns None for is left out (the run has no row for that point)."""
    path = folder / "results.csv"
    with path.open(newline="") as handle:
        reader = csv.DictReader(handle)
        fields = list(reader.fieldnames or [])
        rows = [edited for index, row in enumerate(reader) if (edited := edit(index, row)) is not None]
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def ended(status: str) -> Callable[[dict[str, str]], dict[str, str]]:
    """A row edit: the point ended with ``status`` and no time, as a run writes such a row."""

    def edit(row: dict[str, str]) -> dict[str, str]:
        timed = {name: "" for name in row if name.endswith("_ms") or "_ms_" in name}
        return row | timed | {"status": status}

    return edit
