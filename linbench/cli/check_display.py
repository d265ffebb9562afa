"""How ``linbench check`` shows its matrix: cells, the table, failures, and the summary."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from rich.table import Table

if TYPE_CHECKING:
    import torch

    from linbench.check.correctness import Shape
    from linbench.check.matrix import Cell, Row


def format_ratio(ratio: float) -> str:
    """Two decimals for the usual range; scientific for huge ratios so columns stay narrow."""
    return f"{ratio:.2f}" if ratio < 100 or not math.isfinite(ratio) else f"{ratio:.1e}"


def render_cell(cell: Cell) -> str:
    """ "ok 0.03" / "FAIL 3.20" / "FAIL shape" / "FAIL NaN" / "error" / "unavailable", as rich markup."""
    if cell.unavailable:
        return "[dim]unavailable[/]"
    if cell.skipped:
        return "[dim]skipped[/]"
    if any(case.error for case in cell.cases):
        return "[red]error[/]"
    # "(2/3)": judged on two of the three shapes; the third is named under "unavailable here".
    part = f" ({len(cell.cases) - len(cell.not_run)}/{len(cell.cases)})" if cell.not_run else ""
    if cell.failures:
        return f"[bold red]FAIL {cell.problem or format_ratio(cell.worst_ratio)}{part}[/]"
    return f"[green]ok {format_ratio(cell.worst_ratio)}{part}[/]"


def matrix_table(rows: list[Row], columns: list[tuple[str, bool]], device: torch.device) -> Table:
    """The correctness matrix: one row per impl, one column per dtype × masking."""
    table = Table(title=f"correctness against the fp64 reference on {device}", title_justify="left")
    table.add_column("variant:impl")
    for dtype_name, causal in columns:
        table.add_column(f"{'causal' if causal else 'bidir'} {dtype_name}", justify="right")
    for row in rows:
        table.add_row(row.label, *(render_cell(cell) for cell in row.cells))
    return table


def legend_line(shapes: list[Shape]) -> str:
    """What a cell's number means; printed under the table, where it cannot squeeze it."""
    checked = ", ".join(shape.label for shape in shapes)
    return f"cell = worst |error| / tolerance over output and gradients (≤ 1 passes), at {checked}"


def library_shape_lines(rows: list[Row], library_shape: Shape) -> list[str]:
    """The impls that took none of the legend's head sizes and were checked at the kernel
    libraries' instead (matrix.LIBRARY_SHAPE), one line."""
    label = library_shape.label
    impls = [row.label for row in rows if any(case.shape.label == label for cell in row.cells for case in cell.cases)]
    return [f"{', '.join(impls)}: at {label} (none of those head sizes is theirs)"] if impls else []


def value_heads_lines(rows: list[Row], value_heads_shape: Shape) -> list[str]:
    """The variants with value heads, also checked at matrix.VALUE_HEADS_SHAPE, one line."""
    label = value_heads_shape.label
    cells = ((row, case) for row in rows for cell in row.cells for case in cell.cases)
    variants = list(dict.fromkeys(row.variant for row, case in cells if case.shape.label == label))
    return [f"{', '.join(variants)}: also at {label} (more value heads than q/k heads)"] if variants else []


def setting_lines(rows: list[Row]) -> list[str]:
    """``gla: gate_regime=strong``: the settings besides the defaults that a variant's cells
    were also checked at (its check_params), once per variant."""
    settings: dict[str, list[str]] = {}
    for row in rows:
        for cell in row.cells:
            for case in cell.cases:
                seen = settings.setdefault(row.variant, [])
                if case.setting and case.setting not in seen:
                    seen.append(case.setting)
    return [f"{variant}: {', '.join(found)}" for variant, found in settings.items() if found]


def failure_lines(rows: list[Row]) -> list[str]:
    """The describe() line of every failing case, in table order."""
    return [case.describe() for row in rows for cell in row.cells for case in cell.failures]


def outputs_only_lines(rows: list[Row]) -> list[str]:
    """The impls whose gradients could not be checked (forward-only kernels), with the reason
    they gave: their cells judge the outputs alone."""
    lines = {f"{row.label}: {cell.outputs_only}" for row in rows for cell in row.cells if cell.outputs_only}
    return sorted(lines)


def unavailable_lines(rows: list[Row]) -> list[str]:
    """Why each impl that could not run here could not, once per impl; and, for a cell judged
    on some of its shapes, which shapes it could not take and why."""
    lines = {f"{row.variant}:{row.impl}: {cell.unavailable}" for row in rows for cell in row.cells if cell.unavailable}
    lines |= {
        f"{row.variant}:{row.impl} {case.shape.label} {str(case.dtype).removeprefix('torch.')}: {case.unavailable}"
        for row in rows
        for cell in row.cells
        for case in cell.not_run
    }
    return sorted(lines)


def skipped_lines(rows: list[Row]) -> list[str]:
    """Which maskings of which variants were not checked, once per variant and masking."""
    return sorted({cell.skipped for row in rows for cell in row.cells if cell.skipped})


def summary_line(rows: list[Row]) -> str:
    """ "N cells checked, M failed" (plus how many could not run here or were skipped, when any)."""
    cells = [cell for row in rows for cell in row.cells]
    checked = [cell for cell in cells if not cell.unavailable and not cell.skipped]
    failed = sum(1 for cell in checked if cell.failures)
    unavailable = sum(1 for cell in cells if cell.unavailable)
    skipped = sum(1 for cell in cells if cell.skipped and not cell.unavailable)
    text = f"{len(checked)} cells checked, {failed} failed"
    return text + (f", {unavailable} unavailable" if unavailable else "") + (f", {skipped} skipped" if skipped else "")
