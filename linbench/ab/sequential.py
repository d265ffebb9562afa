"""Which points the next round of an A/B measures, and how many processes each: those still
open, cheapest first, as many as the job's time budget still holds.

After the rounds every point gets (``--rounds``), each point is judged after every round by
the gate's own rule (gate/rule.py, for runs measured until decided: gate/sequential.py). A
point whose verdict is decided either way (a regression, or cleared of a change past
``--max-noise``) stops; an open one gets another round. What a round costs is measured, not
assumed: each point's from the wall time of its processes in the rounds so far (its own timing,
added impls included), and each side's start-up from what the rounds took beyond their points.
With a budget (``--max-job-s``), the open points are ranked by what deciding them would cost
(the rounds their spread and ratio still need, times a round of them) and taken cheapest first
while the job's projected end stays within it; the others are left out, named with the rounds
they would need, and the comparison is inconclusive for them. Where none of them fits, the time
left still goes to a round of the cheapest (``spare_round``), and so it does to a changed impl's
open points whatever else is chosen: the rounds a point needs are estimated from its spread so
far, which a round of several processes narrows, and from rounds of every point, whose start-up
is longer than a late round's. That time is what the changed code's points that can be decided
leave: their rounds are kept first. A point too dear for the rounds every point gets (its
first rounds would take more than OUTSIZED_SHARE of the budget: a torch.compile impl on a CPU)
gets round 1 only, then rounds as the time allows. A point whose impl runs the same code on
both sides (``Scheduler.same_code``: no file it runs changed, nor any file every point runs) gets
no rounds past those every point gets: whatever its processes show is the machine, not the
change, so its rounds would only take the changed points' time (a change to a function the gated
recurrent and chunked forms share, 46 points, was left INCONCLUSIVE with 24 points open when
the 16 points of other families took their share of the rounds).

Among the changed code's open points, those that look slower so far (their ratio past the
``--max-slowdown`` floor) go first, and a round of them is taken before the rounds kept for the
others: one decided regression settles the verdict, while a PASS needs every point cleared. A
change to the module every gated form runs (56 points) with kda:chunked 1.37-1.40x slower was
left INCONCLUSIVE after 242 s with that point at 3 rounds: the rounds went to clearing 40 other
changed points, which cost fewer rounds each. With this rule it gets 5-6 rounds there, still
too few: at 56 points the three rounds every point gets take about 180 s of the 270
(docs/evidence.md, 2026-11-29). Read by function (code_diff.py), that change reaches the 10
chunked forms only, 36 points, and is caught.

A round's start-up (a ``linbench run`` a side: about 1.5 s a side forked from the side's round
server on the 2-core CI machine, 4.5 s as a new process) costs the same whatever the round
measures, while a process of a gate point takes about 0.25 s; a round of the last few open
points was mostly start-up. So a round
after those every point gets measures each of its points in several processes
(``processes_per_round``): about as many as make the processes take as long as the start-up,
at most MOST_PER_ROUND. The round stays one process of the point, its figure the median of its
processes' (merge.py): processes of one round share its minutes, and on the CI machine some
points moved together over tens of seconds, so counting them apart would claim an interval the
measurements do not have. The median of several is steadier, so a point needs fewer rounds.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

from linbench.ab.merge import round_process, round_workers
from linbench.gate.rule import TimeRule, judge
from linbench.gate.sequential import MOST_ROUNDS, OPEN, rounds_to_decide
from linbench.gate.statistic import process_times
from linbench.results.processes import ProcessResult
from linbench.results.protocol import judged
from linbench.results.record import Key, row_key
from linbench.results.schema import KEY_COLUMNS
from linbench.results.store import RunStore, RunStoreError

Folders = dict[str, list]  # side -> its round run folders (Paths), round 1 first
# Seconds kept for what follows the last round: merging both sides and the comparison (about 40 s
# on the loaded 2-core development machine for 46 points, with the worktree's removal).
CLOSING_S = 30.0
# The most processes a point a round measures: past about this many, the median of a round's
# processes is as steady as the minutes they share let it be (merge.py).
MOST_PER_ROUND = 8
# A point whose rounds every point gets (the fewest that judge, both sides) would take more
# than this share of the job's budget, by what its round 1 cost, is left out of them after
# round 1 and measured only as later rounds find the time (Scheduler.outsized): a torch.compile
# impl's process compiles for 10-15 s on the 2-core CI machine, and its three rounds took the
# time the changed code's cheaper points needed to be decided.
OUTSIZED_SHARE = 0.25


@dataclass(frozen=True)
class OpenPoint:
    """A point not yet decided: its rounds so far, the rounds that would decide it (None: more
    than MOST_ROUNDS), what one process of it costs, both sides (seconds), and whether it looks
    slower so far (its ratio past the rule's floor)."""

    key: Key
    rounds: int
    needed: int | None
    round_s: float
    slower: bool = False

    @property
    def more(self) -> int | None:
        return None if self.needed is None else max(self.needed - self.rounds, 1)

    @property
    def cost_s(self) -> float:
        return math.inf if self.more is None else self.more * self.round_s


@dataclass
class Scheduler:
    """The sequential rounds of one A/B: call ``round_done`` after each round and
    ``next_points`` before each extra one."""

    rule: TimeRule
    budget_s: float | None = None  # the whole job's, from ``started``; None: no budget
    started: float = field(default_factory=time.monotonic)
    clock: Callable[[], float] = time.monotonic
    overheads: list[float] = field(default_factory=list)  # per round, both sides: beyond the points
    rounds_s: list[float] = field(default_factory=list)  # per round, both sides: in all
    left_out: dict[Key, int | None] = field(default_factory=dict)  # out of budget: rounds needed
    open_now: list[OpenPoint] = field(default_factory=list)
    per_round: int = 1  # processes a point in the round next_points chose
    spare: bool = False  # whether that round only spends the time left (spare_round)
    first: frozenset[str] = frozenset()  # the changed impls ("variant:impl"): their points go first
    several: bool = True  # whether a round may measure a point in several processes
    # Whether an impl ("variant:impl") runs the same code on both sides (no file it runs changed,
    # nor any file every point runs): the verdict's own rule (gate/verdict.py's
    # ChangedCode.same_code). Its points get no rounds past those every point gets, since no
    # count of them could show the change. None: every impl's code may differ.
    same_code: Callable[[str], bool] | None = None
    same_open: list[OpenPoint] = field(default_factory=list)  # such points still open
    same_said: int = 0  # how many of them the progress last named

    def round_done(self, seconds: Sequence[float], points_s: Sequence[float], checks_s: Sequence[float] = ()) -> None:
        """A round's sides took ``seconds``, of which their points' processes ``points_s`` and
        their correctness checks ``checks_s``. Only round 1 checks (the first compile of a
        torch.compile impl among them), so a round's start-up and a round of every point as
        the later rounds run it are counted without them: with them, round 1's 60-70 s of
        checks with a compiled impl added made a round of every point look twice its cost, and
        the rounds stopped after one."""
        checks = sum(checks_s)
        self.overheads.append(max(sum(seconds) - sum(points_s) - checks, 0.0))
        self.rounds_s.append(max(sum(seconds) - checks, 0.0))

    def outsized(self, folders: Mapping[str, Sequence[object]]) -> set[Key]:
        """The points whose rounds every point gets (the fewest that judge, both sides, each
        costing what round 1's processes of it did) would take more than OUTSIZED_SHARE of the
        budget (none without one): after round 1 they are left out of those rounds, and later
        ones measure them as next_points finds the time (their verdict open meanwhile)."""
        if self.budget_s is None:
            return set()
        sides = [_by_point(paths)[1] for paths in folders.values()]
        if len(sides) != 2:
            return set()
        limit = OUTSIZED_SHARE * self.budget_s
        rounds = self.rule.protocol.min_to_judge
        base, cur = sides
        return {key for key in base.keys() & cur.keys() if rounds * (base[key] + cur[key]) > limit}

    def round_fits(self) -> bool:
        """Whether another round of every point, costing what the last one did, ends within
        the budget (always, without one): the rounds every point gets stop short of it too,
        leaving points unverified (inconclusive) rather than the job late."""
        if self.budget_s is None or not self.rounds_s:
            return True
        return self.clock() - self.started + self.rounds_s[-1] + CLOSING_S <= self.budget_s

    @property
    def overhead_s(self) -> float:
        """A round's start-up, both sides: the median of the rounds so far (0 before any)."""
        return statistics.median(self.overheads) if self.overheads else 0.0

    def next_points(self, folders: Mapping[str, Sequence[object]]) -> set[Key]:
        """The points the next round measures: the open ones that fit the budget, cheapest to
        decide first (``per_round`` processes each). Those that do not fit go to ``left_out``."""
        self.open_now = open_points(folders, self.rule)
        if self.same_code is not None:
            same = self.same_code
            self.same_open = [p for p in self.open_now if same(_impl(p))]
            self.open_now = [p for p in self.open_now if not same(_impl(p))]
        remaining = None if self.budget_s is None else self.budget_s - CLOSING_S - (self.clock() - self.started)
        chosen, left_out = choose(self.open_now, self.overhead_s, remaining, self.several, self.first)
        changed = [p for p in left_out if _of(p, self.first)]
        self.spare = bool(changed or not chosen) and remaining is not None
        if self.spare:
            # The time left goes to a round of the changed code's open points even where the
            # rounds they need do not fit, and with nothing else chosen, to the cheapest; the
            # rounds of the changed code's points that do fit are kept for them first, but
            # after a round of those that look slower: one caught settles the verdict.
            remaining = remaining or 0.0
            suspects = spare_round([p for p in changed if p.slower], self.overhead_s, remaining, self.several)
            remaining -= one_round_s(suspects, self.overhead_s, self.several)
            kept = [p for p in chosen if _of(p, self.first)]
            left = remaining - (projected_s(kept, self.overhead_s, self.several) if kept else 0.0)
            others = [p for p in chosen if p not in kept]
            rest = [p for p in (changed or left_out) if p not in suspects]
            chosen = [*suspects, *kept, *spare_round([*others, *rest], self.overhead_s, left, self.several, self.first)]
        self.left_out = {p.key: p.needed for p in left_out if p not in chosen}
        self.per_round = processes_per_round(chosen, self.overhead_s) if self.several else 1
        return {p.key for p in chosen}


def choose(
    points: Sequence[OpenPoint],
    overhead_s: float,
    remaining_s: float | None,
    several: bool = True,
    first: Collection[str] = (),
) -> tuple[list[OpenPoint], list[OpenPoint]]:
    """The open points the next round measures, and those left out: ranked by what deciding
    each would cost (its rounds still needed times a process of it), cheapest first, each taken
    while the rounds deciding all those taken (projected_s) fit ``remaining_s`` seconds (None:
    no budget; ``several``: whether a round may measure a point more than once), the points of
    the impls in ``first`` (the changed code's, "variant:impl") ahead of the others, and of
    those the ones that look slower first: a change is likeliest to have slowed its own code.
    One that no count of rounds decides (``needed`` None) is left out."""
    chosen: list[OpenPoint] = []
    left_out: list[OpenPoint] = []
    for point in sorted(points, key=lambda p: (*_rank(p, first), p.cost_s, p.round_s, p.key)):
        fits = remaining_s is None or projected_s([*chosen, point], overhead_s, several) <= remaining_s
        (chosen if point.more is not None and fits else left_out).append(point)
    return chosen, left_out


def spare_round(
    points: Sequence[OpenPoint],
    overhead_s: float,
    remaining_s: float,
    several: bool = True,
    first: Collection[str] = (),
) -> list[OpenPoint]:
    """The open points one more round measures with the time left, where the rounds they need
    do not fit it (none of them, or a changed impl's): those of ``first`` (as choose), then the
    cheapest a round, while that one round fits ``remaining_s``. The rounds a point needs are
    estimated from its spread so far, which a round of several processes (their median its
    figure) narrows, so a round the estimate calls too few can still decide it; one that does
    not leaves it undecided, as it would have been. A point that looks slower gets its round
    even where no count of rounds would decide it by that estimate: three rounds' spread is a
    poor estimate, and it is the point a regression would be."""
    taken: list[OpenPoint] = []
    for point in sorted(points, key=lambda p: (*_rank(p, first), p.round_s, p.key)):
        if point.more is None and not point.slower:
            continue
        trial = [*taken, point]
        if one_round_s(trial, overhead_s, several) <= remaining_s:
            taken = trial
    return taken


def one_round_s(points: Sequence[OpenPoint], overhead_s: float, several: bool = True) -> float:
    """Seconds one round of ``points`` takes: its start-up and processes_per_round processes of
    each (one without ``several``); nothing for no points."""
    if not points:
        return 0.0
    per_round = processes_per_round(points, overhead_s) if several else 1
    return overhead_s + per_round * sum(p.round_s for p in points)


def processes_per_round(points: Sequence[OpenPoint], overhead_s: float) -> int:
    """How many processes a point the next round of ``points`` measures, a round's start-up
    (both sides) being ``overhead_s``: about as many as make their processes (a process of each
    point, both sides, costing the sum of their ``round_s``) take as long as the start-up, which
    at most doubles what the round costs; one at least, MOST_PER_ROUND at most."""
    per_process = sum(p.round_s for p in points)
    if not points or per_process <= 0:
        return 1
    return max(1, min(MOST_PER_ROUND, round(overhead_s / per_process)))


def projected_s(points: Sequence[OpenPoint], overhead_s: float, several: bool = True) -> float:
    """Seconds the rounds deciding ``points`` would take: a round's start-up for each round the
    longest needs, and each point's own rounds, at processes_per_round processes a point a
    round (one without ``several``)."""
    per_round = processes_per_round(points, overhead_s) if several else 1
    rounds = max((p.more or 0 for p in points), default=0)
    return rounds * overhead_s + per_round * sum(p.cost_s for p in points)


def open_points(folders: Mapping[str, Sequence[object]], rule: TimeRule) -> list[OpenPoint]:
    """Every point of the rounds so far that both sides measured ok in every round and whose
    verdict is still open, with the processes that would decide it and the cost of one."""
    sides = [_by_point(paths) for paths in folders.values()]
    if len(sides) != 2:
        return []
    (base, base_s), (cur, cur_s) = sides
    found = []
    for key in sorted(base.keys() & cur.keys()):
        b, c = base[key], cur[key]
        if any(p.status != "ok" for p in (*b, *c)):
            continue  # broken whatever more rounds say
        cpu = _on_cpu(key)
        _, base_times, cur_times = process_times(judged(b, cpu), judged(c, cpu), cpu)
        judgement = judge(base_times, cur_times, rule)
        if judgement.verdict == "unverified" or judgement.decision == OPEN:
            log_ratio = math.log(judgement.ratio) if judgement.ratio else 0.0
            k = min(len(b), len(c))
            needed = _needed(judgement.spread, log_ratio, k, rule)
            slower = log_ratio > math.log1p(rule.max_slowdown)
            found.append(OpenPoint(key, k, needed, base_s.get(key, 0.0) + cur_s.get(key, 0.0), slower))
    return found


def _needed(spread: float | None, log_ratio: float, k: int, rule: TimeRule) -> int | None:
    if spread is None:
        return max(k + 1, rule.protocol.min_to_judge)
    found = rounds_to_decide(spread, log_ratio, k, rule.max_slowdown, rule.max_noise, rule.rates)
    return None if found is None or found >= MOST_ROUNDS else max(found, k + 1)


def _by_point(paths: Sequence[object]) -> tuple[dict[Key, list[ProcessResult]], dict[Key, float]]:
    """Each point's rounds over ``paths`` (round folders, in order: each round's results row is
    its process, with what only its processes.csv holds, as merge.py merges them), and what one
    process of it costs: the median wall time of its processes (absent where the rounds
    recorded no processes.csv; a round's start-up then carries it)."""
    by_point: dict[Key, list[ProcessResult]] = {}
    walls: dict[Key, list[float]] = {}
    for index, path in enumerate(paths):
        store = RunStore(path)  # type: ignore[arg-type]
        process_rows = store.process_rows()
        workers = round_workers(process_rows)
        for row in store.rows():
            key = row_key(row)
            by_point.setdefault(key, []).append(round_process(row, index, workers.get(key, {})))
        for row in process_rows:
            wall = ProcessResult.from_row(row).wall_s
            if wall is not None:
                walls.setdefault(row_key(row), []).append(wall)
    return by_point, {key: statistics.median(values) for key, values in walls.items()}


def points_seconds(path: object) -> float:
    """The wall seconds of the processes of one round folder."""
    walls = [ProcessResult.from_row(row).wall_s for row in RunStore(path).process_rows()]  # type: ignore[arg-type]
    return sum(w for w in walls if w is not None)


def checks_seconds(path: object) -> float:
    """The wall seconds one round folder's run spent in correctness checks (meta.json's
    ``overhead.gates_s``; 0 where it checked nothing or does not say)."""
    try:
        overhead = RunStore(path).read_meta().get("overhead") or {}  # type: ignore[arg-type]
    except (RunStoreError, OSError):
        return 0.0
    seconds = overhead.get("gates_s") if isinstance(overhead, dict) else None
    return float(seconds) if isinstance(seconds, (int, float)) else 0.0


def _rank(point: OpenPoint, first: Collection[str]) -> tuple[bool, bool]:
    """Where ``point`` ranks before its cost: the changed code's points (``first``) first, and
    of those, the ones that look slower."""
    changed = _of(point, first)
    return (not changed, not (changed and point.slower))


def _of(point: OpenPoint, impls: Collection[str]) -> bool:
    """Whether ``point`` is of one of ``impls`` ("variant:impl")."""
    return _impl(point) in impls


def _impl(point: OpenPoint) -> str:
    """``point``'s impl, "variant:impl"."""
    named = dict(zip(KEY_COLUMNS, point.key, strict=False))
    return f"{named.get('variant')}:{named.get('impl')}"


def _on_cpu(key: tuple[str, ...]) -> bool:
    return key[KEY_COLUMNS.index("device")].split(":")[0] == "cpu"
