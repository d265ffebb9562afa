"""The repeated-process protocol (CPU, no device): when a point gets another process, when
the gate may judge and trust a side, and its record in meta.json read back."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from linbench.results.processes import ProcessResult
from linbench.results.protocol import (
    AB_ROUNDS,
    ENOUGH_SE,
    TRUST_PROCESSES,
    ProcessProtocol,
    ProtocolError,
    comparison_se,
    judged_processes,
    log_range,
)


def _process(ms: float) -> ProcessResult:
    return ProcessResult("ok", time_ms=ms)


def test_the_range_is_the_log_of_slowest_over_fastest() -> None:
    assert log_range([1.0, 1.5]) == pytest.approx(math.log(1.5)) and log_range([3.0]) == 0.0


def test_more_processes_when_too_few_or_when_they_disagree() -> None:
    quiet = [_process(1.0), _process(1.01), _process(1.0)]
    noisy = [_process(1.0), _process(1.3), _process(1.0)]
    assert ProcessProtocol(3, 20).needs_more(quiet[:2])
    assert not ProcessProtocol(3, 20).needs_more(quiet)
    assert ProcessProtocol(3, 20).needs_more(noisy)
    assert not ProcessProtocol(3, 3).needs_more(noisy)


def test_on_a_cpu_processes_extend_on_their_p20s_as_the_gate_judges_them() -> None:
    """Medians on two modes of a preempted machine, p20s together: a CPU point is settled."""
    preempted = [ProcessResult("ok", time_ms=ms, time_ms_p20=1.0) for ms in (1.0, 1.8, 1.1)]
    assert not ProcessProtocol(3, 20).needs_more(preempted, cpu=True)
    assert ProcessProtocol(3, 20).needs_more(preempted)  # a GPU's eager times: the medians
    apart = [ProcessResult("ok", time_ms=1.0, time_ms_p20=p20) for p20 in (1.0, 1.3, 1.0)]
    assert ProcessProtocol(3, 20).needs_more(apart, cpu=True)


def test_several_processes_extend_up_to_what_the_gate_trusts() -> None:
    assert (ProcessProtocol.of(None, None).wanted, ProcessProtocol.of(None, None).most) == (1, 1)
    assert ProcessProtocol.of(5, None).most == TRUST_PROCESSES
    assert ProcessProtocol.of(30, None).most == 30
    with pytest.raises(ValueError, match="--max-processes 3 is fewer than --processes 5"):
        ProcessProtocol.of(5, 3)


def test_processes_too_few_to_judge_extend_to_what_the_gate_judges_with_even_when_they_agree() -> None:
    """Two agreeing processes (or ab rounds, --rounds 2) cannot be judged (min_to_judge 3):
    where the most allows, the point gets a third rather than an unjudged verdict."""
    agree = [10.0, 10.01]
    protocol = ProcessProtocol.of(2, 20)
    assert protocol.min_to_judge == 3
    assert protocol.extends(2, lambda: agree)
    assert not protocol.extends(3, lambda: [*agree, 10.0])  # enough to judge, and they agree
    assert not ProcessProtocol.of(2, 2).extends(2, lambda: agree)  # no more than the most asked for


def _spread_by(mad: float, count: int) -> list[ProcessResult]:
    """``count`` processes whose log times lie evenly from -2·mad to 2·mad (a MAD near ``mad``)."""
    return [_process(math.exp(-2 * mad + 4 * mad * i / (count - 1))) for i in range(count)]


def _se(processes: list[ProcessResult]) -> float:
    return comparison_se([p.time_ms for p in processes if p.time_ms])


def test_the_standard_error_a_comparison_of_two_such_sides_would_have() -> None:
    times = [math.exp(x) for x in (-0.1, 0.1, -0.1, 0.1)]  # log MAD 0.1
    assert comparison_se(times) == pytest.approx(1.2533 * 1.4826 * 0.1 * math.sqrt(2 / 4))
    assert comparison_se([2.0]) == 0.0


def test_past_the_trusted_count_a_point_extends_only_while_its_standard_error_is_too_wide() -> None:
    """The gate suite asks for up to 100: a point that would judge within about 19% stops at
    20, one spread three times as widely goes on until it would, and none passes ``most``."""
    protocol = ProcessProtocol(5, 100)
    tight, wide = _spread_by(0.04, TRUST_PROCESSES), _spread_by(0.12, TRUST_PROCESSES)
    assert _se(tight) < ENOUGH_SE < _se(wide)
    assert not protocol.needs_more(tight) and protocol.needs_more(wide)
    assert protocol.needs_more(_spread_by(0.04, TRUST_PROCESSES - 1))  # below 20: the 2% rule alone
    enough = next(k for k in range(TRUST_PROCESSES, 100) if _se(_spread_by(0.12, k)) <= ENOUGH_SE)
    assert 40 < enough < 100
    assert protocol.needs_more(_spread_by(0.12, enough - 1)) and not protocol.needs_more(_spread_by(0.12, enough))
    assert protocol.needs_more(_spread_by(0.3, 99)) and not protocol.needs_more(_spread_by(0.3, 100))
    assert replace(protocol, enough_se=None).needs_more(tight)  # runs before the rule: to most


def test_a_side_is_judged_from_three_and_trusted_when_it_agrees_or_is_many() -> None:
    protocol = ProcessProtocol()
    assert not protocol.can_judge(2) and protocol.can_judge(3)
    spread = [1.0, 1.04, 1.08]  # spans 7.7%
    assert protocol.trusts_spread([1.0, 1.01, 1.0]) and not protocol.trusts_spread(spread)
    assert protocol.trusts_spread(spread * 7)  # 21 processes


def test_the_record_reads_back_as_written() -> None:
    protocol = ProcessProtocol(wanted=5, most=20, trust_processes=8, min_to_judge=2, seed=7)
    record = protocol.meta()
    assert record["name"] == "processes-v1" and record["seed"] == 7
    assert ProcessProtocol.from_meta(record) == protocol
    assert ProcessProtocol.from_meta(record | {"budget_s": 0.3}) == protocol  # the runner adds its budget


def test_an_ab_record_has_no_seed_and_reads_back() -> None:
    record = ProcessProtocol.rounds(4).meta()
    assert "seed" not in record and record["order"] == AB_ROUNDS
    assert (record["processes"], record["max_processes"]) == (4, 4)
    assert ProcessProtocol.from_meta(record) == ProcessProtocol.rounds(4)


def test_older_records_take_the_defaults() -> None:
    assert ProcessProtocol.from_meta(None) == ProcessProtocol(enough_se=None)  # extended to most
    older = ProcessProtocol.from_meta({"name": "processes-v1", "processes": 3, "source": AB_ROUNDS})
    assert (older.wanted, older.most, older.trust_processes, older.min_to_judge) == (3, 3, 20, 3)
    assert older.extend_above == 0.02 and older.order == AB_ROUNDS


@pytest.mark.parametrize(
    "record",
    [
        *({"min_to_judge": "3"}, {"trust_processes": -1}, {"extend_above": float("nan")}),
        *({"processes": True}, {"enough_se": "0.035"}),
    ],
)
def test_a_record_that_is_not_numbers_is_one_error(record: dict[str, object]) -> None:
    with pytest.raises(ProtocolError, match=r"meta\.json's timing_protocol has"):
        ProcessProtocol.from_meta(record)


def test_two_protocols_judge_together_by_the_stricter_numbers() -> None:
    lax = ProcessProtocol(extend_above=0.05, trust_processes=5, min_to_judge=2)
    both = lax.stricter(ProcessProtocol())
    assert (both.extend_above, both.trust_processes, both.min_to_judge) == (0.02, 20, 3)
    assert ProcessProtocol().stricter(lax) == both


def test_oversubscribed_processes_are_left_out_of_whether_a_point_needs_another() -> None:
    """Three clean processes that agree settle a point whatever the crowded ones took."""
    clean = [ProcessResult("ok", time_ms=19.2, time_ms_p20=19.25 + d) for d in (0.0, 0.01, 0.02)]
    crowded = [ProcessResult("ok", time_ms=30.0, time_ms_p20=28.0, oversubscribed=True)] * 2
    assert not ProcessProtocol(5, 20).needs_more([*clean, *crowded], cpu=True)
    assert ProcessProtocol(5, 20).needs_more([*clean[:2], *crowded, *crowded[:1]], cpu=True)  # 2 clean: all judged
    assert judged_processes([False, True, False, False]) == [True, False, True, True]
    assert judged_processes([True, True, False, False]) == [True, True, True, True]


def test_one_thread_processes_extend_on_their_cpu_time_with_none_left_out() -> None:
    # Preempted: p20s 19-30 ms; CPU times within 1%, oversubscribed ones among them.
    steady = [
        ProcessResult("ok", time_ms=ms, time_ms_p20=ms, cpu_ms_p20=cpu, threads=1, oversubscribed=ms > 25)
        for ms, cpu in ((19.2, 19.0), (28.0, 19.1), (19.3, 19.05), (29.8, 19.08), (24.0, 19.02))
    ]
    assert not ProcessProtocol(5, 20).needs_more(steady, cpu=True)
    assert ProcessProtocol(5, 20).needs_more(steady)  # a GPU's processes: no CPU time is judged
    apart = [*steady[:4], replace(steady[4], cpu_ms_p20=22.0)]
    assert ProcessProtocol(5, 20).needs_more(apart, cpu=True)
    pooled = [replace(p, threads=2) for p in steady]  # a spinning pool's CPU time is not its work
    assert ProcessProtocol(5, 20).needs_more(pooled, cpu=True)
