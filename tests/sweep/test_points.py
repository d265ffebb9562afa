"""Axes × impls → points: each once, sizes growing, impls side by side at each size."""

from __future__ import annotations

import pytest

from linbench.shape import Shape
from linbench.sweep.points import KEY_COLUMNS, expand_points
from linbench.sweep.request import SweepRequest
from linbench.sweep.spec import build_spec
from linbench.sweep.values import SpecError


def test_points_grow_and_put_impls_side_by_side() -> None:
    spec = build_spec(SweepRequest(seq="1k,256", modes=("fwd", "fwdbwd")))
    points = expand_points(spec.blocks, [("cosine", "chunked"), ("softmax", "sdpa")], "cpu")
    assert [(p.shape.seq, p.mode, p.impl) for p in points] == [
        (256, "fwd", "chunked"),
        (256, "fwd", "sdpa"),
        (256, "fwdbwd", "chunked"),
        (256, "fwdbwd", "sdpa"),
        (1024, "fwd", "chunked"),
        (1024, "fwd", "sdpa"),
        (1024, "fwdbwd", "chunked"),
        (1024, "fwdbwd", "sdpa"),
    ]


def test_overlapping_tables_do_not_repeat_points(tmp_path) -> None:
    suite = tmp_path / "s.toml"
    suite.write_text("[[sweep]]\nseq = '1k,2k'\n[[sweep]]\nseq = '2k,4k'\n")
    points = expand_points(build_spec(SweepRequest(suite=suite)).blocks, [("cosine", "chunked")], "cpu")
    assert [p.shape.seq for p in points] == [1024, 2048, 4096]


def test_key_matches_the_csv_columns() -> None:
    (point,) = expand_points(build_spec(SweepRequest(seq=8)).blocks, [("cosine", "chunked")], "cpu")
    assert point.key == (
        "cosine",
        "chunked",
        "fwd",
        "True",
        "fp32",
        "cpu",
        "1",
        "8",
        "8",
        "64",
        "64",
        "8",
        "",
        "8",
        "",
        "",
        "",
    )
    assert len(point.key) == len(KEY_COLUMNS)


def test_dominance_is_along_every_axis() -> None:
    small, large = Shape(1, 8, 1024, 64, 64), Shape(1, 8, 2048, 64, 64)
    assert large.dominates(small) and small.dominates(small)
    assert not small.dominates(large)
    assert not Shape(1, 8, 4096, 32, 32).dominates(Shape(1, 8, 1024, 64, 64))


def test_kv_heads_give_a_point_per_count_at_each_head_count() -> None:
    spec = build_spec(SweepRequest(seq=64, heads="4,8", kv_heads="1,4"))
    points = expand_points(spec.blocks, [("cosine", "chunked")], "cpu")
    assert sorted((p.shape.heads, p.shape.kv_heads) for p in points) == [(4, 1), (4, 4), (8, 1), (8, 4)]
    assert {p.shape.label for p in points if p.shape.grouped} == {
        "B1-H4-KV1-S64-Dk64-Dv64",
        "B1-H8-KV1-S64-Dk64-Dv64",
        "B1-H8-KV4-S64-Dk64-Dv64",
    }


def test_without_kv_heads_every_head_has_its_own() -> None:
    (point,) = expand_points(build_spec(SweepRequest(seq=64, heads=6)).blocks, [("cosine", "chunked")], "cpu")
    assert point.shape.kv_heads == 6 and not point.shape.grouped


def test_chunk_sizes_reach_only_the_impls_that_take_one() -> None:
    spec = build_spec(SweepRequest(seq=64, chunk="32,64"))
    targets = [("cosine", "chunked"), ("cosine", "recurrent")]
    points = expand_points(spec.blocks, targets, "cpu", chunked={("cosine", "chunked")})
    assert [(p.impl, p.chunk) for p in points] == [("chunked", 32), ("chunked", 64), ("recurrent", None)]
    assert points[0].as_row()["chunk"] == 32 and points[2].as_row()["chunk"] is None
    assert points[0].key[-6:-3] == ("8", "32", "8") and points[2].key[-6:-3] == ("8", "", "8")


def test_v_heads_give_a_point_per_count_and_refuse_what_does_not_fit() -> None:
    """GVA: each value head count a multiple of every head count; not with --kv-heads."""
    spec = build_spec(SweepRequest(seq=64, heads="2,4", v_heads="4,8"))
    points = expand_points(spec.blocks, [("kda", "chunked")], "cpu")
    assert sorted((p.shape.heads, p.shape.v_heads) for p in points) == [(2, 4), (2, 8), (4, 4), (4, 8)]
    assert {p.shape.label for p in points if p.shape.v_heads == 8 and p.shape.heads == 2} == {"B1-H2-HV8-S64-Dk64-Dv64"}
    with pytest.raises(SpecError, match="v_heads: 4 is not a multiple of heads 8"):
        build_spec(SweepRequest(seq=64, heads="8", v_heads="4"))
    with pytest.raises(SpecError, match="do not combine"):
        build_spec(SweepRequest(seq=64, heads="4", kv_heads="2", v_heads="8"))
    with pytest.raises(ValueError, match="do not combine"):
        Shape(1, 4, 8, 8, 8, kv_heads=2, v_heads=8)
