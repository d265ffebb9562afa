"""A fleet run folder: the plan, and one run folder per shard attempt.

::

    RUN/
      fleet.json                     the plan: its sweep, its shards (points in plan order),
                                     its hash
      shards/<shard>/attempt-<n>/    a linbench run folder (results.csv, processes.csv,
                                     samples.csv, meta.json) written by one agent; each
                                     results row says where and when it was measured (the
                                     ``where`` columns of linbench/results/schema.py)
      results.csv, ... , meta.json   the merge of the attempts (linbench.fleet.merge)

Each attempt folder has exactly one writer (its agent, or the coordinator once that agent
is dead), so no two processes ever append to one file, on one host or across hosts sharing
the folder. Attempt numbers are claimed by ``mkdir``, which is atomic on one filesystem.
"""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from linbench.fleet.errors import MergeError
from linbench.fleet.shards import Shard

FLEET_FILE = "fleet.json"
SHARDS_DIR = "shards"
ATTEMPT_PREFIX = "attempt-"


def write_plan(run_dir: Path, shards: Sequence[Shard], plan_hash: str, settings: Mapping[str, Any]) -> None:
    """fleet.json (made once: a second writer of the same plan leaves it; of another plan, an
    error, so two runs never share one folder)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / FLEET_FILE
    body = {"plan_hash": plan_hash, "settings": dict(settings), "shards": [s.as_json() for s in shards]}
    if path.exists():
        existing = read_plan(run_dir)[1]
        if existing != plan_hash:
            raise MergeError(f"{run_dir} holds another plan (hash {existing}, this one {plan_hash}); use a new folder")
        return
    # Every --shard task of a launcher may write it at once, on several hosts: each its own
    # temporary file, the same content renamed over one name.
    tmp = path.with_name(f"{FLEET_FILE}.{platform.node()}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(body, indent=1) + "\n")
    tmp.replace(path)


def read_plan(run_dir: Path) -> tuple[tuple[Shard, ...], str, dict[str, Any]]:
    """(shards, plan hash, settings) of fleet.json; MergeError when it is missing or broken."""
    path = run_dir / FLEET_FILE
    if not path.is_file():
        raise MergeError(_not_a_fleet_run(run_dir))
    try:
        data = json.loads(path.read_text())
        shards = tuple(Shard.from_json(entry) for entry in data["shards"])
        return shards, str(data["plan_hash"]), dict(data.get("settings", {}))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise MergeError(f"{path} is not a fleet plan linbench wrote ({type(exc).__name__}: {exc})") from None


def _not_a_fleet_run(run_dir: Path) -> str:
    """Why a folder without fleet.json has nothing to merge, in words."""
    if not run_dir.exists():
        return f"{run_dir} does not exist"
    if (run_dir / "results.csv").is_file():
        return (
            f"{run_dir} is a run on one device, not one spread over several GPUs (--devices, --shard): "
            "its results.csv is already whole, with nothing to merge"
        )
    return f"{run_dir} is not a run spread over several GPUs (--devices, --shard): it holds no {FLEET_FILE}"


def claim_attempt(run_dir: Path, shard_id: str) -> tuple[int, Path]:
    """The next attempt of a shard: (its number, its new empty folder)."""
    folder = run_dir / SHARDS_DIR / shard_id
    folder.mkdir(parents=True, exist_ok=True)
    while True:
        taken = [n for n, _ in _numbered(folder)]
        number = max(taken, default=0) + 1
        path = folder / f"{ATTEMPT_PREFIX}{number}"
        try:
            path.mkdir()
        except FileExistsError:
            continue  # another agent claimed it meanwhile
        return number, path


def _numbered(folder: Path) -> list[tuple[int, Path]]:
    found = []
    for path in folder.glob(f"{ATTEMPT_PREFIX}*"):
        suffix = path.name.removeprefix(ATTEMPT_PREFIX)
        if suffix.isdigit() and path.is_dir():
            found.append((int(suffix), path))
    return sorted(found)


def foreign_entries(run_dir: Path, shards: Sequence[Shard]) -> list[Path]:
    """What RUN/shards/ holds that no agent of this plan made: an entry that is not one of its
    shards' folders, or, in a shard's folder, one that is not an ``attempt-<n>`` folder (a run
    copied in, a folder renamed by hand); sorted."""
    root = run_dir / SHARDS_DIR
    if not root.is_dir():
        return []
    ids = {shard.id for shard in shards}
    found = []
    for entry in sorted(root.iterdir()):
        if entry.name not in ids or not entry.is_dir():
            found.append(entry)
            continue
        numbered = {path for _, path in _numbered(entry)}
        found += [inner for inner in sorted(entry.iterdir()) if inner not in numbered]
    return found


def attempts(run_dir: Path, shard_id: str) -> list[tuple[int, Path]]:
    """(number, folder) of every attempt of a shard, oldest first."""
    folder = run_dir / SHARDS_DIR / shard_id
    return _numbered(folder) if folder.is_dir() else []
