"""``linbench check``: every selected impl against its variant's fp64 reference.

Each cell of the matrix is one impl in one dtype and masking, judged over a few shapes
(linbench/check/matrix.py); this runs the cells with a progress bar and prints them.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.progress import Progress

from linbench.cli.check_display import (
    failure_lines,
    legend_line,
    library_shape_lines,
    matrix_table,
    outputs_only_lines,
    setting_lines,
    skipped_lines,
    summary_line,
    unavailable_lines,
    value_heads_lines,
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
)
from linbench.cli.errors import usage_errors
from linbench.variants.feature_forms import autotune_pin
from linbench.variants.selection import select_impls

if TYPE_CHECKING:
    import torch

    from linbench.check.matrix import Row
    from linbench.variants.variant import Variant


def run_matrix(
    selection: list[tuple[Variant, str]],
    columns: list[tuple[str, bool]],
    device: torch.device,
    quiet: bool,
    shapes: tuple[tuple[int, ...], ...] | None = None,
) -> list[Row]:
    """Every cell (at ``shapes`` where given, else the matrix's own), with a transient progress
    bar on stderr unless ``quiet``."""
    from linbench.check.matrix import Row, run_cell

    rows = []
    progress = Progress(console=Console(stderr=True), transient=True, disable=quiet)
    with progress, one_cpu_thread(device):
        task = progress.add_task("checking", total=len(selection) * len(columns))
        for variant, impl in selection:
            cells = []
            for dtype_name, causal in columns:
                progress.update(task, description=f"{variant.name}:{impl} {dtype_name}")
                cells.append(run_cell(variant, impl, dtype_name, causal, device, shapes))
                progress.advance(task)
            rows.append(Row(variant.name, impl, impl == variant.reference, cells))
    return rows


LENGTH_HELP = {
    "seq": "Measure each impl's output error against the fp64 answer at these lengths (1k..16k), "
    "in each --dtype, instead of the pass/fail matrix.",
    "heads": "With --seq: heads of each call. Default: 2.",
    "dim": "With --seq: head dim of q, k and v. Default: 64.",
    "out": "With --seq: write the errors to this CSV.",
    "plot": "With --seq: draw the error-against-length figure to this PNG.",
}
SHAPE_HELP = (
    "Check at these shapes (B1-H2-S300-Dk64-Dv64: batch, heads, length, head dims of q/k and of v; "
    "repeatable or comma-separated) in place of the matrix's own."
)
_SHAPE = re.compile(r"B(\d+)-H(\d+)-S(\d+)-Dk(\d+)-Dv(\d+)")


def _matrix_shapes(items: list[str], lengths: list[int]) -> tuple[tuple[int, ...], ...] | None:
    """--shape's shapes as (batch, heads, seq, dim_k, dim_v), None without it; ValueError for a
    malformed one, a zero size, or --shape beside --seq."""
    if not items:
        return None
    if lengths:
        raise ValueError("--shape sets the matrix's shapes and --seq measures error against length: give one")
    shapes = []
    for item in items:
        match = _SHAPE.fullmatch(item)
        if match is None or not all(int(size) > 0 for size in match.groups()):
            raise ValueError(f"--shape {item!r}: write it as B1-H2-S300-Dk64-Dv64 (every size at least 1)")
        shapes.append(tuple(int(size) for size in match.groups()))
    return tuple(dict.fromkeys(shapes))


def _check_shapes_fit(shapes: tuple[tuple[int, ...], ...] | None, device: torch.device) -> None:
    """ValueError for a --shape whose fp64 q, k and v alone (the check draws them so) pass the
    device's whole memory: no cell of it could run, and each would end in an allocation error."""
    from linbench.machine.facts import device_memory_bytes
    from linbench.units import format_bytes

    memory = device_memory_bytes(device)
    for batch, heads, seq, dim_k, dim_v in shapes or ():
        needed = batch * heads * seq * (2 * dim_k + dim_v) * 8
        if needed > memory:
            raise ValueError(
                f"--shape B{batch}-H{heads}-S{seq}-Dk{dim_k}-Dv{dim_v}: its fp64 q, k and v alone take "
                f"{format_bytes(needed)}, more than the {format_bytes(memory)} of {device}"
            )


def _lengths(seq: str | None, out: Path | None, plot: Path | None, sizes: tuple[int | None, int | None]) -> list[int]:
    """--seq's lengths (none without it); ValueError for a bad range, or --out, --plot, --heads
    or --dim without it (the matrix's shapes are its own, or --shape's: they were dropped)."""
    from linbench.sweep.ranges import parse_range

    if seq is None:
        if out is not None or plot is not None:
            raise ValueError("--out and --plot write the error against length: give --seq (1k..16k)")
        if any(size is not None for size in sizes):
            raise ValueError("--heads and --dim size --seq's calls; the matrix's shapes are given with --shape")
        return []
    return sorted(set(parse_range(seq)))


def _error_against_length(
    selection: list[tuple[Variant, str]],
    dtypes: list[str],
    lengths: list[int],
    heads: int,
    dim: int,
    device: torch.device,
    out: Path | None,
    plot: Path | None,
) -> None:
    """``check --seq``: the errors as a table, and to --out and --plot (cli/check_length.py)."""
    from linbench.cli.check_length import error_table, measure_errors, plot_errors, write_errors
    from linbench.cli.outputs import check_output

    with usage_errors():  # before any measuring: an --out or --plot that can be no output
        for path, what in ((out, "the error table"), (plot, "the error figure")):
            if path is not None:
                check_output(path, what)
    results = measure_errors(selection, dtypes, lengths, heads=heads, dim=dim, device=device)
    console = stdout_console()
    console.print(error_table(results))
    for result in results:
        if result.error:
            console.print(f"{result.variant}:{result.impl} {result.dtype} S={result.seq}: {result.error}", markup=False)
    with usage_errors():
        if out is not None:
            write_errors(results, out)
            console.print(f"errors -> {out}", markup=False)
        if plot is not None:
            plot_errors(results, plot)
            console.print(f"figure -> {plot}", markup=False)


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
    seq: Annotated[str | None, typer.Option("--seq", help=LENGTH_HELP["seq"])] = None,
    heads: Annotated[int | None, typer.Option("--heads", min=1, help=LENGTH_HELP["heads"])] = None,
    dim: Annotated[int | None, typer.Option("--dim", min=1, help=LENGTH_HELP["dim"])] = None,
    out: Annotated[Path | None, typer.Option("--out", help=LENGTH_HELP["out"])] = None,
    plot: Annotated[Path | None, typer.Option("--plot", help=LENGTH_HELP["plot"])] = None,
    shape: Annotated[list[str] | None, typer.Option("--shape", help=SHAPE_HELP)] = None,
) -> None:
    """Check every impl against its variant's fp64 reference; exit 1 when any cell fails.
    With --seq: measure each impl's error at those lengths instead (no pass or fail)."""
    with usage_errors():
        load_plugins(plugin)
        resolved = resolve_device(device)
        dtypes = parse_dtypes(dtype)
        columns = [(name, causal) for name in dtypes for causal in (True, False)]
        selection = [(pick.variant, pick.impl) for pick in select_impls(split_list(variant))]
        from linbench.variants.extra_inputs import probe_draws

        # A plugin's draw_fn that draws what its own declaration refuses is the cause, named as
        # run names it; left to the cells, the reference would take the blame for it.
        declared = {v.name: v.extra_inputs for v, _ in selection}  # a Variant is not hashable
        for name, extra_inputs in declared.items():
            probe_draws(name, extra_inputs)
        lengths = _lengths(seq, out, plot, (heads, dim))
        shapes = _matrix_shapes(split_list(shape), lengths)
        _check_shapes_fit(shapes, resolved)
    if autotune_pin.requested() and autotune_pin.pin_first_config():
        stdout_console().print(autotune_pin.CHECK_NOTE, markup=False, soft_wrap=True)
    if lengths:
        _error_against_length(selection, dtypes, lengths, heads or 2, dim or 64, resolved, out, plot)
        return
    from linbench.check.correctness import Shape
    from linbench.check.matrix import LIBRARY_SHAPE, SHAPES, VALUE_HEADS_SHAPE

    rows = run_matrix(selection, columns, resolved, quiet, shapes)
    console = stdout_console()
    console.print(matrix_table(rows, columns, resolved))
    console.print(legend_line([Shape(*dims) for dims in shapes or SHAPES]), markup=False, soft_wrap=True)
    # Shapes given on the command line replace the matrix's own, the library and value-heads shapes too.
    extra_shapes = [] if shapes else library_shape_lines(rows, Shape(*LIBRARY_SHAPE))
    extra_shapes += [] if shapes else value_heads_lines(rows, Shape(*VALUE_HEADS_SHAPE))
    for line in extra_shapes:
        console.print(line, markup=False, soft_wrap=True)
    sections = (
        ("also checked at:", setting_lines(rows)),
        ("outputs only (no gradients):", outputs_only_lines(rows)),
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
