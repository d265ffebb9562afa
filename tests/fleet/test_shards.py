"""Shards by scenario, their order, and --shard K/N, as pure functions of a list of point
keys. CPU only."""

from __future__ import annotations

import pytest
from fleet_helpers import sweep_keys

from linbench.fleet.errors import ShardSpecError
from linbench.fleet.shards import (
    Shard,
    longest_first,
    make_shards,
    parse_shard_spec,
    partition,
    plan_hash,
    scenario_of,
    select_part,
)
from linbench.results.schema import KEY_COLUMNS

KEYS = sweep_keys()  # 2 dtypes x 2 head counts = 4 scenarios of 2 impls x 3 lengths


def column(key: tuple[str, ...], name: str) -> str:
    return key[KEY_COLUMNS.index(name)]


def test_a_shard_is_one_scenario_all_impls_and_lengths() -> None:
    shards = make_shards(KEYS)
    assert len(shards) == 4
    for shard in shards:
        assert len(shard.points) == 6
        assert {column(k, "impl") for k in shard.keys} == {"chunked", "kernel"}
        assert {column(k, "seq") for k in shard.keys} == {"128", "256", "512"}
        assert len({(column(k, "dtype"), column(k, "heads")) for k in shard.keys}) == 1
    assert sorted(k for s in shards for k in s.keys) == sorted(KEYS)  # every point once


def test_shards_keep_plan_order_and_are_numbered_by_first_point() -> None:
    shards = make_shards(KEYS)
    assert [s.id for s in shards] == ["s000", "s001", "s002", "s003"]
    for shard in shards:
        indices = [i for i, _ in shard.points]
        assert indices == sorted(indices)
        assert all(KEYS[i] == key for i, key in shard.points)
    assert dict(shards[0].scenario)["dtype"] == "fp32" and dict(shards[0].scenario)["heads"] == "4"


def test_finer_splits_and_other_axes() -> None:
    assert len(make_shards(KEYS, split="series")) == 8
    assert len(make_shards(KEYS, split="point")) == len(KEYS)
    assert len(make_shards(KEYS, along=("seq", "heads"))) == 2  # a heads sweep stays on one card too


def test_a_token_budget_sweep_keeps_its_curve_in_one_shard() -> None:
    # run --tokens: batch·seq fixed, so the batch shrinks as the length grows.
    keys = [
        (
            "cosine",
            "chunked",
            "fwd",
            "True",
            "fp32",
            "cuda",
            str(4096 // s),
            "8",
            str(s),
            "64",
            "64",
            "8",
            "",
            "8",
            "",
            "",
            "",
        )
        for s in (256, 512, 1024)
    ]
    assert len(make_shards(keys)) == 3
    (shard,) = make_shards(keys, fixed_tokens=True)
    assert dict(shard.scenario)["tokens"] == "4096"
    assert dict(scenario_of(keys[0], fixed_tokens=True)).get("batch") is None


def test_a_point_planned_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="twice"):
        make_shards([KEYS[0], KEYS[0]])


def test_longest_first_and_parts_of_nearly_equal_cost() -> None:
    cost = {k: (4.0 if column(k, "dtype") == "fp32" else 1.0) * int(column(k, "seq")) for k in KEYS}
    shards = make_shards(KEYS, cost=cost.__getitem__)
    order = longest_first(shards)
    assert [s.cost for s in order] == sorted((s.cost for s in shards), reverse=True)
    parts = partition(shards, 2)
    assert sorted(s.id for p in parts for s in p) == [s.id for s in shards]  # each shard in one part
    loads = [sum(s.cost for s in p) for p in parts]
    assert loads == [sum(cost.values()) / 2] * 2  # two costly fp32 shards split, one each


def test_parts_are_the_same_for_every_launcher_that_computes_them() -> None:
    shards = make_shards(KEYS)
    first = [[s.id for s in select_part(shards, f"{k}/3")] for k in range(3)]
    again = [[s.id for s in select_part(make_shards(list(KEYS)), f"{k}/3")] for k in range(3)]
    assert first == again
    assert sorted(i for part in first for i in part) == [s.id for s in shards]
    assert select_part(shards, "5/8") == []  # more parts than shards: the last ones are empty


@pytest.mark.parametrize("spec", ["3", "a/b", "8/8", "-1/4", "1/0", "1/2/3"])
def test_bad_shard_specs_are_one_line_errors(spec: str) -> None:
    with pytest.raises(ShardSpecError) as caught:
        parse_shard_spec(spec)
    assert "--shard" in str(caught.value) and "\n" not in str(caught.value)


def test_shard_spec_counts_from_zero() -> None:
    assert parse_shard_spec("0/8") == (0, 8)
    assert parse_shard_spec(" 7/8 ") == (7, 8)


def test_plan_hash_and_json_round_trip() -> None:
    shards = make_shards(KEYS)
    assert plan_hash(shards) == plan_hash(make_shards(list(KEYS)))
    assert plan_hash(shards) != plan_hash(make_shards(KEYS[:-1]))
    assert tuple(Shard.from_json(s.as_json()) for s in shards) == shards
