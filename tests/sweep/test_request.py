"""A sweep request: typed fields, "not given" left out, the suite keys it overrides (CPU, no torch)."""

from __future__ import annotations

from pathlib import Path

import pytest

from linbench.sweep.request import SweepRequest
from linbench.sweep.spec import SpecError, build_spec


def test_a_script_may_give_one_name_or_a_list_and_the_request_keeps_tuples() -> None:
    request = SweepRequest(variants="cosine", dtypes=["fp32", "bf16"], seq=[64, 128], plugins=["mine.py"], suite="ci")  # type: ignore[arg-type]
    assert (request.variants, request.dtypes, request.seq) == (("cosine",), ("fp32", "bf16"), (64, 128))
    assert (request.plugins, request.suite) == ((Path("mine.py"),), Path("ci"))
    hash(request)  # frozen and hashable, whatever the script passed


def test_settings_hold_only_what_was_given_by_suite_key() -> None:
    assert SweepRequest().settings() == {}
    request = SweepRequest(
        variants=("cosine:chunked",), seq="64..128", causal=False, threads=2, plugins=(Path("p.py"),)
    )
    assert request.settings() == {
        "variant": ["cosine:chunked"],
        "seq": "64..128",
        "causal": False,
        "threads": 2,
        "plugin": ["p.py"],
    }


def test_options_name_what_a_resume_must_not_be_given() -> None:
    request = SweepRequest(suite=Path("s.toml"), seq="1k", no_against=True, timeout_s=5.0, params=("a.b=1",))
    assert request.options() == ["--no-against", "--param", "--seq", "--suite"]


def test_from_settings_maps_suite_keys_and_refuses_unknown_ones() -> None:
    request = SweepRequest.from_settings({"variant": ["cosine"], "mode": ["fwd"], "seq": None}, command="run")
    assert (request.variants, request.modes, request.seq) == (("cosine",), ("fwd",), None)
    with pytest.raises(ValueError, match="unknown setting"):
        SweepRequest.from_settings({"sequence": "1k"})


def test_typed_values_reach_the_spec_and_are_checked_there() -> None:
    spec = build_spec(SweepRequest(variants=("cosine:chunked",), seq=(64, 128), threads=2, budget_s=0.5, causal=False))
    (block,) = spec.blocks
    assert (block.seq, block.causal, spec.threads, spec.budget_s) == ((64, 128), (False,), 2, 0.5)
    with pytest.raises(SpecError, match="threads: 0 is not a positive whole number"):
        build_spec(SweepRequest(threads=0))
    with pytest.raises(SpecError, match=r"unknown setting.*seq"):
        build_spec(SweepRequest(command="decode", seq="1k"))
    with pytest.raises(SpecError, match="command 'train' is not one of run, decode"):
        build_spec(SweepRequest(command="train"))
