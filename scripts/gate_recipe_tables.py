"""The tables of scripts/gate_recipe_check.py: each rerun's record (Rerun) and the markdown the
check prints for docs/ci.md and docs/evidence.md: the reruns' verdicts and times, detection of a
planted change by point, and what each point measures."""

from __future__ import annotations

import argparse
import math
import statistics
from dataclasses import dataclass, field

# The file --widen changes: the module that builds and dispatches every gated form, which the
# 20 gated recurrent and quadratic forms the suite does not measure run too (traced: a change
# to one form's own file, delta_chunked.py, adds none of them).
WIDENED_FILE = "linbench/variants/gated/impls.py"


@dataclass
class Rerun:
    index: int
    exit_status: int
    verdict: str
    seconds: float
    load: str  # /proc/loadavg when the rerun began
    rounds: int | None = None  # linbench ab: the rounds it ran
    points: int = 0
    unjudged: int = 0
    planted: dict[str, bool] = field(default_factory=dict)  # point label -> caught
    planted_exits: dict[str, int] = field(default_factory=dict)  # point label -> compare's exit with it planted
    planted_fate: dict[str, str] = field(default_factory=dict)  # point label -> caught/cleared/open at round N
    point_rounds: tuple[int, float, int] = (0, 0.0, 0)  # fewest, median, most rounds of a point
    # point label -> (judged ms a call, repetitions a process, σ̂ between processes, rounds)
    figures: dict[str, tuple[float, float, float | None, int]] = field(default_factory=dict)
    recorded_load: str = "?"  # the 1-minute load average the rounds recorded


MEANING = "0 pass, 1 a regression elsewhere, 4 inconclusive; None: not recorded"
HEADER = (
    "| reruns | false alarms (exit 1) | inconclusive (exit 4) | pass (exit 0) | other exits "
    "| points judged | minutes per rerun (median, most) | rounds (median) | a point's rounds (fewest-most) |"
)


def recipe_text(args: argparse.Namespace) -> str:
    """The recipe as markdown: the command in backticks, and what ``--widen`` changed."""
    if args.recipe != "ab":
        return f"`linbench run --suite {args.suite}` twice, then `linbench compare`"
    flags = [f" --rounds {args.rounds}"] if args.rounds else []
    flags += [f" --max-rounds {args.max_rounds}"] if args.max_rounds else []
    flags += [f" --max-job-s {args.max_job_s:g}"] if args.max_job_s else []
    widened = f", with a change to {WIDENED_FILE} that changes no time (--widen)" if args.widen else ""
    return f"`linbench ab --baseline {args.baseline} --suite {args.suite}{''.join(flags)}`{widened}"


def table(args: argparse.Namespace, reruns: list[Rerun]) -> str:
    """The results as markdown: the reruns' verdicts, then detection by point."""
    exits = [r.exit_status for r in reruns]
    counts = [exits.count(1), exits.count(4), exits.count(0)]
    rounds = [r.rounds for r in reruns if r.rounds]
    minutes = [r.seconds / 60 for r in reruns]
    beside = " beside a busy torch neighbour" if args.busy else ""
    loads = ", ".join(f"{r.load.split()[0]} ({r.recorded_load})" for r in reruns)
    cells = [
        len(reruns),
        *counts,
        len(exits) - sum(counts),
        f"{sum(r.points - r.unjudged for r in reruns)} / {sum(r.points for r in reruns)}",
        f"{statistics.median(minutes):.1f}, {max(minutes):.1f}",
        statistics.median(rounds) if rounds else "-",
        f"{min(r.point_rounds[0] for r in reruns)}-{max(r.point_rounds[2] for r in reruns)}",
    ]
    lines = [
        f"Recipe: {recipe_text(args)}; {len(reruns)} back-to-back reruns of unchanged code{beside}; "
        f"load average (1 min) at the start of each rerun (and the range its rounds recorded): {loads}.",
        "",
        HEADER,
        "|---|---|---|---|---|---|---|---|---|",
        "| " + " | ".join(map(str, cells)) + " |",
        "",
        *plant_lines(args, reruns),
        "",
        *point_lines(reruns),
    ]
    return "\n".join(lines)


def point_lines(reruns: list[Rerun]) -> list[str]:
    """What each point measures, over the reruns (medians): its judged time a call, repetitions a
    process, the spread between its processes, the rounds it got, and the rounds its spread needs
    to be cleared unchanged and to catch +30% (gate/sequential.py): a point whose rounds do not
    fit the budget on the runner is one to move out of the suite, or to measure at another shape."""
    from linbench.gate.sequential import ErrorRates, rounds_to_decide

    lines = [
        "| point | judged ms a call | repetitions a process | σ̂ between processes (log) | rounds | rounds "
        "(fewest-most) | rounds to clear / to catch +30% |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in sorted({name for r in reruns for name in r.figures}):
        rows = [r.figures[name] for r in reruns if name in r.figures]
        spreads = [row[2] for row in rows if row[2] is not None]
        rounds = [row[3] for row in rows]
        ms, reps = statistics.median(row[0] for row in rows), statistics.median(row[1] for row in rows)
        spread = statistics.median(spreads) if spreads else None
        needs = [rounds_to_decide(spread, change, 3, 0.05, 0.30, ErrorRates()) for change in (0.0, math.log(1.3))]
        shown = " / ".join("more than 1000" if n is None else str(n) for n in needs)
        lines.append(
            f"| {name} | {ms:.3g} | {reps:.0f} | {spread if spread is not None else float('nan'):.3f} "
            f"| {statistics.median(rounds):g} | {min(rounds)}-{max(rounds)} | {shown} |"
        )
    return lines


def plant_lines(args: argparse.Namespace, reruns: list[Rerun]) -> list[str]:
    """Detection of the planted change, by point: caught, and for the A/B cleared (missed) and
    open (the rounds measured too few to decide), with the rounds a catch took."""
    lines = [
        f"| +{(args.plant - 1) * 100:.0f}% planted on one point (current side's numbers) "
        "| caught | cleared (missed) | open | rounds to catch (median) |",
        "|---|---|---|---|---|",
    ]
    for name in sorted({name for r in reruns for name in r.planted}):
        fates = [r.planted_fate.get(name, "") for r in reruns if name in r.planted]
        hits = [r.planted[name] for r in reruns if name in r.planted]
        took = [int(f.rsplit(" ", 1)[1]) for f in fates if f.startswith("caught")]
        cleared, opened = sum(f.startswith("cleared") for f in fates), sum(f.startswith("open") for f in fates)
        median = statistics.median(took) if took else "-"
        lines.append(f"| {name} | {sum(hits)} / {len(hits)} | {cleared} | {opened} | {median} |")
    total = [hit for r in reruns for hit in r.planted.values()]
    lines.append(f"| **every point** | **{sum(total)} / {len(total)}** | | | |")
    missed = [r.planted_exits.get(name) for r in reruns for name, hit in r.planted.items() if not hit]
    if missed and args.recipe != "ab":
        by_exit = ", ".join(f"exit {code}: {missed.count(code)}" for code in sorted(set(missed), key=str))
        lines += ["", f"The missed plants by the exit `compare` gave them ({MEANING}): {by_exit}."]
    return lines
