"""A run folder's rows as Markdown tables, one per impl: what a GPU batch needs to read back at once.

Usage: python scripts/gpu/rows.py RUN_DIR...

For each row of RUN_DIR/results.csv: the point (impl, mode, dtype, batch, heads, value heads,
head dim, length or context), its status, the event time (per call, or per token for decode),
the CUDA-graph replay (device_ms), the kernels' own time (kernel_ms) and count, the times a call
made the host wait (host_syncs), the peak
memory above the inputs, the lowest SM clock, and the backend or the error. The standard
library only (no torch, no linbench), so it costs a fraction of a second in a batch whose
minutes are counted; `linbench report` reads the same folders fully, afterwards, anywhere.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

COLUMNS = (
    ("impl", lambda r: f"{r['variant']}:{r['impl']}"),
    ("mode", lambda r: r["mode"]),
    ("dtype", lambda r: r["dtype"]),
    ("B", lambda r: r["batch"]),
    ("H", lambda r: r["heads"]),
    ("HV", lambda r: r.get("v_heads") or r["heads"]),
    ("D", lambda r: r["dim_k"]),
    ("S or context", lambda r: r.get("context") or r["seq"]),
    ("status", lambda r: r["status"]),
    ("time ms", lambda r: _ms(r.get("time_per_token_ms") or r["time_ms"])),
    ("replay ms", lambda r: _ms(r.get("device_ms"))),
    ("kernel ms", lambda r: _ms(r.get("kernel_ms"))),
    ("kernels", lambda r: r.get("kernels_per_call") or ""),
    ("host syncs", lambda r: r.get("host_syncs") or ""),
    ("peak MiB", lambda r: _mib(r.get("peak_bytes"))),
    ("SM MHz", lambda r: r.get("sm_clock_mhz") or ""),
    ("backend or error", lambda r: " ".join((r.get("error") or r.get("backend") or "").split())[:160]),
)


def _ms(value: str | None) -> str:
    return f"{float(value):.4g}" if value not in (None, "") else ""


def _mib(value: str | None) -> str:
    return f"{float(value) / 2**20:.1f}" if value not in (None, "") else ""


def tables(run: Path) -> list[str]:
    """The Markdown lines for one run folder, a table per impl (a line saying why, when it has
    no results)."""
    path = run / "results.csv"
    if not path.exists():
        return [f"{run.name}: no results.csv (the run wrote no row)"]
    with path.open() as handle:
        rows = list(csv.DictReader(handle))
    lines = [f"{run.name}: {len(rows)} rows", ""]
    for impl in dict.fromkeys(f"{row['variant']}:{row['impl']}" for row in rows):
        lines += ["| " + " | ".join(name for name, _ in COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
        for row in rows:
            if f"{row['variant']}:{row['impl']}" == impl:
                lines.append("| " + " | ".join(str(cell(row)).replace("|", "/") for _, cell in COLUMNS) + " |")
        lines.append("")
    return lines


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print("usage: python scripts/gpu/rows.py RUN_DIR...", file=sys.stderr)
        sys.exit(2)
    for folder in sys.argv[1:]:
        print("\n".join(tables(Path(folder))))
