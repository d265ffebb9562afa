"""What the sequential rounds of an A/B say they do next, a line each on stderr: the points
still open and how many the next round measures (in how many processes each), those the budget
leaves out with the rounds they would need, those too dear for the rounds every point gets, and
those whose code is the same on both sides (sequential.py decides; this only words it)."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from linbench.ab.sequential import OUTSIZED_SHARE, OpenPoint, Scheduler
from linbench.gate.sequential import MOST_ROUNDS
from linbench.results.record import Key
from linbench.results.schema import KEY_COLUMNS


def open_lines(scheduler: Scheduler, chosen: set[Key], narrow: bool, budget_s: float | None) -> list[str]:
    """What the rounds do next, naming the rule: the points still open and how many go on (in
    how many processes each), and the ones the budget leaves out with the rounds they would
    need."""
    opened = scheduler.open_now
    # Named when their count changes, not every round.
    same = _same_code_line(scheduler.same_open) if len(scheduler.same_open) != scheduler.same_said else []
    scheduler.same_said = len(scheduler.same_open)
    if not opened:
        return same
    rule = scheduler.rule
    why = (
        f"{len(opened)} point(s) not yet decided: the interval of their ratio reaches both past the "
        f"{rule.max_slowdown:.0%} floor and to +{rule.max_noise:.0%} at the gate's error rates "
        f"({rule.rates.false_alarm:g} false alarm, {rule.rates.miss:g} miss a look; fewer than "
        f"{rule.protocol.min_to_judge} rounds judge nothing)"
    )
    lines = []
    if chosen:
        which = (
            f"those points only, {_order(scheduler.first)}"
            if narrow
            else "every point (the baseline cannot narrow one)"
        )
        each = f", {scheduler.per_round} processes each" if scheduler.per_round > 1 else ""
        spare = "; the time left goes to them, whether or not the rounds they need fit it" if scheduler.spare else ""
        lines.append(f"{why}: another round of {len(chosen)} of them{each} ({which}{spare})")
    else:
        lines.append(why)
    out = [p for p in opened if p.key not in chosen]
    if out:
        named = ", ".join(f"{_label(p.key)} ({_needed_text(p.needed)})" for p in out[:6])
        more = f" and {len(out) - 6} more" if len(out) > 6 else ""
        limit = f"--max-job-s {budget_s:g}" if budget_s is not None else "the rounds"
        lines.append(f"{len(out)} point(s) cannot be decided within {limit}: {named}{more}")
    return [*same, *lines]


def _same_code_line(points: Sequence[OpenPoint]) -> list[str]:
    """What the rounds do with the open points whose code is the same on both sides."""
    if not points:
        return []
    named = ", ".join(_label(p.key) for p in points[:6]) + (f" and {len(points) - 6} more" if len(points) > 6 else "")
    return [
        f"{len(points)} point(s) not yet decided run the same code on both sides (no file they run changed since "
        f"the baseline, nor any file every point runs): no more rounds, and they do not hold the verdict open: {named}"
    ]


def deferred_line(keys: Collection[Key], rounds: int, budget_s: float | None) -> str:
    """What the rounds do with the points too dear for the rounds every point gets."""
    named = ", ".join(_label(key) for key in sorted(keys)[:6]) + (f" and {len(keys) - 6} more" if len(keys) > 6 else "")
    limit = f"--max-job-s {budget_s:g}" if budget_s is not None else "the budget"
    return (
        f"{len(keys)} point(s) too dear for the rounds every point gets ({rounds} rounds of them would take more "
        f"than {OUTSIZED_SHARE:.0%} of {limit}): {named}; later rounds measure them as the time allows"
    )


def _order(first: Collection[str]) -> str:
    if not first:
        return "cheapest to decide first"
    return "the changed impls' first (those that look slower ahead), then the cheapest to decide"


def _needed_text(needed: int | None) -> str:
    return f"more than {MOST_ROUNDS} rounds" if needed is None else f"{needed} rounds"


def _label(key: Key) -> str:
    named = dict(zip(KEY_COLUMNS, key, strict=False))
    return f"{named.get('variant')}:{named.get('impl')} {named.get('mode')} seq {named.get('seq')}"
