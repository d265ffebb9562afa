"""``linbench check``: every selected impl against its variant's fp64 reference.

Each cell of the matrix is one impl in one dtype and masking, judged over a few shapes
chosen to catch the usual bugs: a single token, Dk ≠ Dv, and a length that is not a
multiple of any chunk size.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.progress import Progress

from linbench.cli.check_display import (
    Cell,
    Row,
    failure_lines,
    legend_line,
    matrix_table,
    skipped_lines,
    summary_line,
    unavailable_lines,
)
from linbench.cli.common import (
    DEVICE_HELP,
    PLUGIN_HELP,
    load_plugins,
    one_cpu_thread,
    parse_dtypes,
    resolve_device,
    split_list,
    stdout_console,
    torch_dtype,
)
from linbench.cli.errors import usage_errors
from linbench.variants.selection import select_impls

if TYPE_CHECKING:
    import torch

    from linbench.correctness import CaseResult
    from linbench.variants.registry import Variant

# (batch, heads, seq, dim_k, dim_v); Shape itself lives with torch, so it is built late.
SHAPES = ((1, 2, 1, 8, 8), (2, 3, 100, 16, 24), (1, 2, 257, 32, 32))


def run_cell(variant: Variant, impl: str, dtype_name: str, causal: bool, device: torch.device) -> Cell:
    """Every shape for one impl, dtype and masking; unavailable impls, and maskings the
    variant does not compute, are not run."""
    from linbench.correctness import Shape, check_impl

    reason = variant.impls[impl].unavailable_reason(device)
    if reason is not None:
        return Cell(unavailable=reason)
    if variant.masking_reason(causal) is not None:
        masking = "causal" if causal else "bidirectional"
        return Cell(skipped=f"{variant.name}: {variant.masking[0]} only; its {masking} cells are not checked")
    cases: list[CaseResult] = []
    for dims in SHAPES:
        case = check_impl(variant, impl, Shape(*dims), causal=causal, dtype=torch_dtype(dtype_name), device=device)
        if case.unavailable:
            return Cell(unavailable=case.unavailable)
        cases.append(case)
    return Cell(cases=cases)


def run_matrix(
    selection: list[tuple[Variant, str]], columns: list[tuple[str, bool]], device: torch.device, quiet: bool
) -> list[Row]:
    """Every cell, with a transient progress bar on stderr unless ``quiet``."""
    rows = []
    progress = Progress(console=Console(stderr=True), transient=True, disable=quiet)
    with progress, one_cpu_thread(device):
        task = progress.add_task("checking", total=len(selection) * len(columns))
        for variant, impl in selection:
            cells = []
            for dtype_name, causal in columns:
                progress.update(task, description=f"{variant.name}:{impl} {dtype_name}")
                cells.append(run_cell(variant, impl, dtype_name, causal, device))
                progress.advance(task)
            rows.append(Row(variant.name, impl, impl == variant.reference, cells))
    return rows


def check_command(
    variant: Annotated[
        list[str] | None,
        typer.Option(help="Variant to check (V, or V:IMPL for one impl); repeatable or comma-separated. Default: all."),
    ] = None,
    device: Annotated[str, typer.Option(help=f"Device to check on: {DEVICE_HELP}.")] = "auto",
    dtype: Annotated[
        list[str] | None, typer.Option(help="fp64, fp32, bf16 or fp16; repeatable or comma-separated. Default: fp32.")
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
    plugin: Annotated[list[Path] | None, typer.Option("--plugin", help=PLUGIN_HELP)] = None,
) -> None:
    """Check every impl against its variant's fp64 reference; exit 1 when any cell fails."""
    with usage_errors():
        load_plugins(plugin)
        resolved = resolve_device(device)
        columns = [(name, causal) for name in parse_dtypes(dtype) for causal in (True, False)]
        selection = [(pick.variant, pick.impl) for pick in select_impls(split_list(variant))]
    from linbench.correctness import Shape

    rows = run_matrix(selection, columns, resolved, quiet)
    console = stdout_console()
    console.print(matrix_table(rows, columns, resolved))
    console.print(legend_line([Shape(*dims) for dims in SHAPES]), markup=False, soft_wrap=True)
    sections = (
        ("unavailable here:", unavailable_lines(rows)),
        ("not checked:", skipped_lines(rows)),
        ("failures:", failure_lines(rows)),
    )
    for title, lines in sections:
        if lines:
            console.print(title, *lines, sep="\n", markup=False, soft_wrap=True)
    console.print(summary_line(rows), markup=False)
    if any(cell.failures for row in rows for cell in row.cells):
        raise typer.Exit(1)
