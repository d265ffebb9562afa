"""A point's results row, built in one place: from its plan-time facts, its correctness check
and its processes.

Whatever writes results rows (the sweep runner; ``linbench ab``, which merges rounds into one
row per point; the fleet, for the points an agent died on: linbench/fleet/crashed.py) calls
``point_row`` once every process of a point ended ok, or ``failure_row`` when the point failed
or was never measured, and ``process_row`` for each processes.csv row. ``linbench merge``
copies rows these wrote, through RunStore's schema check.
What a point is (its key, device, params, FLOPs, context) is fixed when the sweep is planned
and handed in as ``PointFacts``, so building a row asks nothing of the plan or the variants.
A row's key is ``row_key``, the one copy of it, and a key is a ``Key`` (its KEY_COLUMNS values
as text, as CSV holds them): the one key type of every room.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from linbench.results.processes import ProcessResult, summarise
from linbench.results.schema import COLUMNS, KEY_COLUMNS, KEY_DEFAULTS, MEASURED_COLUMNS
from linbench.units import as_number

__all__ = [
    "PER_SECOND",
    "PER_TOKEN",
    "TIME_COLUMNS",
    "Checked",
    "Key",
    "PointFacts",
    "ProcessResult",
    "failure_row",
    "first_failure",
    "point_row",
    "process_row",
    "row_key",
]

# A point's key: its KEY_COLUMNS values as text, as CSV holds them (row_key).
Key = tuple[str, ...]

# The rate a row derives from its time besides TFLOP/s: tokens per second (every position of
# every sequence of the batch) or, for a point whose call makes one token per sequence (a
# decode step), the time per token.
PER_SECOND = "tokens_per_s"
PER_TOKEN = "time_per_token_ms"
# A pack's columns (run --pack), fixed when the sweep is planned.
PACK_COLUMNS = ("pack", "packing", "sequences", "padding_waste")
# A serving decode point's settings (sweep/serving.py), fixed when the sweep is planned.
SERVING_COLUMNS = ("pool", "accept", "contexts")
# The columns that hold a time, empty unless the point passed its check and ran to the end.
TIME_COLUMNS = (
    *("time_ms", "time_ms_p20", "time_ms_p80", "samples", "tflops", "time_per_token_ms", "device_ms"),
    *("tokens_per_s", "time_ms_proc_lo", "time_ms_proc_hi", "between_spread", "timing"),
    "time_per_accepted_token_ms",
    *("kernel_ms", "host_overhead_ms", "energy_j", "power_w", "tokens_per_j"),
    *("energy_window_s", "energy_updates"),
)


def row_key(row: Mapping[str, Any]) -> Key:
    """The point a row of any run file belongs to: its KEY_COLUMNS as text, as CSV holds them
    (None as an empty cell). A key column a row from an older run lacks, or left empty, reads
    as schema.KEY_DEFAULTS says (kv_heads: the row's heads), so its points keep their keys."""
    return tuple(_key_text(row, column) for column in KEY_COLUMNS)


def _key_text(row: Mapping[str, Any], column: str) -> str:
    value = row.get(column)
    if value in (None, "") and column in KEY_DEFAULTS:
        default = KEY_DEFAULTS[column]
        value = row.get(default) if default is not None else None
    return "" if value is None else str(value)


@dataclass(frozen=True)
class PointFacts:
    """What a point is, fixed when its sweep is planned: its key columns and the columns of
    its results row that no process measures."""

    key: Mapping[str, Any]  # KEY_COLUMNS → value
    device_name: str
    params: str = ""  # the impl's --param values that differ from its defaults (k=v;k=v)
    flops: float | None = None  # one call's, by the variant's count (None: not counted)
    context: int | None = None  # a decode point's context
    rate: str = PER_SECOND  # PER_SECOND or PER_TOKEN
    tokens: int = 0  # the tokens one call processes (batch·seq; a pack's real tokens), for PER_SECOND
    bytes: int | None = None  # the fewest bytes one call moves (None: no model, as for decode)
    # A pack's columns (pack, packing, ...), or a serving decode point's (pool, accept, contexts).
    pack: Mapping[str, Any] = field(default_factory=dict)
    gqa: str = ""  # with fewer key/value heads than heads: "native" or "expanded"
    tp: int | None = None  # --tp: the row's heads are one of tp ranks' shard (None: no preset)

    def columns(self) -> dict[str, Any]:
        """The point's own columns of its results row."""
        own = {"device_name": self.device_name, "params": self.params, "flops": self.flops, "context": self.context}
        own |= {"tp": self.tp}
        return dict(self.key) | own | {"bytes": self.bytes} | dict(self.pack) | {"gqa": self.gqa or None}

    @classmethod
    def from_row(cls, row: Mapping[str, Any], rate: str) -> PointFacts:
        """The facts a results row recorded (cells as text, or as written)."""
        return cls(
            key=dict(zip(KEY_COLUMNS, row_key(row), strict=True)),
            device_name=str(row.get("device_name") or ""),
            params=str(row.get("params") or ""),
            flops=COLUMNS["flops"].parse(row.get("flops")),
            context=COLUMNS["context"].parse(row.get("context")),
            rate=rate,
            tokens=_tokens(row),
            bytes=COLUMNS["bytes"].parse(row.get("bytes")),
            pack={c: row[c] for c in (*PACK_COLUMNS, *SERVING_COLUMNS) if row.get(c) not in (None, "")},
            gqa=str(row.get("gqa") or ""),
            tp=COLUMNS["tp"].parse(row.get("tp")),
        )


def _tokens(row: Mapping[str, Any]) -> int:
    """The real tokens of a row's call: batch·seq, less a pack's padding."""
    waste = COLUMNS["padding_waste"].parse(row.get("padding_waste")) or 0.0
    return round(int(row["batch"]) * int(row["seq"]) * (1.0 - waste))


@dataclass(frozen=True)
class Checked:
    """A point's correctness check as its results row reports it: the relative error against
    the fp64 reference, and the length the check ran at (measured once per point)."""

    rel_err: float | None = None
    check_seq: int | None = None

    def columns(self) -> dict[str, Any]:
        return {"rel_err": self.rel_err, "check_seq": self.check_seq}


def process_row(facts: PointFacts, process: ProcessResult) -> dict[str, Any]:
    """The processes.csv row of one of the point's processes."""
    return dict(facts.key) | process.columns()


def point_row(facts: PointFacts, checked: Checked, processes: Sequence[ProcessResult]) -> dict[str, Any]:
    """The results row of a point whose processes all ended ok: each measured column combined
    over them as it declares (processes.summarise), the check's columns, and the rates."""
    return _with_rates(facts.columns() | summarise(processes) | checked.columns(), facts)


def failure_row(
    facts: PointFacts,
    failed: ProcessResult,
    checked: Checked | None = None,
    *,
    processes: int | None = None,
    where: str | None = None,
) -> dict[str, Any]:
    """The results row of a point that failed (or was skipped): what ``failed`` recorded, the
    check's columns where it ran, how many ``processes`` the point had, and ``where`` (which
    process or round failed, when it was not the only one) before the error."""
    row = facts.columns() | {c: v for c in MEASURED_COLUMNS if (v := getattr(failed, c)) not in (None, "")}
    if checked is not None:
        row |= checked.columns()
    if where is not None:
        row["error"] = f"{where}: {failed.error or failed.status}"
    if processes is not None:
        row["processes"] = processes
    return _with_rates(row, facts)


def first_failure(processes: Sequence[ProcessResult]) -> ProcessResult | None:
    """The first of a point's processes that did not end ok: a flaky impl is a broken one."""
    return next((process for process in processes if process.status != "ok"), None)


def _with_rates(row: dict[str, Any], facts: PointFacts) -> dict[str, Any]:
    """``row`` with its rates: TFLOP/s where the point's FLOPs are counted, and its
    ``facts.rate``. A time is reported only for a point that passed its check and ran to the
    end: any other row has none."""
    if row.get("status") != "ok" or not row.get("time_ms"):
        return row | dict.fromkeys(TIME_COLUMNS)
    time_ms = float(row["time_ms"])
    seconds = time_ms / 1e3
    if facts.flops:
        row["tflops"] = facts.flops / seconds / 1e12
    row[facts.rate] = time_ms if facts.rate == PER_TOKEN else facts.tokens / seconds
    return _with_device_split(_serving_rates(row, seconds), facts)


def _serving_rates(row: dict[str, Any], seconds: float) -> dict[str, Any]:
    """A serving decode row's rates: the step over the tokens a request keeps, the batch's
    kept tokens per second, and how many requests' states fit the memory budget."""
    kept = as_number(row.get("accepted_per_step"))
    if kept:
        row["time_per_accepted_token_ms"] = seconds * 1e3 / kept
        row["tokens_per_s"] = int(row["batch"]) * kept / seconds
    budget, each = as_number(row.get("memory_budget_bytes")), as_number(row.get("state_bytes_per_request"))
    if budget and each:
        row["requests_fit"] = int(budget // each)
    return row


def _with_device_split(row: dict[str, Any], facts: PointFacts) -> dict[str, Any]:
    """The host's share of the call's time, where its kernels' device time was read, and the
    tokens per joule of a run point, where its energy was."""
    kernel_ms, energy_j = row.get("kernel_ms"), row.get("energy_j")
    if kernel_ms not in (None, ""):
        row["host_overhead_ms"] = float(row["time_ms"]) - float(kernel_ms)
    if energy_j not in (None, "") and float(energy_j) > 0 and facts.rate == PER_SECOND:
        row["tokens_per_j"] = facts.tokens / float(energy_j)
    return row
