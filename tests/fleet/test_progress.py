"""What is left of a shard, and on which card it may go on. CPU only."""

from __future__ import annotations

from pathlib import Path

from fleet_attempts import CARD_A, CARD_B, new_plan, write_attempt
from fleet_helpers import sweep_keys

from linbench.fleet.progress import chains, pending, read_attempts

KEYS = sweep_keys()


def test_pending_points_follow_the_card(tmp_path: Path) -> None:
    shards = new_plan(tmp_path, KEYS)
    s0 = shards[0]
    assert pending(tmp_path, s0, CARD_A) == (s0.keys, True)  # nothing yet: all of it
    write_attempt(tmp_path, s0, 1, CARD_A, s0.keys[:2], crashed=[s0.keys[2]])
    assert pending(tmp_path, s0, CARD_A) == (s0.keys[3:], False)  # the crashed point is done
    assert pending(tmp_path, s0, CARD_B) == (s0.keys, True)  # another card starts over
    write_attempt(tmp_path, s0, 2, CARD_A, s0.keys[3:], asked=s0.keys[3:])
    assert pending(tmp_path, s0, CARD_B) == ((), False)  # complete: nothing anywhere


def test_an_attempt_claimed_but_never_written_is_ignored(tmp_path: Path) -> None:
    (s0, *_) = new_plan(tmp_path, KEYS)
    (tmp_path / "shards" / "s000" / "attempt-1").mkdir(parents=True)
    write_attempt(tmp_path, s0, 2, CARD_A, s0.keys[:1])
    found = read_attempts(tmp_path, s0)
    assert [a.number for a in found] == [2]
    assert [[a.number for a in c] for c in chains(found, s0)] == [[2]]
