"""Axes × impls → points: each once, sizes growing, impls side by side at each size."""

from __future__ import annotations

from linbench.shape import Shape
from linbench.sweep.points import KEY_COLUMNS, expand_points
from linbench.sweep.request import SweepRequest
from linbench.sweep.spec import build_spec


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
    assert point.key == ("cosine", "chunked", "fwd", "True", "fp32", "cpu", "1", "8", "8", "64", "64", "8", "")
    assert len(point.key) == len(KEY_COLUMNS)


def test_dominance_is_along_every_axis() -> None:
    small, large = Shape(1, 8, 1024, 64, 64), Shape(1, 8, 2048, 64, 64)
    assert large.dominates(small) and small.dominates(small)
    assert not small.dominates(large)
    assert not Shape(1, 8, 4096, 32, 32).dominates(Shape(1, 8, 1024, 64, 64))
