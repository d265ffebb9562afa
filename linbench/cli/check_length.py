"""``linbench check --seq 1k..16k``: each impl's output error against the fp64 answer at every
length, in each dtype (linbench/check/accuracy.py), as a table, a CSV (``--out``) and a figure
(``--plot``). It measures and judges nothing: the pass/fail gate is ``linbench check`` without
``--seq``, which stays fast.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.table import Table

from linbench.cli.outputs import write_output
from linbench.units import format_size

if TYPE_CHECKING:
    import torch

    from linbench.check.accuracy import ErrorAtLength
    from linbench.variants.variant import Variant

COLUMNS = ("variant", "impl", "dtype", "causal", "seq", "rel_err", "normwise_err", "reference", "error")


def measure_errors(
    selection: list[tuple[Variant, str]],
    dtypes: list[str],
    seqs: list[int],
    *,
    heads: int,
    dim: int,
    device: torch.device,
) -> list[ErrorAtLength]:
    """Every impl's error at every length and dtype; the impls of a variant share its answer."""
    from linbench.check.accuracy import error_at_length
    from linbench.cli.common import torch_dtype
    from linbench.shape import Shape

    results: list[ErrorAtLength] = []
    variants = list(dict.fromkeys(variant for variant, _ in selection))
    for variant in variants:
        causal = variant.masking_reason(True) is None
        impls = [impl for v, impl in selection if v is variant]
        for dtype_name in dtypes:
            for seq in seqs:
                expected = None
                for impl in impls:
                    shape = Shape(1, heads, seq, dim, dim)
                    kw: dict[str, Any] = {"dtype": torch_dtype(dtype_name), "dtype_name": dtype_name}
                    result, expected = error_at_length(
                        variant, impl, shape, causal=causal, device=device, expected=expected, **kw
                    )
                    results.append(result)
    return results


def error_table(results: list[ErrorAtLength]) -> Table:
    """Rows: impl and dtype; columns: the lengths; cells: rel_err (or why none)."""
    seqs = sorted({r.seq for r in results})
    table = Table(title="output error against the fp64 answer: max |a − e| / RMS(e)")
    for header in ("variant:impl", "dtype", *(format_size(s) for s in seqs)):
        table.add_column(header, justify="left" if not header[0].isdigit() else "right")
    keys = dict.fromkeys((r.variant, r.impl, r.dtype) for r in results)
    for variant, impl, dtype in keys:
        cells = {r.seq: r for r in results if (r.variant, r.impl, r.dtype) == (variant, impl, dtype)}
        row = [_cell(cells.get(seq)) for seq in seqs]
        table.add_row(f"{variant}:{impl}", dtype, *row)
    return table


def _cell(result: ErrorAtLength | None) -> str:
    if result is None:
        return ""
    return "error" if result.error else f"{result.rel_err:.2e}"


def write_errors(results: list[ErrorAtLength], path: Path) -> None:
    """The results as a CSV of COLUMNS (CliUsageError where it cannot be written there)."""

    def write(target: Path) -> None:
        with target.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=COLUMNS)
            writer.writeheader()
            for result in results:
                writer.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in result.row().items()})

    write_output(path, write, "the error table")


def plot_errors(results: list[ErrorAtLength], path: Path) -> None:
    """The error-against-length figure (linbench/report/plot_error_length.py), in the format
    its suffix names (CliUsageError where it cannot be written there)."""
    from linbench.report.plot_error_length import draw_error_length

    figure = draw_error_length([r.row() for r in results])
    write_output(path, lambda target: figure.savefig(target, dpi=130, bbox_inches="tight"), "the error figure")
