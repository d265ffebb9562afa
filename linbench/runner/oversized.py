"""Leaving out, before a sweep runs, the points of a form that cannot fit in memory.

A bare variant name (``--variant gla``) selects every form of it, and its quadratic form holds
a tensor of B·H·S²·Dk elements: 8 GiB at 1k tokens (B1 H8 D64) and out of memory at 2k on a
machine with 24 GiB. What a form holds is declared (``Impl.memory_complexity``), so the points
where even its least working set (linbench/sweep/estimate.py ``working_set_bytes``, in the
copies the impl was measured to hold, ``Impl.working_copies``) passes the
memory a worker may take are left out, with a note saying so. An impl named explicitly
(``--variant gla:quadratic``) runs wherever asked: its ``oom`` rows are then what was asked for.
"""

from __future__ import annotations

from dataclasses import replace

from linbench.runner.targets import Targets
from linbench.sweep.estimate import input_bytes, working_set_bytes
from linbench.sweep.points import Point
from linbench.units import format_bytes, format_size
from linbench.variants.declarations import powers_in_s_and_d
from linbench.variants.registry import get_variant


def leave_out_oversized(points: list[Point], targets: Targets, memory_bytes: int) -> tuple[list[Point], Targets]:
    """``points`` without those of an impl not named explicitly whose declared working set
    passes ``memory_bytes``, and a note per impl left out so; ValueError when nothing is left."""
    kept: list[Point] = []
    left_out: dict[tuple[str, str], list[tuple[Point, int]]] = {}
    for point in points:
        pair = (point.variant, point.impl)
        need = _need(point)
        # A point whose inputs alone pass the memory is no form's to leave out: the sweep is
        # refused for it (linbench/sweep/estimate.py check_fits), in words of its own.
        if pair in targets.named or need <= memory_bytes or input_bytes(point) > memory_bytes:
            kept.append(point)
        else:
            left_out.setdefault(pair, []).append((point, need))
    notes = tuple(_note(pair, dropped, memory_bytes) for pair, dropped in left_out.items())
    if points and not kept:
        raise ValueError(f"nothing to run: {'; '.join(notes)}")
    return kept, replace(targets, notes=(*targets.notes, *notes))


def _need(point: Point) -> int:
    impl = get_variant(point.variant).impl(point.impl)
    return working_set_bytes(point, *powers_in_s_and_d(impl.memory_complexity), impl.working_copies)


def _note(pair: tuple[str, str], dropped: list[tuple[Point, int]], memory_bytes: int) -> str:
    name = f"{pair[0]}:{pair[1]}"
    lengths = ", ".join(dict.fromkeys(format_size(point.shape.seq) for point, _ in dropped))
    complexity = get_variant(pair[0]).impl(pair[1]).memory_complexity
    least = format_bytes(min(need for _, need in dropped))
    return (
        f"{name} left out at {lengths}: its {complexity} working set needs at least {least} there, more than "
        f"the {format_bytes(memory_bytes)} a worker may take here; name it (--variant {name}) to run it anyway"
    )
