"""Each point against the device's ceilings: achieved bandwidth and FLOP rate as fractions of
the copy bandwidth and matmul rate ``linbench run`` measured at its start (meta.json's
"ceilings"; see linbench/machine/ceilings.py). Runs without them get no roofline.

Bytes moved: a lower bound, the inputs read once and the outputs written once, in the
row's dtype, per (batch, head, token):

- ``fwd``: read q (Dk), k (Dk), v (Dv); write out (Dv): 2·Dk + 2·Dv elements.
- ``bwd``: read q, k, v and the output's gradient dO (Dv); write dq (Dk), dk (Dk), dv (Dv):
  4·Dk + 3·Dv elements. The forward output is not read (a linear-attention backward does not
  need it; softmax's flash backward reads O and its log-sum-exp, left out of the bound).
- ``fwdbwd``: both, each pass reading its inputs from memory afresh (nothing is assumed to
  stay in cache between the two): 6·Dk + 5·Dv elements.

Bytes = B·H·S·elements·bytes(dtype), plus a variant's extra inputs (a gated variant's log-gates,
the delta rule's β, in their own dtype): a run records each point's bytes (results.csv's
``bytes``, from linbench/variants/traffic.py, the same model with the extra inputs added), and a
row that has none (a run from before) gets the model above. Intermediates (the S×S scores of the quadratic forms, the
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
from linbench.units import as_number, format_ms, format_size

DTYPE_BYTES = {"fp64": 8, "fp32": 4, "bf16": 2, "fp16": 2}
# Elements moved per (batch, head, token): (times Dk, times Dv).
ELEMENTS = {"fwd": (2, 2), "bwd": (4, 3), "fwdbwd": (6, 5)}
SERIES = ("variant", "impl", "mode", "causal", "dtype", "batch", "heads", "dim_k", "dim_v")
# Marks a share past 100% of its ceiling in the table.
ABOVE = "*"
# The share of its roof a point must reach to be called bound by it; under it, "neither".
NEAR_ROOF = 0.1


def minimal_bytes(mode: str, batch: int, heads: int, seq: int, dim_k: int, dim_v: int, dtype: str) -> int | None:
    """The fewest bytes a ``mode`` pass can move: inputs read once, outputs written once (None
    for modes without a model, such as decode)."""
    if mode not in ELEMENTS or dtype not in DTYPE_BYTES:
        return None
    per_k, per_v = ELEMENTS[mode]
    return batch * heads * seq * (per_k * dim_k + per_v * dim_v) * DTYPE_BYTES[dtype]


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


def roofline_rows(results: pd.DataFrame, ceilings: dict[str, Any]) -> list[dict[str, Any]]:
    """One record per ok row with a time: bytes, bandwidth and FLOP rate, and their fractions."""
    copy_gb_s = float(ceilings["copy_gb_per_s"])
    matmul = ceilings.get("matmul_tflops") or {}
    out = []
    for row in results[results["status"] == "ok"].to_dict("records"):
        time_ms = _positive(row.get("time_ms"))
        shape = (int(row["batch"]), int(row["heads"]), int(row["seq"]), int(row["dim_k"]), int(row["dim_v"]))
        nbytes = _recorded_bytes(row) or minimal_bytes(str(row["mode"]), *shape, str(row["dtype"]))
        if time_ms is None or nbytes is None:
            continue
        gb_s = nbytes / (time_ms * 1e-3) / 1e9
        tflops = _positive(row.get("tflops"))
        ceiling = _positive(matmul.get(str(row["dtype"])))
        record: dict[str, Any] = {column: _plain(row[column]) for column in (*SERIES[:7], "seq", *SERIES[7:])}
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


def _recorded_bytes(row: dict[str, Any]) -> int | None:
    """The bytes the run recorded for the row's point (None: a run from before it recorded them)."""
    recorded = _positive(row.get("bytes"))
    return int(recorded) if recorded is not None else None


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


def roofline_json(runs: list[Run]) -> list[dict[str, Any]]:
    """Every ok row of every run that recorded ceilings, with ``run`` naming its folder."""
    records = []
    for run in runs:
        ceilings = run_ceilings(run.meta)
        if ceilings is not None:
            records += [{"run": run.name, **record} for record in roofline_rows(run.results, ceilings)]
    return records


def _packing(row: Any) -> str:
    """`` packed`` or `` padded`` after a pack run's shape (1 × T or N × L_max), else nothing."""
    packing = row.get("packing")
    return f" {packing}" if isinstance(packing, str) and packing else ""


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
    records = roofline_rows(run.results, ceilings)
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
                f"B{r['batch']} H{r['heads']} S{format_size(r['seq'])} {dims}{_packing(r)}",
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
