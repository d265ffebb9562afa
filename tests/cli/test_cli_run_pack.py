"""``linbench run --pack`` and ``--lengths-file``: a pack of variable-length sequences run
packed and padded, its rows, and the bad input refused before any folder. CPU."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from cli_helpers import Invoke, assert_usage_error

TINY = ("--no-against", "--heads", "2", "--dim", "8", "--budget-s", "0.05", "--warmup-s", "0", "--device", "cpu")


def read_rows(out: Path) -> list[dict[str, str]]:
    (folder,) = out.iterdir()
    with (folder / "results.csv").open() as handle:
        return list(csv.DictReader(handle))


def test_a_lengths_file_runs_packed_and_padded_with_the_pack_s_columns(invoke: Invoke, tmp_path: Path) -> None:
    lengths = tmp_path / "lengths.txt"
    lengths.write_text("# one short, one long\n1, 7\n100 513\n")
    out = tmp_path / "out"
    args = ("run", "--variant", "cosine:chunked", *TINY, "--lengths-file", lengths, "--tokens", "621", "--out", out)
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    rows = {row["packing"]: row for row in read_rows(out)}
    assert set(rows) == {"packed", "padded"}
    assert (rows["packed"]["batch"], rows["packed"]["seq"]) == ("1", "621")
    assert (rows["padded"]["batch"], rows["padded"]["seq"]) == ("4", "513")
    assert float(rows["packed"]["padding_waste"]) == 0
    assert float(rows["padded"]["padding_waste"]) == pytest.approx(1 - 621 / (4 * 513), rel=1e-5)
    for row in rows.values():
        assert row["status"] == "ok", row["error"]
        assert row["sequences"] == "4" and row["pack"].startswith("file:lengths.txt#") and row["pack"].endswith("@621")
        # Effective throughput: the pack's real tokens, whichever way it ran.
        assert float(row["tokens_per_s"]) == pytest.approx(621 / (float(row["time_ms"]) / 1e3), rel=1e-3)
    # The useful FLOPs are the same both ways: the padding is not work.
    assert rows["packed"]["flops"] == rows["padded"]["flops"]


def test_an_impl_without_a_packed_form_runs_padded_only(invoke: Invoke, tmp_path: Path) -> None:
    out = tmp_path / "out"
    pack = ("--pack", "uniform:min=8,max=32", "--tokens", "64")
    result = invoke("run", "--variant", "heinsen:chunked", *TINY, *pack, "--out", out, "--dry-run")
    assert result.exit_code == 0, result.output
    assert "points: 1 of 1" in result.output
    assert "heinsen:chunked runs no causal pack packed" in result.output
    assert "pack: uniform:min=8,max=32,seed=0@64" in result.output


@pytest.mark.parametrize(
    ("lines", "fragments"),
    [
        ("100\n0\n", ("line 2", "'0' is not a positive length")),
        ("100 -5\n", ("line 1", "'-5' is not a positive length")),
        ("# nothing\n", ("lists no lengths",)),
        ("100\n4k\n", ("smaller than one sequence", "4096", "raise --tokens")),
    ],
)
def test_a_bad_lengths_file_exits_2_before_any_folder(
    invoke: Invoke, tmp_path: Path, lines: str, fragments: tuple[str, ...]
) -> None:
    lengths = tmp_path / "lengths.txt"
    lengths.write_text(lines)
    out = tmp_path / "out"
    args = ("--variant", "cosine:chunked", *TINY, "--lengths-file", lengths, "--tokens", "1k", "--out", out)
    assert_usage_error(invoke("run", *args), *fragments)
    assert not out.exists()


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (("--pack", "lognormal:mean=2k", "--tokens", "1k"), ("smaller than one sequence", "raise --tokens")),
        (("--pack", "zipf:a=2", "--tokens", "1k"), ("unknown length distribution 'zipf'", "lognormal:mean=N")),
        (("--pack", "lognormal:mean=512,sigma=-1", "--tokens", "4k"), ("sigma='-1'",)),
        (("--pack", "lognormal:sigma=1", "--tokens", "4k"), ("give one of mean=N or median=N",)),
        (
            (
                "--pack",
                "uniform:max=64",
            ),
            ("give --tokens",),
        ),
        (("--pack", "uniform:max=64", "--tokens", "1k", "--packing", "sorted"), ("'sorted'", "packed, padded")),
        (("--pack", "uniform:max=64", "--lengths-file", "x.txt", "--tokens", "1k"), ("give one",)),
        (("--lengths-file", "missing.txt", "--tokens", "1k"), ("cannot be read",)),
        (("--packing", "padded", "--seq", "64"), ("--packing says how a pack runs", "--pack DIST")),  # was ignored
    ],
)
def test_a_bad_pack_exits_2_before_any_folder(
    invoke: Invoke, tmp_path: Path, args: tuple[str, ...], fragments: tuple[str, ...]
) -> None:
    out = tmp_path / "out"
    assert_usage_error(invoke("run", "--variant", "cosine:chunked", *TINY, *args, "--out", out), *fragments)
    assert not out.exists()


def test_a_gated_variant_runs_its_forms_packed_and_padded(invoke: Invoke, tmp_path: Path) -> None:
    """Its gates and β travel with the pack: every PyTorch form runs both ways, against softmax."""
    out = tmp_path / "out"
    args = ("--heads", "2", "--dim", "8", "--budget-s", "0.02", "--warmup-s", "0", "--device", "cpu")
    pack = ("--lengths-file", tmp_path / "lengths.txt", "--tokens", "40")
    (tmp_path / "lengths.txt").write_text("5 17 3 15\n")
    result = invoke("run", "--variant", "gated-deltanet", "--against", "softmax:naive", *args, *pack, "--out", out)
    assert result.exit_code == 0, result.output
    assert "(4 impls)" in result.output  # three gated forms and the baseline
    ran = {(row["impl"], row["packing"]): row for row in read_rows(out) if row["variant"] == "gated-deltanet"}
    assert set(ran) == {(form, way) for form in ("chunked", "quadratic", "recurrent") for way in ("packed", "padded")}
    for row in ran.values():
        assert row["status"] == "ok", row["error"]


@pytest.mark.parametrize("baseline", [("--no-against",), ("--against", "softmax:naive"), ()])
@pytest.mark.parametrize("dry_run", [(), ("--dry-run",)])
def test_a_variant_with_no_point_left_is_refused_whatever_the_baseline(
    invoke: Invoke, tmp_path: Path, baseline: tuple[str, ...], dry_run: tuple[str, ...]
) -> None:
    """heinsen has no packed form: asked to run packed only, it has nothing to run, and the
    run must not measure its baseline alone."""
    out = tmp_path / "out"
    args = ("--heads", "2", "--dim", "8", "--device", "cpu", *baseline, *dry_run)
    pack = ("--pack", "uniform:min=8,max=32", "--tokens", "64", "--packing", "packed")
    result = invoke("run", "--variant", "heinsen", *args, *pack, "--out", out)
    assert_usage_error(result, "nothing to run", "heinsen:chunked runs no causal pack packed")
    assert not out.exists()


def test_the_start_line_counts_the_impls_that_will_run(invoke: Invoke, tmp_path: Path) -> None:
    """heinsen:chunked has no packed form: it is left out with a note, and not counted."""
    out = tmp_path / "out"
    pack = ("--pack", "uniform:min=8,max=32", "--tokens", "64", "--packing", "packed")
    result = invoke("run", "--variant", "cosine:chunked,heinsen:chunked", *TINY, *pack, "--out", out)
    assert result.exit_code == 0, result.output
    assert "1 of 1 points to run (1 impl)" in result.output
    assert "heinsen:chunked runs no causal pack packed" in result.output
