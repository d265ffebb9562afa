"""Leaving out, before a sweep runs, the points of a form that cannot fit in memory.

A bare variant name (``--variant gla``) selects every form of it, and its quadratic form holds
a tensor of B·H·S²·Dk elements: 8 GiB at 1k tokens (B1 H8 D64) and out of memory at 2k on a
machine with 24 GiB. What a form holds is declared (``Impl.memory_complexity``), so the points
where even its least working set (linbench/sweep/estimate.py ``working_set_bytes``, in the
copies the impl was measured to hold, ``Impl.working_copies``) passes the
memory a worker may take are left out, with a note saying so. An impl named explicitly
(``--variant gla:quadratic``) runs wherever asked: its ``oom`` rows are then what was asked for.

A pack's points (``run --pack``) are left out the same way: a padded point holds its (N, H,
L_max) batch; a packed one its (1, H, T) pack, and a form whose working set grows faster than
the length holds it per sequence (the packed quadratic forms attend within each sequence in
turn: linbench/variants/gated/packed.py, varlen.py's ``per_sequence``), so at the longest.
"""

from __future__ import annotations

from dataclasses import replace

from linbench.runner.targets import Targets
from linbench.sweep.estimate import input_bytes, working_set_bytes
from linbench.sweep.points import Point
from linbench.units import format_bytes, format_size
from linbench.variants.declarations import powers_in_s_and_d
from linbench.variants.registry import get_variant


def leave_out_oversized(
    points: list[Point], targets: Targets, memory_bytes: int, longest: int | None = None
) -> tuple[list[Point], Targets]:
    """``points`` without those of an impl not named explicitly whose declared working set
    passes ``memory_bytes``, and a note per impl left out so; ValueError when nothing is left.
    ``longest``: a pack run's longest sequence (module doc)."""
    kept: list[Point] = []
    left_out: dict[tuple[str, str], list[tuple[Point, int]]] = {}
    for point in points:
        pair = (point.variant, point.impl)
        need = _need(point, longest)
        # A point whose inputs alone pass the memory is no form's to leave out: the sweep is
        # refused for it (linbench/sweep/estimate.py check_fits), in words of its own.
        if pair in targets.named or need <= memory_bytes or input_bytes(point) > memory_bytes:
            kept.append(point)
        else:
            left_out.setdefault(pair, []).append((point, need))
    notes = tuple(_note(pair, dropped, memory_bytes, longest) for pair, dropped in left_out.items())
    if points and not kept:
        raise ValueError(f"nothing to run: {'; '.join(notes)}")
    return kept, replace(targets, notes=(*targets.notes, *notes))


def _need(point: Point, longest: int | None = None) -> int:
    impl = get_variant(point.variant).impl(point.impl)
    s_power, d_power = powers_in_s_and_d(impl.memory_complexity)
    if longest is not None and point.packing == "packed" and s_power > 1:
        point = replace(point, shape=replace(point.shape, batch=1, seq=longest))  # one sequence at a time
    return working_set_bytes(point, s_power, d_power, impl.working_copies)


def _where(point: Point, longest: int | None) -> str:
    """``4k``, or a pack's point: ``the pack padded (15 × 10993)``, ``the pack packed (its longest
    sequence, 10993)``."""
    if not point.packing:
        return format_size(point.shape.seq)
    if point.packing == "packed" and longest is not None and point.shape.seq != longest:
        return f"the pack packed (its longest sequence, {format_size(longest)})"
    return f"the pack {point.packing} ({point.shape.batch} × {format_size(point.shape.seq)})"


def _note(pair: tuple[str, str], dropped: list[tuple[Point, int]], memory_bytes: int, longest: int | None) -> str:
    name = f"{pair[0]}:{pair[1]}"
    lengths = ", ".join(dict.fromkeys(_where(point, longest) for point, _ in dropped))
    complexity = get_variant(pair[0]).impl(pair[1]).memory_complexity
    least = format_bytes(min(need for _, need in dropped))
    return (
        f"{name} left out at {lengths}: its {complexity} working set needs at least {least} there, more than "
        f"the {format_bytes(memory_bytes)} a worker may take here; name it (--variant {name}) to run it anyway"
    )
