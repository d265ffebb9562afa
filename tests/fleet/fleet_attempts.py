"""Shard attempt folders written by hand, as an agent (or a coordinator) leaves them."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fake_runner import fake_time_ms

from linbench.fleet.folders import write_plan
from linbench.fleet.shards import Shard, make_shards, plan_hash
from linbench.results.record import Key
from linbench.results.schema import KEY_COLUMNS
from linbench.results.store import RunStore

CARD_A, CARD_B = "GPU-aaaa", "GPU-bbbb"


def new_plan(run_dir: Path, keys: Sequence[Key], **settings: Any) -> tuple[Shard, ...]:
    shards = make_shards(keys, split=settings.pop("split", "scenario"))
    write_plan(run_dir, shards, plan_hash(shards), settings)
    return shards


def write_attempt(
    run_dir: Path,
    shard: Shard,
    number: int,
    card: str,
    rows: Sequence[Key],
    *,
    asked: Sequence[Key] | None = None,
    crashed: Sequence[Key] = (),
    model: str = "Fake H100",
    digest: str | None = None,
    meta: dict[str, Any] | None = None,
    inventory: str = "fake",
) -> Path:
    """Attempt ``number`` of ``shard`` on ``card``: an ok row (one process, 3 samples) per
    key of ``rows``, then a crashed row per key of ``crashed``."""
    path = run_dir / "shards" / shard.id / f"attempt-{number}"
    store = RunStore.create_at(path)
    fleet = {
        **{"shard": shard.id, "attempt": number, "gpu_uuid": card, "gpu_name": model, "host": "node-a"},
        **{"plan_hash": digest or plan_hash_of(run_dir), "inventory": inventory},
        "keys": [list(k) for k in (asked if asked is not None else shard.keys)],
    }
    store.write_meta({"status": "complete", "fleet": fleet, **(meta or {})})
    for key in rows:
        point = dict(zip(KEY_COLUMNS, key, strict=True))
        ms = fake_time_ms(key)
        store.append_process(point | {"process": 0, "status": "ok", "time_ms": ms}, [ms] * 3)
        where = {"gpu_uuid": card, "shard": shard.id, "attempt": number, "started_at": "t0", "finished_at": "t1"}
        store.append(point | where | {"device_name": model, "status": "ok", "time_ms": ms, "samples": 3})
    for key in crashed:
        store.append(dict(zip(KEY_COLUMNS, key, strict=True)) | {"device_name": model, "status": "crashed"})
    return path


def plan_hash_of(run_dir: Path) -> str:
    from linbench.fleet.folders import read_plan

    return read_plan(run_dir)[1]


def tree_bytes(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
