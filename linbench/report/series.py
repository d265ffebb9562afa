"""How a run's rows group into the series the reports fit and draw.

A *scenario* is what a figure or table holds fixed for every impl in it (device, dtype,
mode, masking, and of batch, heads, length and head dims all but the axis it runs along). A
*series* is one impl's points along one axis of a scenario: time or memory against ``seq``,
``dim`` (the head dim), ``batch``, ``heads`` or ``chunk`` (the chunk size of a --chunk sweep,
at a fixed length: only the impls that take one). Key/value heads are held fixed like heads.
Decode rows (mode "decode") form scenarios of their own, whose length is the context and
whose series add a third metric, the bytes of the decoder's state.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pandas as pd

from linbench.results.kinds import DECODE_ROWS, row_kind
from linbench.units import format_size

# Held fixed in every scenario, whichever axis it runs along.
BASE_COLUMNS = ("device", "device_name", "dtype", "mode", "causal", "batch", "heads", "kv_heads", "v_heads")
AXES = ("seq", "dim", "batch", "heads", "chunk")
METRICS = ("time", "memory", "state")
METRIC_COLUMN = {"time": "time_ms", "memory": "peak_bytes", "state": "state_bytes"}
# A CPU run point's memory figure: the peak of what one call allocated through torch (exact,
# where peak RSS, peak_bytes, counts the process's history). Runs before it have peak RSS alone.
ALLOC_COLUMN = "alloc_peak_bytes"


def memory_column(rows: pd.DataFrame) -> str:
    """The column ``rows`` show memory by: alloc_peak_bytes where they recorded it (CPU run
    points), else peak_bytes (GPU points, CPU decode steps, older runs)."""
    if ALLOC_COLUMN in rows.columns and rows[ALLOC_COLUMN].notna().any():
        return ALLOC_COLUMN
    return METRIC_COLUMN["memory"]


@dataclass(frozen=True)
class Scenario:
    """The fixed part of a group of series: column → value."""

    axis: str
    fixed: tuple[tuple[str, Any], ...]

    def get(self, column: str) -> Any:
        return dict(self.fixed)[column]

    def as_dict(self) -> dict[str, Any]:
        return {name: plain(value) for name, value in self.fixed}

    @property
    def decode(self) -> bool:
        """True for a scenario of linbench decode rows (its length is the context)."""
        return row_kind(dict(self.fixed)["mode"]) is DECODE_ROWS

    def label(self) -> str:
        """``fp32 fwd causal · B=1 H=8 D=64`` — what a title or table caption says is fixed."""
        f = dict(self.fixed)
        parts = [f["dtype"], f["mode"]]
        if not self.decode:  # decoding is causal
            parts.append("causal" if f["causal"] else "bidirectional")
        sizes = [f"{name}={value}" for name, _, value in _held_counts(f)]
        if "tokens" in f:
            sizes[0] += " (B = tokens / S)"
        if self.axis != "seq":
            sizes.append(f"{row_kind(f['mode']).words.length_label}={format_size(f['seq'])}")
        if self.axis != "dim":
            sizes.append(_dims_label(f["dim_k"], f["dim_v"]))
        elif "dim_v" in f:
            sizes.append(f"Dv={f['dim_v']}")
        if _swept_chunk(f) is not None:
            sizes.append(f"C={_swept_chunk(f)}")
        sizes += [f"{word}{value}" for word, value in _serving(f, ("T=", "state "))]
        return " ".join(parts) + " · " + " ".join(sizes)

    def slug(self) -> str:
        """A file-name-safe form of the label."""
        f = dict(self.fixed)
        causal = "causal" if f["causal"] else "bidir"
        sizes = [f"{short}{value}" for _, short, value in _held_counts(f)]
        if self.axis != "seq":
            sizes.append(f"S{format_size(f['seq'])}")
        if self.axis != "dim":
            sizes.append(f"D{f['dim_k']}" + (f"-Dv{f['dim_v']}" if f["dim_v"] != f["dim_k"] else ""))
        if _swept_chunk(f) is not None:
            sizes.append(f"C{_swept_chunk(f)}")
        sizes += [f"{word}{value}" for word, value in _serving(f, ("T", "state-"))]
        masking = "" if self.decode else f"_{causal}"  # decoding is causal
        return f"{f['dtype']}_{f['mode']}{masking}_" + "_".join(sizes)


def _held_counts(fixed: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(label name, file-name letter, value) of the token budget, batch and heads a scenario
    holds fixed, in that order; an axis the scenario runs along is not among them."""
    held = []
    if "tokens" in fixed:
        held.append(("tokens", "T", format_size(fixed["tokens"])))
    for column, letter in (("batch", "B"), ("heads", "H")):
        if column in fixed:
            held.append((letter, letter, str(fixed[column])))
    kv_heads = fixed.get("kv_heads")
    if kv_heads is not None and kv_heads != fixed.get("heads"):  # grouped-query: the key/value heads
        held.append(("KV", "KV", str(kv_heads)))
    v_heads = fixed.get("v_heads")
    if v_heads is not None and v_heads != fixed.get("heads"):  # GVA: the value heads
        held.append(("HV", "HV", str(v_heads)))
    return held


def _swept_chunk(fixed: dict[str, Any]) -> int | None:
    """The chunk size a scenario holds, where a --chunk sweep set one (None: the impls' own)."""
    chunk = fixed.get("chunk")
    return None if chunk is None or pd.isna(chunk) or not chunk else int(chunk)


def _dims_label(dim_k: int, dim_v: int) -> str:
    return f"D={dim_k}" if dim_k == dim_v else f"Dk={dim_k} Dv={dim_v}"


def plain(value: Any) -> Any:
    """numpy scalars to Python ones, for JSON."""
    return value.item() if hasattr(value, "item") else value


def impl_name(variant: str, impl: str) -> str:
    return f"{variant}:{impl}"


def baseline_names(results: pd.DataFrame, meta: dict[str, Any]) -> set[str]:
    """The run's baselines as ``variant:impl``: from meta.json, else every softmax impl."""
    listed = meta.get("sweep", {}).get("baselines") if isinstance(meta.get("sweep"), dict) else None
    if isinstance(listed, list) and listed:
        return {str(name) for name in listed}
    rows = results[results["variant"] == "softmax"]
    return {impl_name(v, i) for v, i in zip(rows["variant"], rows["impl"], strict=True)}


def dim_v_tracks_dim_k(results: pd.DataFrame) -> bool:
    """True when every row has dim_v == dim_k, so a dim sweep moves both together."""
    return bool((results["dim_k"] == results["dim_v"]).all())


def _serving(fixed: dict[str, Any], words: tuple[str, str]) -> list[tuple[str, Any]]:
    """A serving decode scenario's tokens per step and state dtype, each with its word, and its
    state layout (the layout's own name), where set."""
    steps, state, layout = fixed.get("tokens_per_step"), fixed.get("state_dtype"), fixed.get("state_layout")
    given = [
        (words[0], int(steps)) if steps else None,
        (words[1], state) if state else None,
        ("", layout) if isinstance(layout, str) and layout else None,
    ]
    return [pair for pair in given if pair is not None]


def base_columns(results: pd.DataFrame) -> tuple[str, ...]:
    """BASE_COLUMNS; a fixed-token-budget run (``run --tokens``, whose rows load.py gives a
    ``tokens`` column) holds its tokens per point fixed instead of its batch, which shrinks
    as the length grows: its lengths are one curve, compared at equal work."""
    if "tokens" in results.columns and results["tokens"].notna().all():
        return tuple("tokens" if column == "batch" else column for column in BASE_COLUMNS)
    return BASE_COLUMNS


def scenario_columns(results: pd.DataFrame, axis: str) -> list[str]:
    """The columns a scenario along ``axis`` holds fixed (those ``results`` has: frames made
    before kv_heads and chunk existed lack them)."""
    base = base_columns(results)
    if axis == "seq":
        columns = [*base, "dim_k", "dim_v", "chunk"]
    elif axis == "dim":
        columns = [*base, "seq", "chunk"] + ([] if dim_v_tracks_dim_k(results) else ["dim_v"])
    elif axis == "chunk":
        columns = [*base, "seq", "dim_k", "dim_v"]
    else:  # along heads, the key/value heads go with them (as many, or a share of them)
        free = (axis, "kv_heads", "v_heads") if axis == "heads" else (axis,)
        columns = [column for column in base if column not in free] + ["seq", "dim_k", "dim_v", "chunk"]
    columns += ["tokens_per_step", "state_dtype", "state_layout"]  # a serving decode point's: its own scenario
    return [column for column in columns if column in results.columns]


def axis_column(axis: str) -> str:
    return "dim_k" if axis == "dim" else axis


def scenarios(results: pd.DataFrame, axis: str) -> Iterator[tuple[Scenario, pd.DataFrame]]:
    """Each scenario along ``axis`` whose rows span two or more values of that axis."""
    columns = scenario_columns(results, axis)
    x = axis_column(axis)
    if x not in results.columns:
        return
    # An impl without a chunk size (chunk 0: load.NO_CHUNK) has no point along the chunk axis.
    swept = results[results[x] > 0] if axis == "chunk" else results
    for values, rows in swept.groupby(columns, sort=True):
        if rows[x].nunique() >= 2:
            yield Scenario(axis, tuple(zip(columns, values, strict=True))), rows


def impl_series(rows: pd.DataFrame) -> Iterator[tuple[str, str, pd.DataFrame]]:
    """Each impl's rows in a scenario, in the order the run wrote them."""
    order = rows[["variant", "impl"]].drop_duplicates()
    for variant, impl in order.itertuples(index=False):
        yield variant, impl, rows[(rows["variant"] == variant) & (rows["impl"] == impl)]


def ok_points(rows: pd.DataFrame, x: str, metric: str) -> list[tuple[float, float]]:
    """(x, value) of the ok rows with a value for ``metric``; a time of a point measured while
    other processes oversubscribed its threads (``oversubscribed``) is left out: it measured
    the machine's scheduler as much as the impl, so no fit or crossover is made from it."""
    column = memory_column(rows) if metric == "memory" else METRIC_COLUMN[metric]
    keep = (rows["status"] == "ok") & rows[column].notna() & rows[x].notna()
    if metric == "time":
        keep &= ~oversubscribed(rows)
    ok = rows[keep]
    return list(zip(ok[x].astype(float), ok[column].astype(float), strict=True))


def oversubscribed(rows: pd.DataFrame) -> pd.Series:
    """Which rows were measured oversubscribed (False where a run predates the column)."""
    if "oversubscribed" not in rows.columns:
        return pd.Series(False, index=rows.index)
    return rows["oversubscribed"].eq(True)
