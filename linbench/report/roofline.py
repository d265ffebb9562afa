"""Each point against the device's ceilings: achieved bandwidth and FLOP rate as fractions of
the copy bandwidth and matmul rate ``linbench run`` measured at its start (meta.json's
"ceilings"; see linbench/machine/ceilings.py). Runs without them get no roofline.

Bytes moved: a lower bound, the inputs read once and the outputs written once, in the
row's dtype, each tensor per (batch, token, head of its own): q at the heads H, k at the
key/value heads H_kv (fewer under grouped-query attention), v at H_kv or, under GVA, at the
value heads H_v, the output (and dO) at H_v (H without GVA):

- ``fwd``: read q (Dk), k (Dk), v (Dv); write out (Dv).
- ``bwd``: read q, k, v and the output's gradient dO (Dv); write dq (Dk), dk (Dk), dv (Dv). The
  forward output is not read (a linear-attention backward does not need it; softmax's flash
  backward reads O and its log-sum-exp, left out of the bound).
- ``fwdbwd``: both, each pass reading its inputs from memory afresh (nothing is assumed to
  stay in cache between the two).

With every head count H that is B·H·S·(2·Dk + 2·Dv), (4·Dk + 3·Dv) and (6·Dk + 5·Dv) elements
(linbench/shape.py's ``Shape.qkvo_elements``), times bytes(dtype), plus a variant's extra inputs
(a gated variant's log-gates, the delta rule's β, in their own dtype): a run records each point's bytes (results.csv's
``bytes``, from linbench/variants/traffic.py, the same model with the extra inputs added), and a
row that has none (a run from before) gets the model above. Runs before schema
GROUPED_BYTES_SCHEMA recorded a grouped row's q, k, v and output all at the value heads (the
output's): their bytes are corrected by that difference, which the extra inputs (counted at the
value heads then as now) do not enter. Intermediates (the S×S scores of the quadratic forms, the
per-chunk states, fp32 copies of 16-bit inputs) are not counted, so the achieved bandwidth
is what a kernel moving nothing else would need; a fraction near 1 means memory-bound at the
copy rate. FLOP rate is results.csv's ``tflops`` (the variant's formula) over the matmul
ceiling of the row's dtype. ``roof`` says which ceiling would limit the point on the roofline:
memory when its arithmetic intensity (FLOPs / bytes) is below the machine's balance (matmul
rate / copy bandwidth), else compute; ``roofline_fraction`` is the achieved FLOP rate over
min(matmul rate, intensity × copy bandwidth). ``bound`` is that roof only where the point
reaches at least NEAR_ROOF of it; below, it is "neither": a point at 0.1% of both ceilings is
limited by neither of them but by something the model does not count (launch and framework
overhead, intermediates, a poor schedule), and calling it compute-bound would mislead.

Pure pandas: the reports never import torch.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from linbench.report.load import Run
from linbench.report.render import ReportTable
from linbench.results.schema import GROUPED_BYTES_SCHEMA
from linbench.shape import Shape
from linbench.units import as_number, format_ms, format_size

DTYPE_BYTES = {"fp64": 8, "fp32": 4, "bf16": 2, "fp16": 2}
SERIES = ("variant", "impl", "mode", "causal", "dtype", "batch", "heads", "dim_k", "dim_v")
# Marks a share past 100% of its ceiling in the table.
ABOVE = "*"
# The share of its roof a point must reach to be called bound by it; under it, "neither".
NEAR_ROOF = 0.1


def minimal_bytes(mode: str, shape: Shape, dtype: str) -> int | None:
    """The fewest bytes a ``mode`` pass can move: inputs read once, outputs written once, each at
    its own heads (None for modes without a model, such as decode)."""
    elements = shape.qkvo_elements(mode)
    if elements is None or dtype not in DTYPE_BYTES:
        return None
    return elements * DTYPE_BYTES[dtype]


def row_shape(row: dict[str, Any]) -> Shape:
    """A row's shape, its key/value and value heads the row's heads where it has none (older runs)."""
    heads = int(row["heads"])

    def count(name: str) -> int:
        value = _positive(row.get(name))
        return int(value) if value is not None else heads

    return Shape(
        int(row["batch"]), heads, int(row["seq"]), int(row["dim_k"]), int(row["dim_v"]),
        kv_heads=count("kv_heads"), v_heads=count("v_heads"),
    )  # fmt: skip


def run_ceilings(meta: dict[str, Any]) -> dict[str, Any] | None:
    """meta.json's ceilings when they hold a usable copy bandwidth; None otherwise."""
    ceilings = meta.get("ceilings")
    if not isinstance(ceilings, dict) or "error" in ceilings:
        return None
    copy = ceilings.get("copy_gb_per_s")
    if not isinstance(copy, (int, float)) or not copy > 0:
        return None
    return ceilings


def _positive(value: Any) -> float | None:
    number = as_number(value)
    return number if number is not None and math.isfinite(number) and number > 0 else None


def roofline_rows(
    results: pd.DataFrame, ceilings: dict[str, Any], schema_version: Any = GROUPED_BYTES_SCHEMA
) -> list[dict[str, Any]]:
    """One record per ok row with a time: bytes, bandwidth and FLOP rate, and their fractions
    (``schema_version``: the run's, meta.json's; older than GROUPED_BYTES_SCHEMA, a grouped row's
    recorded bytes are corrected)."""
    copy_gb_s = float(ceilings["copy_gb_per_s"])
    matmul = ceilings.get("matmul_tflops") or {}
    before = not isinstance(schema_version, int) or schema_version < GROUPED_BYTES_SCHEMA
    out = []
    for row in results[results["status"] == "ok"].to_dict("records"):
        time_ms = _positive(row.get("time_ms"))
        shape, mode, dtype = row_shape(row), str(row["mode"]), str(row["dtype"])
        nbytes = _recorded_bytes(row, shape, before) or minimal_bytes(mode, shape, dtype)
        if time_ms is None or nbytes is None:
            continue
        gb_s = nbytes / (time_ms * 1e-3) / 1e9
        tflops = _positive(row.get("tflops"))
        ceiling = _positive(matmul.get(str(row["dtype"])))
        record: dict[str, Any] = {column: _plain(row[column]) for column in (*SERIES[:7], "seq", *SERIES[7:])}
        record |= {"kv_heads": shape.kv_heads, "v_heads": shape.v_heads}
        if row.get("packing"):  # a pack run's: its shape is 1 × T packed, N × L_max padded
            record["packing"] = str(row["packing"])
        record |= {
            "time_ms": time_ms,
            "bytes": nbytes,
            "gb_per_s": gb_s,
            "copy_gb_per_s": copy_gb_s,
            "bandwidth_fraction": gb_s / copy_gb_s,
            "tflops": tflops,
            "matmul_tflops": ceiling,
            "flops_fraction": tflops / ceiling if tflops and ceiling else None,
            "intensity": None,
            "roof": None,
            "bound": None,
            "roofline_fraction": None,
            "above_ceiling": gb_s > copy_gb_s or bool(tflops and ceiling and tflops > ceiling),
        }
        if tflops and ceiling:
            intensity = tflops * 1e12 * (time_ms * 1e-3) / nbytes  # FLOPs per byte
            attainable = min(ceiling, intensity * copy_gb_s / 1e3)  # TFLOP/s
            roof = "memory" if intensity * copy_gb_s / 1e3 < ceiling else "compute"
            fraction = tflops / attainable
            record |= {
                "intensity": intensity,
                "roof": roof,
                "bound": roof if fraction >= NEAR_ROOF else "neither",
                "roofline_fraction": fraction,
            }
        out.append(record)
    return out


def _recorded_bytes(row: dict[str, Any], shape: Shape, before: bool) -> int | None:
    """The bytes the run recorded for the row's point (None: a run from before it recorded them);
    ``before`` GROUPED_BYTES_SCHEMA, a grouped row's q, k, v and output were counted at the value
    heads: that count is replaced by each tensor's own."""
    recorded = _positive(row.get("bytes"))
    if recorded is None:
        return None
    if before and (shape.grouped or shape.value_grouped):
        dtype, mode = str(row["dtype"]), str(row["mode"])
        ungrouped = Shape(shape.batch, shape.v_heads, shape.seq, shape.dim_k, shape.dim_v)
        then, now = minimal_bytes(mode, ungrouped, dtype), minimal_bytes(mode, shape, dtype)
        if then is not None and now is not None:
            return int(recorded) - then + now
    return int(recorded)


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


def roofline_json(runs: list[Run]) -> list[dict[str, Any]]:
    """Every ok row of every run that recorded ceilings, with ``run`` naming its folder."""
    records = []
    for run in runs:
        ceilings = run_ceilings(run.meta)
        if ceilings is not None:
            rows = roofline_rows(run.results, ceilings, run.meta.get("schema_version"))
            records += [{"run": run.name, **record} for record in rows]
    return records


def _packing(row: Any) -> str:
    """`` packed`` or `` padded`` after a pack run's shape (1 × T or N × L_max), else nothing."""
    packing = row.get("packing")
    return f" {packing}" if isinstance(packing, str) and packing else ""


def _grouping(record: dict[str, Any]) -> str:
    """`` KV2`` (grouped-query) or `` HV32`` (more value heads) after the heads; else nothing."""
    if record["kv_heads"] != record["heads"]:
        return f" KV{record['kv_heads']}"
    return f" HV{record['v_heads']}" if record["v_heads"] != record["heads"] else ""


def _sig(value: float) -> str:
    """2,895, 27.6, 0.883: three significant figures, thousands grouped."""
    return f"{value:,.0f}" if value >= 1000 else f"{value:.3g}"


def _rate(tflops: float | None, gpu: bool) -> str:
    if tflops is None:
        return "-"
    return f"{_sig(tflops)} TFLOP/s" if gpu else f"{_sig(tflops * 1e3)} GFLOP/s"


def _share(fraction: float | None) -> str:
    """95%, 4.2%, 0.031%: small fractions keep two significant figures; past 100% marked."""
    if fraction is None:
        return "-"
    percent = 100 * fraction
    text = f"{percent:,.0f}%" if percent >= 10 else f"{percent:.1f}%" if percent >= 1 else f"{percent:.2g}%"
    return f"{text} {ABOVE}" if fraction > 1 else text


def roofline_tables(run: Run) -> list[ReportTable]:
    """A table of each series at its longest ok length against the ceilings; none (an empty
    list) for a run without ceilings or without ok rows."""
    ceilings = run_ceilings(run.meta)
    if ceilings is None:
        return []
    records = roofline_rows(run.results, ceilings, run.meta.get("schema_version"))
    if not records:
        return []
    longest: dict[tuple[Any, ...], dict[str, Any]] = {}
    for record in records:
        key = tuple(record[c] for c in SERIES)
        if key not in longest or record["seq"] > longest[key]["seq"]:
            longest[key] = record
    gpu = str(ceilings.get("device", "")).startswith("cuda")
    rates = ", ".join(f"matmul {d} {_rate(v, gpu)}" for d, v in (ceilings.get("matmul_tflops") or {}).items())
    title = (
        f"Against the ceilings measured at the run's start (copy {_sig(ceilings['copy_gb_per_s'])} GB/s, {rates}); "
        "each series at its longest ok length; bytes = inputs read once + outputs written once"
    )
    rows = []
    for r in longest.values():
        dims = f"D{r['dim_k']}" if r["dim_k"] == r["dim_v"] else f"Dk{r['dim_k']} Dv{r['dim_v']}"
        mode = r["mode"] + ("" if bool(r["causal"]) else " (bidir)")
        rows.append(
            [
                f"{r['variant']}:{r['impl']}",
                mode,
                r["dtype"],
                f"B{r['batch']} H{r['heads']}{_grouping(r)} S{format_size(r['seq'])} {dims}{_packing(r)}",
                format_ms(r["time_ms"]),
                f"{_sig(r['gb_per_s'])} GB/s",
                _share(r["bandwidth_fraction"]),
                _rate(r["tflops"], gpu),
                _share(r["flops_fraction"]),
                r["bound"] or "-",
            ]
        )
    if any(r["bound"] == "neither" for r in longest.values()):
        title += f"; bound neither: under {NEAR_ROOF:.0%} of the ceiling that would limit it, so something else does"
    if any(r["above_ceiling"] for r in longest.values()):
        # A point cannot outrun the machine: a rate past its ceiling says the ceiling was
        # measured low (other work on the machine at the run's start), not that the point is fast.
        title += (
            f"; {ABOVE} past its ceiling: the ceiling was measured low (the machine was busy "
            "at the run's start), so these fractions overstate; `linbench doctor` measures it again"
        )
    columns = ["impl", "mode", "dtype", "shape", "time", "bandwidth", "of copy", "FLOP rate", "of matmul", "bound"]
    return [ReportTable(title, columns, rows)]
