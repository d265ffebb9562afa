"""Which impls a run measures on a device, baselines included."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from linbench.runner.targets import resolve_targets
from linbench.variants.registry import get_variant, register_variant

CPU = torch.device("cpu")


def test_baselines_follow_the_variants_and_can_be_dropped() -> None:
    targets = resolve_targets(["cosine:chunked"], ["softmax"], CPU)
    # On CPU torch has the flash and math SDPA backends; efficient and cuDNN are CUDA only.
    softmax = (("softmax", "naive"), ("softmax", "sdpa"), ("softmax", "sdpa-flash"), ("softmax", "sdpa-math"))
    assert targets.pairs == (("cosine", "chunked"), *softmax)
    assert targets.baselines == softmax
    alone = resolve_targets(["cosine:chunked"], [], CPU)
    assert alone.pairs == (("cosine", "chunked"),) and alone.baselines == ()


def test_unavailable_impls_are_noted_when_implied_and_refused_when_named() -> None:
    softmax = get_variant("softmax")
    away = replace(softmax.impl("sdpa"), availability=lambda device: "needs a planted chip")
    register_variant(replace(softmax, impl_list=(softmax.impl("naive"), away)), replace=True)
    try:
        targets = resolve_targets(["softmax"], [], CPU)
        assert targets.pairs == (("softmax", "naive"),)
        assert targets.notes == ("softmax:sdpa left out: needs a planted chip",)
        with pytest.raises(ValueError, match="softmax:sdpa cannot run on cpu: needs a planted chip"):
            resolve_targets(["softmax:sdpa"], [], CPU)
    finally:
        register_variant(softmax, replace=True)


def test_an_optional_impl_named_where_it_cannot_run_is_left_out_with_its_reason() -> None:
    """fla is an optional extra: a suite naming cosine:fla still runs on CPU, without it."""
    targets = resolve_targets(["cosine:chunked", "cosine:fla"], [], CPU)
    assert targets.pairs == (("cosine", "chunked"),)
    (note,) = targets.notes
    assert note.startswith("cosine:fla left out: ") and "fla" in note
    with pytest.raises(ValueError, match=r"no impl of cosine:fla can run on cpu \(cosine:fla left out: "):
        resolve_targets(["cosine:fla"], [], CPU)


def test_gates_set_the_gate_profile_of_every_gated_variant_of_the_run() -> None:
    """--gates production reaches the gated variants (an explicit --param after it wins) and
    leaves softmax alone."""
    from linbench.runner.plan import gate_params

    pairs = [("kda", "chunked"), ("softmax", "sdpa"), ("gated-deltanet", "recurrent"), ("kda", "recurrent")]
    assert gate_params("production", pairs) == ["kda.gate_regime=production", "gated-deltanet.gate_regime=production"]
    assert gate_params(None, pairs) == []
