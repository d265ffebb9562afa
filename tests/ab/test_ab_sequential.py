"""Which points the next round of an A/B measures (CPU, no rounds run): the open ones, judged
by the gate's rule for runs measured until decided, cheapest to decide first within the budget."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest
from result_rows import process_row, result_row

from linbench.ab import sequential
from linbench.ab.round_lines import deferred_line, open_lines
from linbench.ab.sequential import (
    OpenPoint,
    Scheduler,
    checks_seconds,
    choose,
    open_points,
    processes_per_round,
    projected_s,
    spare_round,
)
from linbench.gate.rule import TimeRule
from linbench.gate.verdict import ChangedCode
from linbench.results.protocol import ProcessProtocol
from linbench.results.record import row_key
from linbench.results.store import RunStore

RULE = TimeRule(protocol=ProcessProtocol.rounds(3, 100))


def _rounds_of(
    folder: Path,
    times: list[float],
    status: str = "ok",
    p20s: list[float] | None = None,
    cpu_times: list[float] | None = None,
    seq: int = 1024,
    paced: list[float] | None = None,
) -> list[Path]:
    paths = []
    for index, time_ms in enumerate(times):
        store = RunStore.create(folder / str(index), "round")
        row = result_row(seq, time_ms=time_ms) | {"device_name": "Test CPU", "samples": 10}
        if p20s is not None:
            row["time_ms_p20"] = p20s[index]
        if cpu_times is not None:  # one torch thread, its CPU time recorded
            row |= {"cpu_ms_p20": cpu_times[index], "threads": 1}
        store.append(row | {"status": status if index == len(times) - 1 else "ok"})
        if paced is not None:  # paced against a reference call: only the round's processes.csv has it
            store.append_process(
                process_row(seq, 0, time_ms) | {"paced_p20": paced[index], "pace_ms": 0.1, "pace_work": "matmul"}
            )
        store.write_meta({"status": "complete"})
        paths.append(store.path)
    return paths


def _open(base: list[Path], cur: list[Path]) -> list[OpenPoint]:
    return open_points({"baseline": base, "current": cur}, RULE)


def test_a_point_decided_either_way_stops_and_one_still_open_goes_on(tmp_path: Path) -> None:
    steady = _rounds_of(tmp_path / "steady", [10.0, 10.05, 9.98, 10.02, 10.01])
    slower = _rounds_of(tmp_path / "slower", [13.0, 13.05, 12.98, 13.02, 13.01])  # +30%, tight
    spread = _rounds_of(tmp_path / "spread", [10.0, 12.5, 9.0])
    assert _open(steady[:4], steady[:4]) == []  # cleared: a +30% change would not look like this
    (early,) = _open(steady[:4], slower[:4])  # 4 rounds cannot fail it: a spread from so few is unsure
    assert early.needed == 5
    assert _open(steady, slower) == []  # 5 can: a regression, decided
    (point,) = _open(steady[:3], spread)
    assert point.rounds == 3 and point.needed is not None and point.needed > 3


def test_fewer_rounds_than_judge_are_open_and_a_failed_point_is_not(tmp_path: Path) -> None:
    steady = _rounds_of(tmp_path / "steady", [10.0, 10.05, 9.98])
    assert len(_open(steady[:2], steady[:2])) == 1
    failed = _rounds_of(tmp_path / "failed", [10.0, 12.5, 9.0], status="mismatch")
    assert _open(steady, failed) == []  # broken whatever more rounds say


def test_rounds_are_judged_on_the_time_compare_judges(tmp_path: Path) -> None:
    # A busy CPU: medians on either mode of preemption, p20s within 1%; then one-thread CPU times.
    preempted = _rounds_of(tmp_path / "preempted", [1.85, 81.0, 40.0, 9.0], p20s=[1.80, 1.81, 1.805, 1.802])
    assert _open(preempted, preempted) == []
    walls = [19.25, 28.0, 24.0, 30.0]
    steady = _rounds_of(tmp_path / "cpu", walls, p20s=walls, cpu_times=[19.0, 19.1, 19.05, 19.02])
    assert _open(steady, steady) == []
    apart = _rounds_of(tmp_path / "apart", walls, p20s=walls, cpu_times=[19.0, 25.0, 16.0, 22.0])
    assert len(_open(steady, apart)) == 1
    # Those CPU times spread by a virtual core's phases, their paced figures steady: decided.
    paced = [190.0, 190.5, 189.8, 190.2]
    phased = _rounds_of(tmp_path / "phased", walls, p20s=walls, cpu_times=[19.0, 25.0, 16.0, 22.0], paced=paced)
    assert _open(_rounds_of(tmp_path / "paced", walls, p20s=walls, cpu_times=walls, paced=paced), phased) == []


def test_only_the_open_point_of_a_round_is_named(tmp_path: Path) -> None:
    paths = []
    for index, (steady, spread) in enumerate([(10.0, 10.0), (10.05, 12.5), (9.98, 9.0), (10.02, 11.0)]):
        store = RunStore.create(tmp_path / str(index), "round")
        store.append(result_row(1024, time_ms=steady) | {"device_name": "Test CPU", "samples": 10})
        store.append(result_row(2048, time_ms=spread) | {"device_name": "Test CPU", "samples": 10})
        store.write_meta({"status": "complete"})
        paths.append(store.path)
    assert Scheduler(RULE).next_points({"baseline": paths, "current": paths}) == {row_key(result_row(2048))}


def _point(name: str, rounds: int, needed: int | None, round_s: float) -> OpenPoint:
    return OpenPoint((name,), rounds, needed, round_s)


def test_the_cheapest_to_decide_go_first_and_what_the_budget_cannot_hold_is_left_out() -> None:
    cheap = _point("cheap", 3, 6, 0.5)  # 3 more rounds of 0.5 s
    dear = _point("dear", 3, 40, 2.0)  # 37 more of 2 s
    hopeless = _point("hopeless", 3, None, 0.1)  # no count of rounds decides it
    chosen, left = choose([dear, hopeless, cheap], overhead_s=4.0, remaining_s=30.0)
    assert chosen == [cheap] and left == [dear, hopeless]  # 3·4 + 1.5 s fits; 37·4 + 74 s does not
    chosen, left = choose([dear, cheap], overhead_s=4.0, remaining_s=None)
    assert chosen == [cheap, dear] and left == []


def test_the_budget_counts_what_the_job_has_spent_and_what_it_leaves_out_is_said(tmp_path: Path) -> None:
    steady = _rounds_of(tmp_path / "steady", [10.0, 10.05, 9.98])
    spread = _rounds_of(tmp_path / "spread", [10.0, 12.5, 9.0])
    now = [100.0]
    scheduler = Scheduler(RULE, budget_s=60.0, started=0.0, clock=lambda: now[0])
    scheduler.round_done([10.0, 10.0], [1.0, 1.0])
    assert scheduler.next_points({"baseline": steady, "current": spread}) == set()  # 100 s spent of 60
    (key,) = scheduler.left_out
    lines = open_lines(scheduler, set(), True, 60.0)
    assert "not yet decided" in lines[0] and "cannot be decided within --max-job-s 60" in lines[1]
    assert f"({scheduler.left_out[key]} rounds)" in lines[1]
    now[0] = 1.0
    assert len(scheduler.next_points({"baseline": steady, "current": spread})) == 1


def test_a_round_of_every_point_that_would_pass_the_budget_is_not_started() -> None:
    now = [0.0]
    scheduler = Scheduler(RULE, budget_s=100.0, started=0.0, clock=lambda: now[0])
    assert scheduler.round_fits()  # nothing measured yet: round 1 always runs
    scheduler.round_done([20.0, 20.0], [10.0, 10.0])  # a round of both sides: 40 s
    now[0] = 25.0
    assert scheduler.round_fits()  # 25 + 40 + 30 s to close: within 100
    now[0] = 40.0
    assert not scheduler.round_fits()
    assert Scheduler(RULE).round_fits()  # no budget


def test_round_1_s_checks_count_in_neither_a_round_of_every_point_nor_its_start_up() -> None:
    """No device: round 1 took 120 s on the two sides, 60 s of it checking (a torch.compile
    impl's first compile among the checks), 50 s its points' processes; 125 s are spent. The
    next round of every point runs no check: 60 s (10 s of it start-up) fit the 270 s where
    120 s would not."""
    now = [125.0]
    scheduler = Scheduler(RULE, budget_s=270.0, started=0.0, clock=lambda: now[0])
    scheduler.round_done([55.0, 65.0], [25.0, 25.0], [20.0, 40.0])
    assert scheduler.rounds_s == [60.0] and scheduler.overhead_s == 10.0
    assert scheduler.round_fits()  # 125 + 60 + 30 to close: within 270
    without = Scheduler(RULE, budget_s=270.0, started=0.0, clock=lambda: now[0])
    without.round_done([55.0, 65.0], [25.0, 25.0])  # the checks not known: counted as a round's cost
    assert not without.round_fits()


def test_a_round_folder_s_checks_are_read_from_its_meta(tmp_path: Path) -> None:
    """No device: the seconds the run's own ledger gave its correctness checks, 0 without one."""
    store = RunStore.create(tmp_path / "round", "round")
    assert checks_seconds(store.path) == 0.0
    store.update_meta({"overhead": {"gates_s": 21.5, "processes_s": 25.0}})
    assert checks_seconds(store.path) == 21.5


def _late_round(folder: Path, times: list[float]) -> Path:
    """A later round that measured length 1024 in one process per time, 0.25 s each."""
    store = RunStore.create(folder, "round")
    store.append(result_row(1024, time_ms=statistics.median(times)) | {"device_name": "Test CPU", "samples": 30})
    for index, time_ms in enumerate(times):
        store.append_process(process_row(1024, index, time_ms) | {"wall_s": 0.25})
    store.write_meta({"status": "complete"})
    return store.path


def test_a_round_of_several_processes_a_point_is_one_round_of_it(tmp_path: Path) -> None:
    spread = _rounds_of(tmp_path / "spread", [10.0, 12.0])
    late = _late_round(tmp_path / "late", [10.5, 11.0, 11.5])
    (early,) = _open(spread, spread)  # 2 rounds: too few to judge
    assert early.rounds == 2
    (after,) = _open([*spread, late], [*spread, late])  # 3 rounds, not 5 processes
    assert after.rounds == 3
    assert after.round_s == 0.5  # a process of both sides, not a round of three


def test_a_round_of_a_few_cheap_points_measures_each_several_times() -> None:
    few = [_point("a", 3, 13, 0.5), _point("b", 3, 9, 0.5)]  # 1 s a process of both, both sides
    assert processes_per_round(few, overhead_s=5.0) == 5  # as long as the start-up
    assert processes_per_round(few, overhead_s=100.0) == 8  # never past the most
    many = [_point(str(i), 3, 5, 0.6) for i in range(36)]  # a process of every point: 21.6 s
    assert processes_per_round(many, overhead_s=10.0) == 1
    # Each of its rounds costs its processes: 10 rounds, of 5 processes of both points.
    assert projected_s(few, 5.0) == 10 * 5.0 + 5 * (10 + 6) * 0.5
    assert projected_s(few, 5.0, several=False) == 10 * 5.0 + (10 + 6) * 0.5


def test_the_scheduler_says_how_many_processes_each_and_one_where_rounds_cannot(tmp_path: Path) -> None:
    steady = [*_rounds_of(tmp_path / "steady", [10.0, 10.05, 9.98]), _late_round(tmp_path / "s", [10.02])]
    spread = [*_rounds_of(tmp_path / "spread", [10.0, 12.5, 9.0]), _late_round(tmp_path / "o", [11.0])]
    scheduler = Scheduler(RULE)
    scheduler.round_done([5.0, 5.0], [0.25, 0.25])  # a round's start-up: 9.5 s of 10, a process 0.5 s
    assert len(scheduler.next_points({"baseline": steady, "current": spread})) == 1
    assert scheduler.per_round > 1
    assert f"{scheduler.per_round} processes each" in open_lines(scheduler, {scheduler.open_now[0].key}, True, None)[0]
    scheduler.several = False  # a baseline whose run takes no --processes
    scheduler.next_points({"baseline": steady, "current": spread})
    assert scheduler.per_round == 1


def test_the_time_left_goes_to_a_round_of_the_cheapest_where_none_fits_whole() -> None:
    cheap = _point("cheap", 4, 18, 0.5)  # 14 more rounds: more than the time left holds
    dear = _point("dear", 4, 18, 4.0)
    hopeless = _point("hopeless", 4, None, 0.1)
    assert choose([cheap, dear, hopeless], overhead_s=10.0, remaining_s=30.0)[0] == []  # 14 rounds do not fit
    assert spare_round([cheap, dear, hopeless], overhead_s=10.0, remaining_s=15.0) == [cheap]  # 10 s + 8 · 0.5 s
    assert spare_round([cheap, dear], overhead_s=10.0, remaining_s=30.0) == [cheap, dear]  # 10 s + 2 · 4.5 s
    assert spare_round([cheap, dear], overhead_s=10.0, remaining_s=5.0) == []  # not even a start-up


def test_the_scheduler_spends_the_time_left_and_says_so(tmp_path: Path) -> None:
    steady = [*_rounds_of(tmp_path / "steady", [10.0, 10.05, 9.98]), _late_round(tmp_path / "s", [10.02])]
    spread = [*_rounds_of(tmp_path / "spread", [10.0, 14.5, 8.0]), _late_round(tmp_path / "o", [12.0])]
    now = [0.0]
    scheduler = Scheduler(RULE, budget_s=55.0, started=0.0, clock=lambda: now[0])
    scheduler.round_done([5.0, 5.0], [0.25, 0.25])
    chosen = scheduler.next_points({"baseline": steady, "current": spread})
    assert scheduler.spare and len(chosen) == 1 and scheduler.left_out == {}
    assert "the time left" in open_lines(scheduler, chosen, True, 55.0)[0]
    now[0] = 30.0  # 25 s left less the 30 kept to close: nothing more
    assert scheduler.next_points({"baseline": steady, "current": spread}) == set()


def test_the_changed_code_s_open_points_go_first() -> None:
    changed = OpenPoint(row_key(result_row(1024, impl="kernel")), 3, 8, 0.5)  # 5 more rounds: 22.5 s
    cheap = OpenPoint(row_key(result_row(1024)), 3, 5, 0.5)  # 2 more: 9 s
    chosen, left = choose([cheap, changed], 4.0, 23.0, several=False, first={"cosine:kernel"})
    assert chosen == [changed] and left == [cheap]  # both would take 23.5 s
    chosen, _ = choose([cheap, changed], 4.0, 23.0, several=False)
    assert chosen == [cheap]  # without a change to rank by, the cheapest first
    assert spare_round([cheap, changed], 4.0, 4.7, several=False, first={"cosine:kernel"}) == [changed]
    assert spare_round([cheap, changed], 4.0, 4.7, several=False) == [cheap]


def test_a_changed_impl_s_open_point_gets_the_time_left_though_its_rounds_do_not_fit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cheap = OpenPoint(row_key(result_row(1024)), 4, 6, 0.5)  # 2 more rounds: fits
    changed = OpenPoint(row_key(result_row(1024, impl="kernel")), 4, 40, 0.5)  # 36 more: does not
    monkeypatch.setattr(sequential, "open_points", lambda folders, rule: [cheap, changed])
    scheduler = Scheduler(RULE, budget_s=60.0, started=0.0, clock=lambda: 0.0)
    scheduler.round_done([5.0, 5.0], [0.25, 0.25])
    assert scheduler.next_points({}) == {cheap.key} and set(scheduler.left_out) == {changed.key}
    scheduler.first = frozenset({"cosine:kernel"})  # the code changed was its impl's
    assert scheduler.next_points({}) == {cheap.key, changed.key}
    assert scheduler.spare and not scheduler.left_out
    assert "the changed impls' first" in open_lines(scheduler, {cheap.key, changed.key}, True, 60.0)[0]


def _round_one(folder: Path, walls: dict[int, float]) -> Path:
    """Round 1 of points at the lengths given, one process each, of the wall times given."""
    store = RunStore.create(folder, "round")
    for seq, wall in walls.items():
        store.append(result_row(seq) | {"device_name": "Test CPU", "samples": 30})
        store.append_process(process_row(seq, 0) | {"wall_s": wall})
    store.write_meta({"status": "complete"})
    return store.path


def test_a_point_too_dear_for_the_rounds_every_point_gets_is_named_after_round_1(tmp_path: Path) -> None:
    """A compiled impl's process (15 s a side) against the others' (0.4 s): its 3 rounds, both
    sides, would take 90 s, past a quarter of a 270 s budget; the others' 2.4 s would not."""
    walls = {256: 0.4, 512: 15.0}
    folders = {side: [_round_one(tmp_path / side, walls)] for side in ("baseline", "current")}
    dear = row_key(result_row(512))
    assert Scheduler(RULE, budget_s=270.0).outsized(folders) == {dear}
    assert Scheduler(RULE, budget_s=400.0).outsized(folders) == set()  # 90 s is under 100 s
    assert Scheduler(RULE).outsized(folders) == set()  # no budget: every point gets its rounds
    line = deferred_line({dear}, 3, 270.0)
    assert line.startswith("1 point(s) too dear for the rounds every point gets (3 rounds of them would take")
    assert "25% of --max-job-s 270): cosine:chunked fwd seq 512; later rounds measure them" in line


def test_the_changed_code_s_decidable_points_keep_their_rounds_before_the_time_left_is_spent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The changed code's cheap point (5 more rounds: fits) and its dear one (2 more rounds of
    30 s: does not): the time left goes to a round of the dear one only where the cheap one's
    rounds leave it, not ahead of them."""
    cheap = OpenPoint(row_key(result_row(256, impl="kernel")), 3, 8, 0.8)
    dear = OpenPoint(row_key(result_row(512, impl="kernel")), 1, 3, 30.0)
    monkeypatch.setattr(sequential, "open_points", lambda folders, rule: [cheap, dear])
    scheduler = Scheduler(RULE, budget_s=100.0, started=0.0, clock=lambda: 0.0, first=frozenset({"cosine:kernel"}))
    scheduler.round_done([2.0, 2.0], [0.5, 0.5])  # a round's start-up: 3 s
    # 70 s left: the cheap point's 5 rounds (5 start-ups of 3 s, 4 processes of 0.8 s a round)
    # take 31 s, leaving 39 s: room for a round of the dear one (3 s + 30 s), not for its rounds.
    assert scheduler.next_points({}) == {cheap.key, dear.key} and scheduler.spare
    scheduler.budget_s = 75.0  # 45 s left: the cheap point's 31 s leave 14 s, no room for 33 s
    # (before its rounds were kept first, the one round of both fitted the 45 s, and was taken)
    assert scheduler.next_points({}) == {cheap.key} and scheduler.spare
    assert scheduler.left_out == {dear.key: 3}


def test_a_point_whose_ratio_so_far_is_past_the_floor_looks_slower(tmp_path: Path) -> None:
    base = _rounds_of(tmp_path / "b", [10.0, 13.0, 8.0])
    slower = _open(base, _rounds_of(tmp_path / "s", [13.0, 17.0, 10.4]))  # 1.3x, too spread to decide
    level = _open(base, _rounds_of(tmp_path / "l", [10.2, 12.9, 8.1]))  # about 1.0x
    assert len(slower) == 1 and slower[0].slower
    assert len(level) == 1 and not level[0].slower


def test_the_changed_code_s_points_that_look_slower_go_first() -> None:
    """Two points of the changed impl, room for the rounds of one: the one that looks slower
    is taken, though the other would cost fewer rounds."""
    clears = OpenPoint(row_key(result_row(256, impl="kernel")), 3, 5, 0.5)  # 2 more rounds
    slower = OpenPoint(row_key(result_row(512, impl="kernel")), 3, 6, 0.5, slower=True)  # 3 more
    chosen, left = choose([clears, slower], 4.0, 14.0, several=False, first={"cosine:kernel"})
    assert chosen == [slower] and left == [clears]  # 3 · 4 + 1.5 s fits, both (3 · 4 + 2.5 s) do not
    chosen, _ = choose([clears, slower], 4.0, 14.0, several=False)
    assert chosen == [clears]  # without a change to rank by, the cheapest first
    unchanged = OpenPoint(row_key(result_row(512)), 3, 6, 0.5, slower=True)
    chosen, _ = choose([clears, unchanged], 4.0, 14.0, several=False, first={"cosine:kernel"})
    assert chosen == [clears]  # an unchanged point that looks slower has no such claim


def test_a_point_that_looks_slower_gets_the_time_left_though_no_count_of_rounds_would_decide_it() -> None:
    wild = OpenPoint(row_key(result_row(1024, impl="kernel")), 3, None, 0.5, slower=True)  # three rounds' spread
    hopeless = OpenPoint(row_key(result_row(2048, impl="kernel")), 3, None, 0.5)
    assert spare_round([hopeless, wild], 4.0, 10.0, several=False) == [wild]


def test_a_round_of_the_changed_code_s_points_that_look_slower_goes_ahead_of_the_kept_rounds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As a change to the module every gated form runs left it (2026-11-29): the changed impl's
    point 1.4x slower needs more rounds than the job holds, and the cheap ones clearing the
    other changed points' take the time left; a round of the slower one now goes first."""
    first = frozenset({"cosine:kernel", "cosine:chunked"})
    slower = OpenPoint(row_key(result_row(256, impl="kernel")), 3, 10, 0.5, slower=True)  # 7 more rounds
    clearing = [OpenPoint(row_key(result_row(seq)), 3, 5, 0.5) for seq in (256, 512, 1024)]  # 2 more each
    monkeypatch.setattr(sequential, "open_points", lambda folders, rule: [slower, *clearing])
    scheduler = Scheduler(RULE, budget_s=60.0, started=0.0, clock=lambda: 0.0, first=first)
    scheduler.round_done([2.0, 2.0], [0.5, 0.5])  # a round's start-up: 3 s
    # 30 s left: the slower point's 7 rounds with the others' do not fit, the others' 2 rounds do
    # (2 · 3 s + 2 · 1.5 s · 2 processes = 12 s), which left 18 s: room for the slower one's round
    # (3 s + 0.5 s · 6 processes), which now goes first.
    chosen = scheduler.next_points({})
    assert slower.key in chosen and {p.key for p in clearing} <= chosen and scheduler.spare
    scheduler.budget_s = 47.0  # 17 s left: a round of the slower one (6 s), then the others' rounds
    chosen = scheduler.next_points({})
    assert slower.key in chosen and scheduler.spare


def test_a_point_whose_code_is_the_same_on_both_sides_gets_no_more_rounds_and_is_named_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A change to the gated forms' shared function left 16 points of other families open
    beside the 30 changed ones (2026-11-29); scoped (no file every point runs changed), the
    other impls' points run the same code on both sides and get no rounds past the 3 every
    point gets, and the progress names them once; unscoped, they get rounds as before."""
    changed = OpenPoint(row_key(result_row(256, impl="kernel")), 3, 6, 0.5)
    same = [OpenPoint(row_key(result_row(seq)), 3, 6, 0.5) for seq in (256, 512)]
    monkeypatch.setattr(sequential, "open_points", lambda folders, rule: [changed, *same])
    first = frozenset({"cosine:kernel"})
    scoped = Scheduler(RULE, first=first, same_code=ChangedCode("base", tuple(first)).same_code)
    assert scoped.next_points({}) == {changed.key}
    said = open_lines(scoped, {changed.key}, True, None)
    assert said[0].startswith("2 point(s) not yet decided run the same code on both sides")
    assert said[1].startswith("1 point(s) not yet decided: the interval")
    scoped.next_points({})
    assert not any("same code" in line for line in open_lines(scoped, {changed.key}, True, None))
    assert Scheduler(RULE, first=first).next_points({}) == {changed.key, *(p.key for p in same)}
