"""What ``linbench run`` shows a person: a progress bar, a line per finished point, and a
closing table per shape of the fastest impl against the fastest baseline."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from linbench.results.kinds import row_kind
from linbench.results.rows import is_set
from linbench.results.schema import FAILED_STATUSES
from linbench.runner.threads import BY_HAND
from linbench.units import format_bytes, format_ms, format_size

STATUS_STYLE = {"ok": "green", "skipped": "yellow", "mismatch": "bold red", "oom": "magenta"}


def row_line(row: Mapping[str, Any]) -> str:
    """One line per finished point: status, what ran, and its figures or its reason."""
    status = str(row["status"])
    kind = row_kind(str(row["mode"]))
    length = f"{kind.words.length_label}={format_size(int(row['seq']))}"
    what = f"{row['variant']}:{row['impl']} {row['mode']} {length}"
    if str(row.get("kv_heads") or row["heads"]) != str(row["heads"]):  # grouped-query: which way
        what += f" KV={row['kv_heads']} ({row.get('gqa') or '-'})"
    if str(row.get("v_heads") or row["heads"]) != str(row["heads"]):  # GVA: the value heads
        what += f" HV={row['v_heads']}"
    if row.get("chunk"):
        what += f" C={row['chunk']}"
    style = STATUS_STYLE.get(status, "red")
    figures = FIGURES[kind.name](row) if status == "ok" else escape(str(row.get("error") or ""))
    return f"[{style}]{status:>8}[/] {escape(what)}  {figures}{_host_waits(row)}"


def _host_waits(row: Mapping[str, Any]) -> str:
    """A warning where one call made the host wait for the GPU (host_syncs): its time then
    includes the host's, not the kernels' alone."""
    syncs = row.get("host_syncs")
    if syncs in (None, "") or int(syncs) == 0:
        return ""
    return f"  [yellow]host waits for the GPU {int(syncs)}× a call: the time includes the host's[/]"


def _call_figures(row: Mapping[str, Any]) -> str:
    rate = float(row["tflops"]) * 1000 if row.get("tflops") not in (None, "") else 0.0
    return f"{format_ms(row['time_ms'])}  peak {format_bytes(row['peak_bytes'])}  {rate:.1f} GFLOP/s"


def _step_figures(row: Mapping[str, Any]) -> str:
    if row.get("accepted_per_step") not in (None, ""):  # a serving point: a step of every request
        return (
            f"T{row.get('tokens_per_step') or 1} {row.get('state_dtype') or ''} {row.get('state_layout') or ''} "
            f"{format_ms(row['time_ms'])}/step  "
            f"{format_ms(row.get('time_per_accepted_token_ms'))}/kept token  "
            f"state {format_bytes(row.get('state_bytes_per_request'))}/request"
        )
    return (
        f"{format_ms(row['time_ms'])}/token  state {format_bytes(row.get('state_bytes'))}  "
        f"step peak {format_bytes(row['peak_bytes'])}"
    )


# An ok point's figures, by its kind: a call's time, memory and rate; a step's time, the state
# the decoder holds and the step's peak.
FIGURES = {"run": _call_figures, "decode": _step_figures}


def make_progress(console: Console) -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    )


def _group_key(row: Mapping[str, Any]) -> tuple[Any, ...]:
    """A typed row's table: its mode, dtype, masking (a bool) and shape."""
    sizes = ("mode", "dtype", "causal", "batch", "heads", "dim_k", "dim_v")
    # kv_heads: as many as heads unless grouped-query; chunk: set only in a --chunk sweep.
    # packing: a pack of one sequence has the same shape packed and padded.
    heads = row["heads"]
    extra = (
        row.get("kv_heads") or heads,
        row.get("v_heads") or heads,
        row.get("chunk") or "",
        row.get("packing") or "",
    )
    return (*(row[c] for c in sizes), *extra)


def summary_tables(rows: Iterable[Mapping[str, Any]], baselines: Iterable[tuple[str, str]]) -> list[Table]:
    """Per mode/dtype/masking/shape: for each length, the fastest impl and the fastest baseline
    among the points measured and judged, the speedup, the points that looked faster but were
    left out (and why), and the points that did not end ok."""
    base = {f"{v}:{i}" for v, i in baselines}
    groups: dict[tuple[str, ...], dict[int, list[Mapping[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        groups[_group_key(row)][int(row["seq"])].append(row)
    tables = []
    for (mode, dtype, causal, batch, heads, dim_k, dim_v, kv_heads, v_heads, chunk, _), by_seq in groups.items():
        masking = "causal" if causal else "bidirectional"
        grouped = f" KV={kv_heads}" if kv_heads != heads else ""
        grouped += f" HV={v_heads}" if v_heads != heads else ""
        chunked = f" C={chunk}" if chunk else ""
        title = f"{mode} {dtype} {masking}  B={batch} H={heads}{grouped} Dk={dim_k} Dv={dim_v}{chunked}"
        title += _packing_words(by_seq)
        table = Table(title=title, title_justify="left")
        words = row_kind(mode).words
        length, time = words.length, words.time
        columns = (length, "fastest", time, "fastest baseline", f"{time} ", "speedup", "faster, left out", "not ok")
        for column in columns:
            right = column in (length, time, f"{time} ", "speedup")
            table.add_column(column, justify="right" if right else "left")
        cells = {seq: _summary_cells(by_seq[seq], base) for seq in sorted(by_seq)}
        for seq, row_cells in cells.items():
            table.add_row(format_size(seq), *row_cells)
        if any(row_cells[5] != "-" for row_cells in cells.values()):
            table.caption = LEFT_OUT_CAPTION
            table.caption_justify = "left"
        tables.append(table)
    return tables


def _packing_words(by_seq: Mapping[int, list[Mapping[str, Any]]]) -> str:
    """``  packed`` or ``  padded (N sequences to the longest)`` for a pack run's table, which
    the shape alone does not tell (1 × T or N × L_max); nothing for another run."""
    first = next(iter(by_seq.values()))[0]
    packing = first.get("packing") or ""
    if packing == "padded":
        return f"  padded ({first.get('sequences')} sequences to the longest)"
    return f"  {packing}" if packing else ""


# Why a point that ran ok can still be left out of the summary: its time measured the scheduler.
LEFT_OUT_CAPTION = (
    "faster, left out: points timed faster than the fastest judged point but measured while other "
    "processes oversubscribed their worker's cores, so their times are not judged (rerun on a quiet machine)"
)


def _summary_cells(rows: list[Mapping[str, Any]], base: set[str]) -> tuple[str, ...]:
    measured = [r for r in rows if r["status"] == "ok" and r.get("time_ms") not in (None, "")]
    # A time other processes oversubscribed measured the scheduler: never the fastest, but
    # named (with its time) where it looked faster than what is named, so nobody is misled.
    crowded = [r for r in measured if is_set(r.get("oversubscribed"))]
    judged = [r for r in measured if r not in crowded]
    name = lambda r: f"{r['variant']}:{r['impl']}"  # noqa: E731 - a one-line label
    time = lambda r: float(r["time_ms"])  # noqa: E731
    # The fastest impl is never a baseline unless the run measured nothing else.
    only_baselines = all(name(r) in base for r in rows)
    best = min((r for r in judged if only_baselines or name(r) not in base), key=time, default=None)
    best_base = min((r for r in judged if name(r) in base), key=time, default=None)
    speedup = "-"
    if best is not None and best_base is not None and best is not best_base:
        speedup = f"{time(best_base) / time(best):.2f}x"
    fastest_judged = min((time(r) for r in judged), default=float("inf"))
    left_out = [f"{name(r)} {format_ms(r['time_ms'])} oversubscribed" for r in crowded if time(r) < fastest_judged]
    failed = [f"{name(r)} {r['status']}" for r in rows if r["status"] != "ok"]
    failed += [f"{name(r)} oversubscribed" for r in crowded if time(r) >= fastest_judged]
    return (
        escape(name(best)) if best else "-",
        format_ms(best["time_ms"]) if best else "-",
        escape(name(best_base)) if best_base else "-",
        format_ms(best_base["time_ms"]) if best_base else "-",
        speedup,
        escape(", ".join(left_out) or "-"),
        escape(", ".join(failed) or "-"),
    )


def threads_line(meta: Mapping[str, Any]) -> str | None:
    """``  threads: 1 torch thread per worker (0.8 of 2 cores idle) ...`` from meta.json's
    ``timing.threads_choice``; None where no choice was made (a GPU run keeps torch's default)."""
    choice = (meta.get("timing") or {}).get("threads_choice")
    if not isinstance(choice, Mapping) or "threads" not in choice:
        return None
    count, cores = int(choice["threads"]), choice.get("cores")
    if choice.get("by") == BY_HAND:
        why = BY_HAND
        if isinstance(cores, int) and count > cores:  # the OS switches them: the times hold the waits
            why += f"; more than the {cores} usable cores, so threads wait for a core and the times hold those waits"
    else:
        idle = choice.get("idle_cores")
        why = f"{'?' if idle is None else f'{idle:g}'} of {cores} cores idle at the start"
    return (
        f"  threads: {count} torch thread{'s' if count != 1 else ''} per worker ({why}); its times compare "
        "only with runs on as many threads (each row records its threads)"
    )


def status_counts(rows: Iterable[Mapping[str, Any]]) -> str:
    counts: dict[str, int] = defaultdict(int)
    for row in rows:
        counts[str(row["status"])] += 1
    return ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "no points"


def failed_rows(rows: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The rows of points that failed: a wrong or broken impl."""
    return [row for row in rows if row["status"] in FAILED_STATUSES]


def failure_note(failed: list[Mapping[str, Any]], allowed: bool) -> str:
    """What the summary line adds when points failed: how many, and the exit status it gives."""
    if not failed:
        return ""
    names = sorted({f"{row['variant']}:{row['impl']}" for row in failed})
    what = f"; {len(failed)} point(s) failed (mismatch, error or crashed) in {', '.join(names)}"
    return what + (": exit 0 (--allow-failures)" if allowed else ": exit 1 (--allow-failures exits 0)")
