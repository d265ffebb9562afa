"""How long the impls ``linbench ab`` adds for changed code will take, before any round runs.

An added impl runs at the sweep's shapes, and a slow form there (a recurrent loop, a
quadratic form at a gate suite's lengths) can take far longer than the suite itself. Each
added impl's points are planned as ``linbench run`` would plan them alone and costed by the
duration model (linbench/sweep/estimate.py), one process a point a round, on both sides.
``--max-widen-s`` caps the total: the impls past it are left unmeasured, and the comparison
names them and is inconclusive (exit 4), never a pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from linbench.runner.plan import RunPlan, make_plan
from linbench.sweep.estimate import estimate_s
from linbench.sweep.points import Point
from linbench.sweep.request import SweepRequest
from linbench.sweep.spec import build_spec
from linbench.sweep.values import SpecError

SIDES = 2  # the baseline's rounds and the current code's


def added_seconds(request: SweepRequest, impl: str, rounds: int) -> float | None:
    """Seconds ``impl`` (``variant:impl``) adds to an A/B of ``rounds`` rounds of the sweep
    ``request`` asks for, by the estimate; None where its points cannot be planned here."""
    plan = planned(alone_with(request, (impl,)))
    if plan is None:
        return None
    return SIDES * estimate_s(plan.points, plan.timing, plan.timeout_s, plan.kind, rounds)


def alone_with(request: SweepRequest, impls: tuple[str, ...]) -> SweepRequest:
    """The sweep ``request`` asks for, of ``impls`` (``variant:impl``) alone."""
    return replace(request, variants=impls, against=None, no_against=True)


def planned(request: SweepRequest) -> RunPlan | None:
    """The plan of the sweep ``request`` asks for here, as ``linbench run`` would make it;
    None where it cannot be planned here."""
    from linbench.devices import resolve_device

    try:
        spec = build_spec(request)
        device = resolve_device(spec.device)
        return make_plan(spec, device, str(device))
    except (SpecError, ValueError, RuntimeError):
        return None


def shortest(points: Sequence[Point]) -> list[Point]:
    """The points at the shortest length among ``points``, where a recurrent or quadratic
    form costs least."""
    least = min((point.shape.seq for point in points), default=None)
    return [point for point in points if point.shape.seq == least]


def first_points(request: SweepRequest, added: tuple[str, ...]) -> set[tuple[str, ...]] | None:
    """The points every round measures when ``added`` impls (``variant:impl``) widen the sweep
    ``request`` asks for (its ``--variant`` already widened): every point of the sweep's own
    impls, and each added impl at the sweep's shapes at its shortest length only, where a
    recurrent or quadratic form costs least (one is measured there, not skipped). None where
    nothing is added or the sweep cannot be planned here (then every point is measured)."""
    plan = planned(request) if added else None
    if plan is None:
        return None
    first = {point.key for point in shortest(plan.points)}
    widened = set(added)
    return {point.key for point in plan.points if f"{point.variant}:{point.impl}" not in widened or point.key in first}
