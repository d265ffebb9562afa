"""A plan's points and facts (CPU, no run): the tensor parallelism its rows record, and the
points a suite table's skip leaves out."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from linbench.runner.plan import COMPILE_ALLOWANCE_S, make_plan
from linbench.sweep.request import SweepRequest
from linbench.sweep.spec import build_spec

CPU = torch.device("cpu")


@pytest.mark.parametrize(
    ("request_", "tp"),
    [
        (SweepRequest(command="decode", preset="qwen3-next-80b", tp=8, context="256", device="cpu"), 8),
        (SweepRequest(preset="llama3-8b", seq=256, variants=("cosine:chunked",), device="cpu"), 1),
        (SweepRequest(seq=256, variants=("cosine:chunked",), device="cpu"), None),
    ],
    ids=["preset-tp8", "preset-without-tp", "no-preset"],
)
def test_every_row_records_the_tp_its_heads_are_one_rank_s_shard_of(request_: SweepRequest, tp: int | None) -> None:
    plan = make_plan(build_spec(request_), CPU, "test cpu")
    assert plan.points and {plan.facts[point].columns()["tp"] for point in plan.points} == {tp}


SKIPPING_SUITE = """
variant = ["cosine:chunked", "linear:kernel", "linear:chunked"]
against = ["softmax:sdpa"]
device = "cpu"
heads = 2
dim = 16
[[sweep]]
seq = 64
[[sweep]]
seq = 128
skip = ["linear:kernel", "softmax"]
"""


def _suite(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "suite.toml"
    path.write_text(text)
    return path


def test_a_table_s_skip_leaves_its_impls_out_of_that_table_alone(tmp_path: Path) -> None:
    """CPU planning only (nothing runs): skip names one impl and a whole variant (the against's)."""
    plan = make_plan(build_spec(SweepRequest(suite=_suite(tmp_path, SKIPPING_SUITE))), CPU, "test cpu")
    seqs: dict[str, set[int]] = {}
    for point in plan.points:
        seqs.setdefault(f"{point.variant}:{point.impl}", set()).add(point.shape.seq)
    assert seqs == {
        "cosine:chunked": {64, 128},
        "linear:chunked": {64, 128},
        "linear:kernel": {64},
        "softmax:sdpa": {64},
    }


def test_the_command_line_s_variants_keep_a_table_s_skip(tmp_path: Path) -> None:
    """CPU planning only: --variant replaces the suite's impls, not what a table leaves out."""
    request = SweepRequest(suite=_suite(tmp_path, SKIPPING_SUITE), variants=("linear:kernel", "linear:compiled"))
    plan = make_plan(build_spec(request), CPU, "test cpu")
    kernel = {p.shape.seq for p in plan.points if p.impl == "kernel"}
    compiled = {p.shape.seq for p in plan.points if p.impl == "compiled"}
    assert (kernel, compiled) == ({64}, {64, 128})


@pytest.mark.parametrize(
    ("skip", "message"),
    [("['linear:kernl']", "skip: variant 'linear' has no impl 'kernl'"), ("['all']", "skip: 'all' would leave")],
)
def test_a_skip_naming_nothing_there_is_is_refused(tmp_path: Path, skip: str, message: str) -> None:
    """CPU planning only: a misspelt skip would leave in the point it was written to leave out."""
    text = SKIPPING_SUITE.replace('["linear:kernel", "softmax"]', skip)
    with pytest.raises(ValueError, match=message):
        make_plan(build_spec(SweepRequest(suite=_suite(tmp_path, text))), CPU, "test cpu")


def test_the_impls_torch_compile_builds_get_the_compile_allowance_and_no_other() -> None:
    """CPU planning only (nothing compiles): the compiled impls are known by their backend."""
    request = SweepRequest(seq=64, variants=("linear:compiled", "cosine:compiled", "linear:chunked"), device="cpu")
    plan = make_plan(build_spec(request), CPU, "test cpu")
    assert plan.compiling == {("linear", "compiled"), ("cosine", "compiled")}
    by_impl = {(p.variant, p.impl): plan.time_limit_s(p) for p in plan.points}
    assert by_impl[("linear", "compiled")] == by_impl[("cosine", "compiled")] == plan.timeout_s + COMPILE_ALLOWANCE_S
    assert by_impl[("linear", "chunked")] == by_impl[("softmax", "sdpa")] == plan.timeout_s


def test_the_help_and_the_docs_give_the_compile_allowance_the_runner_gives() -> None:
    """No device: the figure in --timeout-s's help and docs/measurement.md is the constant's."""
    from linbench.cli.run_cmd import HELP

    said = f"{COMPILE_ALLOWANCE_S:g} s more"
    docs = " ".join((Path(__file__).parents[2] / "docs" / "measurement.md").read_text().split())
    assert said in HELP["timeout_s"] and said in docs
