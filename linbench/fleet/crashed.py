"""The rows of points an agent died on, as whoever outlives it writes them.

When an agent dies mid-point, the process that watched it (the local coordinator,
linbench/fleet/local.py; a launcher's task, linbench/fleet/watch.py) becomes the writer of
its attempt folder: each point no agent will run gets a ``crashed`` row there, built by the
results record (``record.failure_row``) and appended through ``RunStore``, like every other
row, and stamped with the attempt's ``where`` columns.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from typing import Any

from linbench.results.record import Key, PointFacts, ProcessResult, failure_row
from linbench.results.schema import KEY_COLUMNS
from linbench.results.store import RunStore, RunStoreError


def write_crashed(store: RunStore, keys: Iterable[Key], where: Mapping[str, Any], why: str, gpu_name: str) -> None:
    """A ``crashed`` row with the error ``why`` for each point of ``keys`` in ``store``, its
    ``where`` columns and its device: the name the attempt's runner recorded, else ``gpu_name``."""
    device = _device_name(store) or gpu_name
    finished = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
    for key in keys:
        facts = PointFacts(dict(zip(KEY_COLUMNS, key, strict=True)), device)
        row = failure_row(facts, ProcessResult(status="crashed", error=why))
        store.append(row | dict(where) | {"finished_at": finished})


def died(status: int) -> str:
    """How a process ended, from its exit status: ``signal 9`` or ``exit status 1``."""
    return f"signal {-status}" if status < 0 else f"exit status {status}"


def _device_name(store: RunStore) -> str:
    try:
        return str(store.read_meta().get("device_name") or "")
    except RunStoreError:
        return ""
