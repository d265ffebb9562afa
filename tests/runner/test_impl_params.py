"""--param: read, resolved against the registry and the run's impls, and shown as k=v;k=v."""

from __future__ import annotations

import pytest
import torch

from linbench.runner.kinds import DECODE
from linbench.runner.params import non_default, resolve_params
from linbench.runner.plan import make_plan
from linbench.sweep.params import ParamError, parse_param
from linbench.sweep.request import SweepRequest
from linbench.sweep.spec import SpecError, build_spec

COSINE = [("cosine", "quadratic"), ("cosine", "chunked"), ("cosine", "kernel"), ("softmax", "sdpa")]


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        ("cosine:kernel.chunk_size=128", ("cosine", "kernel", "chunk_size", "128")),
        ("cosine.norm_const=0.3", ("cosine", None, "norm_const", "0.3")),
        ("softmax:sdpa.backend=flash", ("softmax", "sdpa", "backend", "flash")),
    ],
)
def test_the_forms_of_a_setting(text: str, parts: tuple[object, ...]) -> None:
    setting = parse_param(text)
    assert (setting.variant, setting.impl, setting.name, setting.value) == parts


@pytest.mark.parametrize("text", ["chunk_size=3", "cosine:chunked.chunk_size", "cosine:.eps=1", ".eps=1", "a.b c=1"])
def test_malformed_settings_are_refused(text: str) -> None:
    with pytest.raises(ParamError) as error:
        parse_param(text)
    assert "TARGET.NAME=VALUE" in str(error.value)


def test_a_variant_wide_setting_reaches_every_impl_that_takes_it_and_an_impl_s_own_wins() -> None:
    resolved = resolve_params(["cosine:kernel.chunk_size=64", "cosine.chunk_size=32", "cosine.norm_const=0.3"], COSINE)
    assert resolved == {
        ("cosine", "quadratic"): {"norm_const": 0.3},
        ("cosine", "chunked"): {"chunk_size": 32, "norm_const": 0.3},
        ("cosine", "kernel"): {"chunk_size": 64, "norm_const": 0.3},
    }
    assert resolve_params(["softmax:sdpa.backend=flash"], COSINE) == {("softmax", "sdpa"): {"backend": "flash"}}


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ("nosuch.eps=1", ("unknown variant 'nosuch'",)),
        ("cosine:nosuch.chunk_size=1", ("no impl 'nosuch'", "chunked")),
        ("cosine:chunked.nosuch=1", ("cosine:chunked has no parameter 'nosuch'", "chunk_size", "norm_const")),
        ("cosine.nosuch=1", ("cosine has no parameter 'nosuch'",)),
        ("cosine:chunked.chunk_size=abc", ("chunk_size takes a whole number, not 'abc'",)),
        ("cosine.norm_const=high", ("norm_const takes a number",)),
        ("cosine:naive.norm_const=1", ("cosine:naive is not part of this run",)),
        ("linear.eps=1e-3", ("linear is not part of this run",)),
    ],
)
def test_bad_settings_are_refused_naming_what_is_wrong(text: str, fragments: tuple[str, ...]) -> None:
    with pytest.raises(ValueError) as error:
        resolve_params([text], COSINE)
    for fragment in fragments:
        assert fragment in str(error.value)


def test_decoders_take_their_variant_s_parameters() -> None:
    pairs = [("cosine", "recurrent"), ("softmax", "kvcache")]
    assert resolve_params(["cosine:recurrent.norm_const=0.3"], pairs, DECODE) == {
        ("cosine", "recurrent"): {"norm_const": 0.3}
    }
    with pytest.raises(ValueError, match="is an impl, not a decoder"):
        resolve_params(["cosine:chunked.chunk_size=64"], pairs, DECODE)
    with pytest.raises(ValueError, match="has no parameter 'chunk_size'"):
        resolve_params(["cosine.chunk_size=64"], pairs, DECODE)


def test_the_column_holds_only_values_that_differ_from_the_defaults() -> None:
    assert non_default(("cosine", "chunked"), {"chunk_size": 128, "norm_const": 0.3}) == "norm_const=0.3"
    assert non_default(("cosine", "chunked"), {"chunk_size": 64, "seq_len": 4096}) == "chunk_size=64;seq_len=4096"
    assert non_default(("cosine", "chunked"), {"chunk_size": 128}) == ""


def test_knobs_are_checked_and_reach_the_plan() -> None:
    request = SweepRequest(
        variants=("cosine:chunked",),
        no_against=True,
        params=("cosine.norm_const=0.3",),
        threads=2,
        warmup_s=0.0,
        min_reps=7,
    )
    spec = build_spec(request)
    plan = make_plan(spec, torch.device("cpu"), "test cpu")
    assert plan.threads == 2 and plan.impl_params("cosine", "chunked") == {"norm_const": 0.3}
    assert plan.timing.warmup_s == 0.0 and plan.timing.min_reps == 7 and plan.timing.max_reps >= 7
    assert plan.params_meta() == {"cosine:chunked": {"norm_const": 0.3}}
    many = build_spec(SweepRequest(variants=("cosine:chunked",), min_reps=500))
    assert make_plan(many, torch.device("cpu"), "test cpu").timing.max_reps == 500


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"threads": "0"}, "threads: '0' is not a positive whole number"),
        ({"threads": "two"}, "threads:"),
        ({"min_reps": "1.5"}, "min_reps:"),
        ({"warmup_s": "-1"}, "warmup_s: '-1' must be zero or more"),
        ({"warmup_s": "soon"}, "warmup_s: 'soon' is not a number"),
        ({"param": ["chunk_size=3"]}, "TARGET.NAME=VALUE"),
    ],
)
def test_bad_knob_values_are_spec_errors(flags: dict[str, object], message: str) -> None:
    with pytest.raises(SpecError) as error:
        build_spec(SweepRequest.from_settings(flags))
    assert message in str(error.value)
