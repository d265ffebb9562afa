"""Sizes both ways (1k is 1024, 1024 prints as 1k), on the CPU."""

from __future__ import annotations

from linbench.units import format_size, parse_size


def test_sizes_print_back_in_short_form() -> None:
    assert [format_size(v) for v in (1024, 65536, 3000, 1048576, 1536)] == ["1k", "64k", "3000", "1m", "1536"]
    assert parse_size(format_size(65536)) == 65536


def test_long_whole_numbers_keep_every_digit() -> None:
    assert parse_size("99999999999999999999") == 99999999999999999999
