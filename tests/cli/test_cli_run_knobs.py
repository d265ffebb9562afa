"""A kernel engineer's knobs end to end: --param, --threads, --warmup-s, --min-reps (run)
and --param, --threads (decode); each value lands in meta.json and the rows it affects."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from cli_helpers import Invoke, assert_usage_error

TINY = ("--seq", "64", "--heads", "2", "--dim", "16", "--budget-s", "0.05", "--device", "cpu")


def rows_and_meta(out: Path) -> tuple[list[dict[str, str]], dict[str, object]]:
    (folder,) = out.iterdir()
    with (folder / "results.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    return rows, json.loads((folder / "meta.json").read_text())


def test_knobs_reach_the_workers_the_rows_and_meta(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke(
        "run",
        *("--variant", "cosine:chunked", "--against", "softmax:sdpa", *TINY),
        *("--param", "cosine:chunked.chunk_size=16", "--param", "cosine.norm_const=0.3"),
        *("--param", "softmax:sdpa.backend=math", "--threads", "1", "--warmup-s", "0", "--min-reps", "4"),
        *("--out", tmp_path),
    )
    assert result.exit_code == 0, result.output
    rows, meta = rows_and_meta(tmp_path)
    by_impl = {row["impl"]: row for row in rows}
    assert by_impl["chunked"]["status"] == "ok" and by_impl["sdpa"]["status"] == "ok"
    assert by_impl["chunked"]["params"] == "chunk_size=16;norm_const=0.3"
    assert by_impl["sdpa"]["params"] == "backend=math"
    assert all(row["threads"] == "1" and int(row["samples"]) >= 4 for row in rows)
    assert meta["params"] == {
        "cosine:chunked": {"chunk_size": 16, "norm_const": 0.3},
        "softmax:sdpa": {"backend": "math"},
    }
    timing = meta["timing"]
    assert isinstance(timing, dict)
    assert (timing["threads"], timing["warmup_s"], timing["min_reps"]) == (1, 0.0, 4)


@pytest.mark.parametrize(
    ("param", "words"),
    [
        ("cosine.chunk_size=0", "parameter chunk_size must be a positive integer; got 0"),
        ("cosine.norm_const=nan", "parameter norm_const must be a finite number or a tensor; got nan"),
        ("cosine.seq_len=-5", "parameter seq_len must be a positive number; got -5"),
    ],
)
def test_a_param_value_the_parameter_does_not_take_is_refused_before_anything_runs(
    invoke: Invoke, tmp_path: Path, param: str, words: str
) -> None:
    """Each was measured, and ended as an error row (or a NaN mismatch), exit 1."""
    result = invoke("run", "--variant", "cosine:chunked", "--no-against", *TINY, "--param", param, "--out", tmp_path)
    assert result.exit_code == 2 and words in result.stderr
    assert not any(tmp_path.iterdir())


def test_without_knobs_the_columns_say_defaults(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke("run", "--variant", "cosine:chunked", "--no-against", *TINY, "--out", tmp_path)
    assert result.exit_code == 0, result.output
    (row,), meta = rows_and_meta(tmp_path)
    assert row["params"] == "" and int(row["threads"]) >= 1 and meta["params"] == {}


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (("--param", "cosine:nosuch.chunk_size=1"), ("--param", "no impl 'nosuch'")),
        (("--param", "cosine:chunked.nosuch=1"), ("cosine:chunked has no parameter 'nosuch'",)),
        (("--param", "cosine:chunked.chunk_size=big"), ("chunk_size takes a whole number",)),
        (("--param", "chunk_size=64"), ("TARGET.NAME=VALUE",)),
        (("--param", "linear.eps=1"), ("linear is not part of this run",)),
        (("--threads", "0"), ("threads",)),
        (("--min-reps", "none"), ("min_reps",)),
        (("--warmup-s", "-2"), ("warmup_s",)),
    ],
)
def test_bad_knobs_exit_2_with_one_line_and_no_folder(
    invoke: Invoke, tmp_path: Path, args: tuple[str, ...], fragments: tuple[str, ...]
) -> None:
    out = tmp_path / "out"
    result = invoke("run", "--variant", "cosine:chunked", "--no-against", *TINY, *args, "--out", out)
    assert_usage_error(result, *fragments)
    assert not out.exists()


def test_decode_takes_variant_parameters_and_threads(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke(
        "decode",
        *("--variant", "cosine:recurrent", "--no-against", "--context", "64", "--heads", "2", "--dim", "16"),
        *("--tokens", "4", "--device", "cpu", "--param", "cosine.norm_const=0.3", "--threads", "1"),
        *("--out", tmp_path),
    )
    assert result.exit_code == 0, result.output
    (row,), meta = rows_and_meta(tmp_path)
    assert row["status"] == "ok" and row["params"] == "norm_const=0.3" and row["threads"] == "1"
    assert meta["params"] == {"cosine:recurrent": {"norm_const": 0.3}}


def test_decode_refuses_an_impl_s_parameter(invoke: Invoke, tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ("--variant", "cosine", "--context", "64", "--device", "cpu", "--param", "cosine:chunked.chunk_size=8")
    assert_usage_error(invoke("decode", *args, "--out", out), "is an impl, not a decoder")
    assert not out.exists()
