"""Packs of variable-length sequences: the draws, the budget, a file's lengths. Pure Python (no device)."""

from __future__ import annotations

from pathlib import Path

import pytest

from linbench.sweep.lengths import PackError, draw_pack, file_pack, read_lengths


def test_a_lognormal_pack_fills_its_budget_exactly_and_the_same_every_time() -> None:
    pack = draw_pack("lognormal:mean=2k", 64 * 1024)
    assert pack.tokens == 64 * 1024 and min(pack.lengths) >= 1
    assert pack == draw_pack("lognormal:mean=2048,sigma=1,seed=0", 64 * 1024)
    assert pack.source == "lognormal:mean=2048,sigma=1,seed=0"
    assert draw_pack("lognormal:mean=2k,seed=1", 64 * 1024).lengths != pack.lengths


def test_a_lognormal_pack_averages_its_mean_over_many_draws() -> None:
    pack = draw_pack("lognormal:mean=512,sigma=0.5", 4 * 1024 * 1024)
    assert pack.tokens / pack.sequences == pytest.approx(512, rel=0.03)


def test_padding_waste_is_the_share_of_the_padded_batch_that_is_padding() -> None:
    pack = draw_pack("uniform:min=10,max=10", 100)
    assert pack.lengths == (10,) * 10 and pack.padding_waste == 0
    assert pack.offsets == tuple(range(0, 101, 10))


def test_a_file_s_lengths_repeat_and_the_last_is_cut(tmp_path: Path) -> None:
    path = tmp_path / "lengths.txt"
    path.write_text("3, 5  # a comment\n\n2\n")
    assert read_lengths(path) == (3, 5, 2)
    pack = file_pack(path, 12)
    assert pack.lengths == (3, 5, 2, 2) and pack.padding_waste == pytest.approx(1 - 12 / 20)
    assert pack.source.startswith("file:lengths.txt#")


@pytest.mark.parametrize("text", ["0", "-3", "1.5", "two"])
def test_a_length_that_is_not_a_positive_whole_number_is_refused(tmp_path: Path, text: str) -> None:
    path = tmp_path / "lengths.txt"
    path.write_text(f"4\n{text}\n")
    with pytest.raises(PackError, match="line 2"):
        read_lengths(path)


def test_a_budget_smaller_than_one_sequence_is_refused(tmp_path: Path) -> None:
    with pytest.raises(PackError, match="smaller than one sequence"):
        draw_pack("uniform:max=1k", 256)
    path = tmp_path / "lengths.txt"
    path.write_text("8 300\n")
    with pytest.raises(PackError, match="lists one of 300 tokens"):
        file_pack(path, 200)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # sigma=1e308 overflowed e^x into a traceback
        ("lognormal:mean=2k,sigma=1e308", r"sigma=1e\+308 is above 4"),
        # sigma=100 silently drew 8192 sequences of one token
        ("lognormal:mean=2k,sigma=100", "sigma=100 is above 4"),
        ("lognormal:mean=2k,sigma=4", "puts the median length at 0.687 tokens"),
    ],
)
def test_a_lognormal_no_pack_can_draw_is_refused_in_one_line(text: str, message: str) -> None:
    with pytest.raises(PackError, match=message):
        draw_pack(text, 8192)
