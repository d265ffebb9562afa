"""Odd sweep input that used to pass silently: ranges that miss their end, empty
list items, contradictory baselines, sizes no device can hold, and sweeps too long to start
unasked."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from linbench.dtypes import split_list
from linbench.runner.kinds import DECODE, RUN
from linbench.shape import Shape
from linbench.sweep.estimate import (
    RATE,
    SweepTooLargeError,
    call_seconds,
    check_fits,
    estimate_s,
    format_duration,
    input_bytes,
    too_large,
)
from linbench.sweep.points import Point
from linbench.sweep.ranges import RangeError, parse_range
from linbench.sweep.request import SweepRequest
from linbench.sweep.spec import SpecError, build_spec


@pytest.mark.parametrize(
    ("text", "advice"),
    [
        ("1k..3k", "ends at 2k, not 3k; write 1k..2k or 1k..3k:+1k"),
        ("3k..10k", "ends at 6k, not 10k; write 3k..6k or 3k,6k,10k"),
        ("1k..1500", "ends at 1k, not 1500; write 1k or 1k,1500"),
    ],
)
def test_powers_of_two_that_miss_the_end_are_refused_with_advice(text: str, advice: str) -> None:
    with pytest.raises(RangeError, match=re.escape(f"the range {text} in powers of two {advice}")):
        parse_range(text)


def test_powers_of_two_that_reach_the_end_and_explicit_steps_still_parse() -> None:
    assert parse_range("512..4k") == [512, 1024, 2048, 4096]
    assert parse_range("1k..3k:+1k") == [1024, 2048, 3072]
    assert parse_range("64..250:+64") == [64, 128, 192]  # an explicit step stops before the end


@pytest.mark.parametrize("value", ["cosine:chunked,,linear", "cosine,", ",cosine", ""])
def test_empty_list_items_are_refused_like_the_range_grammar_s(value: str) -> None:
    with pytest.raises(ValueError, match="empty"):
        split_list([value])
    with pytest.raises(RangeError, match="empty"):
        parse_range("1k,,2k")


@pytest.mark.parametrize("key", ["variant", "against", "mode", "dtype"])
def test_empty_items_in_a_setting_name_the_setting(key: str) -> None:
    with pytest.raises(SpecError, match=f"^{key}: .*empty item"):
        build_spec(SweepRequest.from_settings({key: ["fwd,,fp32"]}))


def test_no_against_with_against_is_a_contradiction(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="--no-against and --against contradict each other"):
        build_spec(SweepRequest(no_against=True, against=("softmax:sdpa",)))
    suite = tmp_path / "both.toml"
    suite.write_text('no_against = true\nagainst = ["softmax:sdpa"]\n')
    with pytest.raises(SpecError, match=r"both\.toml.*contradict"):
        build_spec(SweepRequest(suite=suite))


def test_an_against_flag_overrides_a_suite_s_no_against(tmp_path: Path) -> None:
    suite = tmp_path / "none.toml"
    suite.write_text("no_against = true\n")
    assert build_spec(SweepRequest(suite=suite)).baselines == ()
    assert build_spec(SweepRequest(suite=suite, against=("softmax:sdpa",))).baselines == ("softmax:sdpa",)


@pytest.mark.parametrize(("old", "new"), [("baseline", "against"), ("no_baseline", "no_against")])
def test_a_suite_s_old_key_is_refused_naming_the_new_one(tmp_path: Path, old: str, new: str) -> None:
    """ "baseline" is ab's git revision: a suite keeps one name for the impls measured beside."""
    suite = tmp_path / "old.toml"
    value = "true" if old.startswith("no_") else '["softmax:sdpa"]'
    suite.write_text(f"{old} = {value}\n")
    with pytest.raises(SpecError, match=rf"old\.toml.*key '{old}' is now '{new}'"):
        build_spec(SweepRequest(suite=suite))


def test_a_run_recorded_under_the_old_keys_resumes_with_its_impls(tmp_path: Path) -> None:
    """meta.json of a run made before the rename spells baseline/no_baseline; its spec reads them."""
    from linbench.sweep.spec import spec_from_settings

    recorded = {"variant": ["cosine:chunked"], "baseline": ["softmax:sdpa"], "seq": "64"}
    assert spec_from_settings(recorded, [], name="old", suite=None).baselines == ("softmax:sdpa",)
    alone = spec_from_settings({**recorded, "no_baseline": True}, [], name="old", suite=None)
    assert alone.baselines == ()


def point(seq: int, *, batch: int = 1, mode: str = "fwd", impl: str = "chunked") -> Point:
    return Point("cosine", impl, mode, True, "fp32", "cpu", Shape(batch, 8, seq, 64, 64))


def test_inputs_that_pass_the_device_s_memory_are_refused() -> None:
    assert input_bytes(point(1024)) == 8 * 1024 * (2 * 64 + 64) * 4
    check_fits([point(1024)], 16 << 30, RUN)
    with pytest.raises(SweepTooLargeError, match=r"S1048576.*needs 6.0 GiB for its inputs.*has 1.0 GiB"):
        check_fits([point(1024), point(1 << 20)], 1 << 30, RUN)
    with pytest.raises(SweepTooLargeError, match=r"more elements than a tensor can index.*lower --seq"):
        check_fits([point(99999999999999999999)], 1 << 40, RUN)


def test_decode_counts_the_context_only_for_decoders_that_keep_it() -> None:
    check_fits([point(1 << 24, mode="decode", impl="recurrent")], 1 << 30, DECODE)  # a fixed state
    cache = Point("softmax", "kvcache", "decode", True, "fp32", "cpu", Shape(1, 8, 1 << 24, 64, 64))
    with pytest.raises(SweepTooLargeError, match=r"softmax:kvcache .* keeps 64\.0 GiB of keys and values.*--context"):
        check_fits([cache], 1 << 30, DECODE)


class Policy:
    """A CPU timing policy: 0.2 s of warm-up, a budget of 1 s, 3 repetitions at least."""

    warmup_s = 0.2
    warmup_calls = 0

    def predicted_s(self, call_s: float) -> float:
        return call_s + max(0.2 - call_s, 0.0) + max(3 * call_s, min(1.0, 100 * call_s))


class Calls:
    """A kind of point whose every call takes ``flops`` (the model's other questions unasked)."""

    lower = "--seq"

    def __init__(self, flops: float, calls_again: bool = False) -> None:
        self.flops = flops
        self.calls_again = calls_again  # a profiled call in a CPU point's first process

    def held_bytes(self, point: Point) -> int:
        return input_bytes(point)

    def refusal(self, point: Point, held: str, device: str) -> str:
        return "too large"

    def call_s(self, point: Point) -> float:
        return call_seconds(point, self.flops)

    def setup_s(self, point: Point) -> float:
        return 0.0


def test_the_estimate_grows_with_the_work_and_stops_at_the_timeout() -> None:
    small = [point(1024)]
    assert 0.6 < estimate_s(small, Policy(), 120, Calls(1e6)) < 1.5  # the overhead and the warm-up
    heavy = [point(s) for s in (1024, 2048, 4096)]
    # 500 s a call: the first times out, the runner skips the rest.
    assert estimate_s(heavy, Policy(), 120, Calls(1e13)) == pytest.approx(120 + 0.6)


def test_each_process_is_counted_and_the_profiled_call_once_a_point() -> None:
    # 1e10 FLOPs: a 0.5 s call, longer than the 0.2 s warm-up, so no warm-up call takes the
    # profiled call in.
    one = estimate_s([point(1024)], Policy(), 120, Calls(1e10))
    profiled = estimate_s([point(1024)], Policy(), 120, Calls(1e10, calls_again=True))
    assert profiled - one == pytest.approx(1e10 / RATE["cpu"])  # one more call of the model's
    assert estimate_s([point(1024)], Policy(), 120, Calls(1e10), processes=20) == pytest.approx(20 * one)


def test_a_short_points_profiled_call_is_one_of_its_warm_up_calls() -> None:
    # 1e9 FLOPs: a 0.05 s call, then 0.15 s of warm-up that the profiled call is part of.
    one = estimate_s([point(1024)], Policy(), 120, Calls(1e9))
    assert estimate_s([point(1024)], Policy(), 120, Calls(1e9, calls_again=True)) == pytest.approx(one)


def test_sweeps_past_2000_points_or_2_hours_need_yes() -> None:
    assert too_large(2000, 7200) is None
    assert "2001 points (more than 2000)" in str(too_large(2001, 60))
    assert "about 3.0 h by a rough estimate (more than 2 h)" in str(too_large(10, 3 * 3600))
    assert [format_duration(s) for s in (45, 240, 3 * 3600, 30 * 86400)] == ["45 s", "4 min", "3.0 h", "30 days"]
