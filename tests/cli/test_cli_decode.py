"""``linbench decode`` end to end: a tiny real run, bad input, and resume. CPU only (each run says --device cpu)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import torch
from cli_helpers import Invoke, assert_usage_error

from linbench.results.schema import RESULT_COLUMNS

CPU = ("--device", "cpu")
TINY = ("--context", "64,128", "--heads", "2", "--dim", "16", "--tokens", "4", *CPU)


def only_run(out: Path) -> Path:
    (folder,) = out.iterdir()
    return folder


def read_rows(folder: Path) -> list[dict[str, str]]:
    with (folder / "results.csv").open() as handle:
        return list(csv.DictReader(handle))


def test_a_tiny_decode_run_writes_the_decode_columns(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke("decode", "--variant", "cosine", *TINY, "--out", tmp_path)
    assert result.exit_code == 0, result.output
    folder = only_run(tmp_path)
    assert folder.name.endswith("-cosine")
    rows = read_rows(folder)
    assert tuple(rows[0]) == RESULT_COLUMNS
    assert [(r["variant"], r["impl"], r["context"], r["status"]) for r in rows] == [
        ("cosine", "recurrent", "64", "ok"),
        ("softmax", "kvcache", "64", "ok"),
        ("softmax", "recompute", "64", "ok"),
        ("cosine", "recurrent", "128", "ok"),
        ("softmax", "kvcache", "128", "ok"),
        ("softmax", "recompute", "128", "ok"),
    ]
    for row in rows:
        assert row["mode"] == "decode" and row["seq"] == row["context"]
        assert float(row["time_per_token_ms"]) == float(row["time_ms"]) > 0
        assert int(row["state_bytes"]) > 0 and int(row["samples"]) == 4
    with (folder / "samples.csv").open() as handle:
        assert len(list(csv.DictReader(handle))) == 4 * len(rows)
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["sweep"]["command"] == "decode" and meta["sweep"]["settings"]["tokens"] == "4"
    assert meta["sweep"]["baselines"] == ["softmax:kvcache", "softmax:recompute"]
    assert meta["timing"]["max_reps"] == 4 and meta["status"] == "complete"
    assert "context" in result.stdout and "time/token" in result.stdout and "6 ok" in result.stdout
    report = json.loads(invoke("report", folder, "--json").stdout)
    state = {f["impl"]: f["exponent"] for f in report["fits"] if f["metric"] == "state"}
    assert state["recurrent"] == 0.0 and 0.9 < state["kvcache"] < 1.0  # the cache holds 64+6 and 128+6 tokens
    plotted = invoke("plot", folder)
    assert plotted.exit_code == 0 and (folder / "plots" / "decode-vs-context_fp32_decode_B1_H2_D16.png").is_file()


def test_resume_finishes_a_decode_run_and_run_refuses_it(invoke: Invoke, tmp_path: Path) -> None:
    args = ("--variant", "cosine:recurrent", "--no-against", *TINY, "--out", tmp_path, "-q")
    assert invoke("decode", *args).exit_code == 0
    folder = only_run(tmp_path)
    first, _ = read_rows(folder)  # drop the second row, as a kill before it was written would
    with (folder / "results.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, RESULT_COLUMNS)
        writer.writeheader()
        writer.writerow(first)
    resumed = invoke("decode", "--resume", folder, "-q")
    assert resumed.exit_code == 0, resumed.output
    assert [r["context"] for r in read_rows(folder)] == ["64", "128"]
    assert_usage_error(invoke("run", "--resume", folder), "made by linbench decode", "linbench decode --resume")


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (("--variant", "nope"), ("unknown variant 'nope'",)),
        (("--variant", "cosine:chunked"), ("cosine:chunked is an impl, not a decoder", "recurrent")),
        (("--variant", "cosine:kvcache"), ("cosine:kvcache", "decoders of cosine: recurrent")),
        (("--against", "softmax:sdpa"), ("softmax:sdpa is an impl, not a decoder", "kvcache, recompute")),
        (("--context", "0"), ("context", "not a positive size")),
        (("--context", "1k..64"), ("context", "reversed")),
        (("--context", "1k..2k:x1"), ("context", "larger than x1")),
        (("--tokens", "0"), ("tokens", "positive")),
        (("--dtype", "fp8"), ("fp8",)),
        (("--suite", "missing.toml"), ("missing.toml", "does not exist")),
        (("--resume", "."), ("not a linbench run folder",)),
        (("--resume", ".", "--out", "elsewhere"), ("--resume finishes the run in '.', not under --out", "drop --out")),
    ],
)
def test_bad_input_exits_2_with_one_line_and_no_folder(
    invoke: Invoke, tmp_path: Path, args: tuple[str, ...], fragments: tuple[str, ...]
) -> None:
    out = tmp_path / "out"
    # a resumed run keeps its own device and folder
    where = () if "--resume" in args else (*CPU, "--out", out)
    assert_usage_error(invoke("decode", *args, *where), *fragments)
    assert not out.exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here: decode would run on it")
def test_cuda_without_cuda_is_a_usage_error(invoke: Invoke, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert_usage_error(invoke("decode", "--device", "cuda", "--out", out), "CUDA is not available")
    assert not out.exists()


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ("context = [1k", ("bad.toml", "not valid TOML")),
        ("context = 1024", ("bad.toml", "is a run suite", "linbench run --suite")),
        ('command = "decode"\nmode = "fwd"', ("bad.toml", "unknown key(s) mode")),
    ],
)
def test_a_bad_suite_file_is_a_usage_error(
    invoke: Invoke, tmp_path: Path, text: str, fragments: tuple[str, ...]
) -> None:
    suite = tmp_path / "bad.toml"
    suite.write_text(text)
    assert_usage_error(invoke("decode", "--suite", suite, *CPU, "--out", tmp_path / "out"), *fragments)


def test_a_variant_without_a_recurrent_form_cannot_decode(invoke: Invoke, planted: str, tmp_path: Path) -> None:
    assert_usage_error(invoke("decode", "--variant", planted, *CPU, "--out", tmp_path / "out"), "cannot decode")


def test_an_option_of_run_alone_is_refused(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke("decode", "--seq", "1k", *CPU, "--out", tmp_path / "out")
    assert result.exit_code == 2 and "--seq" in result.output
