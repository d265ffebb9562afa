"""The range grammar of the sweep axes: every documented form, and every bad one."""

from __future__ import annotations

import pytest

from linbench.sweep.ranges import RangeError, parse_range


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1k..64k", [1024, 2048, 4096, 8192, 16384, 32768, 65536]),
        ("1k..8k:x2", [1024, 2048, 4096, 8192]),
        ("1k..27k:x3", [1024, 3072, 9216, 27648]),
        ("64..256:+64", [64, 128, 192, 256]),
        ("64..250:+64", [64, 128, 192]),
        ("512,1k,3000", [512, 1024, 3000]),
        ("3000,512,1k,512", [512, 1024, 3000]),
        ("4096", [4096]),
        ("1m", [1048576]),
        ("1.5k", [1536]),
        ("8k..8k", [8192]),
        ("256..1k,3000", [256, 512, 1024, 3000]),
        (" 1k .. 4k ", [1024, 2048, 4096]),
    ],
)
def test_good_ranges_expand_to_sorted_distinct_values(text: str, expected: list[int]) -> None:
    assert parse_range(text) == expected


def test_plain_integers_are_accepted() -> None:
    assert parse_range(64) == [64]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty range"),
        ("   ", "empty range"),
        ("64k..1k", "reversed"),
        ("abc", "not a number"),
        ("1q", "not a number"),
        ("0", "not a positive size"),
        ("-8", "not a positive size"),
        ("0..8", "not a positive size"),
        ("1.3", "not a whole number"),
        ("1k..", "needs a start and an end"),
        ("..4k", "needs a start and an end"),
        ("1k..8k:x1", "larger than x1"),
        ("1k..8k:x0.5", "larger than x1"),
        ("1k..8k:+0", r"arithmetic step '\+0' must be positive, as in \+64"),
        ("64..256:+-64", r"arithmetic step '\+-64' must be positive, as in \+64"),
        ("64..256:+1.5", r"arithmetic step '\+1.5' must be a whole number, as in \+64"),
        ("64..256:+abc", "step '\\+abc' has no valid number after '\\+'"),
        ("1k..8k:/2", "must be xFACTOR"),
        ("1k..8k:xq", "no valid number"),
        ("1,,2", "empty item"),
        ("1..1m:+1", "more than"),
    ],
)
def test_bad_ranges_raise_naming_the_problem(text: str, message: str) -> None:
    with pytest.raises(RangeError, match=message):
        parse_range(text)


def test_booleans_are_not_sizes() -> None:
    with pytest.raises(RangeError):
        parse_range(True)  # type: ignore[arg-type]
