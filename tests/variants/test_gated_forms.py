"""Every form of every gated variant equals the recurrent form in fp64 (CPU).

Outputs and the gradients of every input (q, k, v, the log-gates g, β, retention's γ when a
tensor) are compared at lengths that are not multiples of the chunk (1, 7, 100, 129), in the
weak and strong decay regimes, in fp64 and fp32, with chunks of 16, 32 and 64 tokens.

Tolerances, relative to the reference's largest magnitude: fp64 1e-10, where the forms agree
to ~1e-13 (unit roundoff 1e-16 times sums of up to S = 129 terms and a few exponentials);
fp32 1e-4, where they agree to ~1e-5 at worst (roundoff 6e-8 times the same sums; the worst is
retention's γ gradient, a sum over every pair of (t − s)·γ^(t−s−1) terms).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch
from gated_cases import VARIANTS, assert_matches, draw_case, one_thread, reference, rounded, run

import linbench.variants.gated.decay_chunked as decay_chunked
from linbench.variants.gated.gates import lightning_log_decays
from linbench.variants.registry import ImplUnavailableError

LENGTHS = (1, 7, 100, 129)
REGIMES = ("weak", "strong")
TOLERANCE = {torch.float64: 1e-10, torch.float32: 1e-4}
DTYPES = pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["fp64", "fp32"])


@pytest.fixture(autouse=True)
def _one_thread() -> Iterator[None]:
    with one_thread():
        yield


@pytest.mark.parametrize("name", list(VARIANTS))
@pytest.mark.parametrize("seq", LENGTHS)
@pytest.mark.parametrize("regime", REGIMES)
@DTYPES
@pytest.mark.parametrize("chunk_size", [16, 32, 64])
def test_chunked_equals_the_recurrent_reference(
    name: str, seq: int, regime: str, dtype: torch.dtype, chunk_size: int
) -> None:
    got = run(name, "chunked", draw_case(name, seq, regime), dtype, chunk_size=chunk_size)
    assert_matches(got, reference(name, seq, regime), TOLERANCE[dtype])


@pytest.mark.parametrize("name", list(VARIANTS))
@pytest.mark.parametrize("seq", LENGTHS)
@pytest.mark.parametrize("regime", REGIMES)
@DTYPES
def test_quadratic_equals_the_recurrent_reference(name: str, seq: int, regime: str, dtype: torch.dtype) -> None:
    got = run(name, "quadratic", draw_case(name, seq, regime), dtype)
    assert_matches(got, reference(name, seq, regime), TOLERANCE[dtype])


@pytest.mark.parametrize("name", list(VARIANTS))
def test_recurrent_in_fp32_is_close_to_fp64(name: str) -> None:
    got = run(name, "recurrent", draw_case(name, 100, "strong"), torch.float32)
    assert_matches(got, reference(name, 100, "strong"), TOLERANCE[torch.float32])


def test_a_chunk_longer_than_the_sequence_and_an_odd_chunk() -> None:
    """One padded chunk holding the whole sequence, and a chunk size that divides nothing."""
    for chunk_size in (1, 13, 500):
        for name in ("gla", "gated-deltanet", "kda"):
            got = run(name, "chunked", draw_case(name, 100, "strong"), torch.float64, chunk_size=chunk_size)
            assert_matches(got, reference(name, 100, "strong"), TOLERANCE[torch.float64])


@DTYPES
def test_gla_chunked_pairs_when_gates_forget_too_fast_to_factor(dtype: torch.dtype) -> None:
    """Gates 8x the strong regime's (e^-400 forgotten within a chunk of 64) overflow the
    factored form's exponents in fp32: the chunked form then takes every pair in log space."""
    leaves = draw_case("gla", 129, "strong")
    leaves["g"] = leaves["g"] * 8
    want = run("gla", "recurrent", leaves, torch.float64)
    got = run("gla", "chunked", leaves, dtype, chunk_size=64)
    assert torch.isfinite(got[0]).all()
    assert_matches(got, want, TOLERANCE[dtype])


@DTYPES
def test_kda_chunked_pairs_when_gates_forget_too_fast_to_factor(dtype: torch.dtype) -> None:
    """kda's K Kᵀ and Q Kᵀ take gla's per-channel scores: with gates 8x the strong regime's the
    factors would overflow fp32, and the chunked form takes every pair in log space instead."""
    leaves = draw_case("kda", 129, "strong")
    leaves["g"] = leaves["g"] * 8
    want = run("kda", "recurrent", leaves, torch.float64)
    got = run("kda", "chunked", leaves, dtype, chunk_size=64)
    assert torch.isfinite(got[0]).all()
    assert_matches(got, want, TOLERANCE[dtype])


def test_kda_pairwise_path_equals_the_factored_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """kda's chunked form on the pair-by-pair path (no exponent allowed in a factor) on ordinary
    inputs, a piece of one chunk at a time."""
    monkeypatch.setitem(decay_chunked.FACTOR_LIMIT, torch.float64, 0.0)
    monkeypatch.setattr(decay_chunked, "PAIR_BUDGET", 1)
    got = run("kda", "chunked", draw_case("kda", 100, "weak"), torch.float64, chunk_size=16)
    assert_matches(got, reference("kda", 100, "weak"), TOLERANCE[torch.float64])


@pytest.mark.parametrize("impl", ["recurrent", "quadratic", "chunked"])
def test_kda_with_one_gate_for_every_channel_is_gated_deltanet(impl: str) -> None:
    """A per-channel gate equal across channels is gated-deltanet's scalar gate: the same
    order of decay and update, the same normalisation and scale; gradients of g summed over
    the channels are gated-deltanet's."""
    leaves = draw_case("gated-deltanet", 100, "strong")
    shared = {**leaves, "g": leaves["g"].unsqueeze(-1).expand(*leaves["g"].shape, leaves["q"].shape[-1])}
    out, grads = run("kda", impl, shared, torch.float64)
    want_out, want_grads = run("gated-deltanet", impl, leaves, torch.float64)
    torch.testing.assert_close(out, want_out, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(grads["g"].sum(-1), want_grads["g"], rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(grads["k"], want_grads["k"], rtol=1e-10, atol=1e-10)


def test_kda_gates_each_key_channel_on_its_own() -> None:
    """Forgetting one key channel entirely (g = −∞ in effect) before the last token is not the
    same as forgetting none: the per-channel gate reaches the state row by row."""
    leaves = draw_case("kda", 20, "weak")
    forgetting = leaves["g"].clone()
    forgetting[..., -1, 0] = -60.0
    kept, _ = run("kda", "chunked", leaves, torch.float64)
    forgot, _ = run("kda", "chunked", {**leaves, "g": forgetting}, torch.float64)
    want, _ = run("kda", "recurrent", {**leaves, "g": forgetting}, torch.float64)
    torch.testing.assert_close(forgot, want, rtol=1e-10, atol=1e-10)
    assert not torch.allclose(kept[..., -1, :], forgot[..., -1, :])
    torch.testing.assert_close(kept[..., :-1, :], forgot[..., :-1, :], rtol=1e-12, atol=1e-12)


def test_gla_pairwise_path_equals_the_factored_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """With no exponent allowed in a factor, every chunk is computed pair by pair, and still
    equals the reference: the fallback path is tested on ordinary inputs too."""
    monkeypatch.setitem(decay_chunked.FACTOR_LIMIT, torch.float64, 0.0)
    monkeypatch.setattr(decay_chunked, "PAIR_BUDGET", 1)  # one chunk per piece: the loop runs
    got = run("gla", "chunked", draw_case("gla", 100, "weak"), torch.float64, chunk_size=16)
    assert_matches(got, reference("gla", 100, "weak"), TOLERANCE[torch.float64])


@pytest.mark.parametrize("name", list(VARIANTS))
def test_chunks_in_groups_of_one_pass_the_state_between_groups(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The chunked forms take chunks a cache-sized group at a time (one group at these test
    sizes); with groups of one chunk the state crosses every group boundary, and must still
    give the reference."""
    monkeypatch.setattr(decay_chunked, "GROUP_BUDGET", 1)
    assert decay_chunked.chunks_per_group(4, 16, 8) == 1
    got = run(name, "chunked", draw_case(name, 100, "strong"), torch.float64, chunk_size=16)
    assert_matches(got, reference(name, 100, "strong"), TOLERANCE[torch.float64])


def test_retention_default_gamma_is_retnets_schedule() -> None:
    """gamma=None is RetNet's γ_h = 1 − 2^(−5−h): the same as passing that tensor."""
    leaves = draw_case("retention", 20, "weak")
    schedule = torch.tensor([1 - 2.0**-5, 1 - 2.0**-6], dtype=torch.float64)
    default, _ = run("retention", "chunked", leaves, torch.float64)
    explicit, _ = run("retention", "chunked", {**leaves, "gamma": schedule}, torch.float64)
    torch.testing.assert_close(default, explicit, rtol=1e-12, atol=1e-12)


def test_a_number_gamma_decays_every_head_alike() -> None:
    leaves = draw_case("retention", 20, "weak")
    number, _ = run("retention", "quadratic", leaves, torch.float64, gamma=0.5)
    per_head = torch.tensor([0.5, 0.5], dtype=torch.float64)
    tensor, _ = run("retention", "quadratic", {**leaves, "gamma": per_head}, torch.float64)
    torch.testing.assert_close(number, tensor, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", list(VARIANTS))
@pytest.mark.parametrize("impl", ["recurrent", "quadratic", "chunked"])
def test_bf16_inputs_compute_in_fp32(name: str, impl: str) -> None:
    """16-bit inputs are upcast: the result is the fp32 one rounded, not a bf16 accumulation."""
    leaves = draw_case(name, 40, "weak")
    low, _ = run(name, impl, leaves, torch.bfloat16)
    want, _ = run(name, "recurrent", rounded(name, leaves, torch.bfloat16), torch.float64)
    torch.testing.assert_close(low, want, rtol=1e-4, atol=1e-4 * float(want.abs().max()))


@pytest.mark.parametrize("name", list(VARIANTS))
@pytest.mark.parametrize("impl", ["recurrent", "quadratic", "chunked"])
def test_bidirectional_is_refused(name: str, impl: str) -> None:
    variant = VARIANTS[name]
    leaves = draw_case(name, 5, "weak")
    q, k, v = leaves.pop("q"), leaves.pop("k"), leaves.pop("v")
    chosen = variant.impl(impl)
    with pytest.raises(ImplUnavailableError, match="causal only"):
        chosen.fn(q, k, v, causal=False, **variant.bind_params(chosen, leaves))


def test_scale_multiplies_q() -> None:
    """scale=None is Dk^-1/2; an explicit scale s gives the output for q·s exactly."""
    leaves = draw_case("simple-gla", 30, "weak")
    default, _ = run("simple-gla", "chunked", leaves, torch.float64)
    explicit, _ = run("simple-gla", "chunked", leaves, torch.float64, scale=8**-0.5)
    doubled, _ = run("simple-gla", "chunked", leaves, torch.float64, scale=2 * 8**-0.5)
    torch.testing.assert_close(default, explicit, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(doubled, 2 * default, rtol=1e-12, atol=1e-12)


def test_lightning_decays_by_the_layers_depth_as_fla_builds_it() -> None:
    """λ_h = −(8/H)(1 − layer/layers)·h (fla-core 0.6's chunk_lightning_attn): head 0 keeps
    everything, deeper layers forget more slowly; the last layer's slow decays (the weak end)
    pass every form too."""
    assert lightning_log_decays(4, 0, 2) == [0.0, -2.0, -4.0, -6.0]
    assert lightning_log_decays(4, 1, 2) == [0.0, -1.0, -2.0, -3.0]
    leaves = draw_case("lightning", 100, "weak")
    want = run("lightning", "recurrent", leaves, torch.float64, layer=79)
    for impl, params in (("chunked", {"chunk_size": 16}), ("quadratic", {})):
        assert_matches(run("lightning", impl, leaves, torch.float64, layer=79, **params), want, 1e-10)
    with pytest.raises(ValueError, match="layer must be below layers"):
        run("lightning", "chunked", leaves, torch.float64, layer=80, layers=80)


# Gates as the models compute them (linbench/variants/gated/gates.py): from A_log and dt_bias
# (Mamba2, Gated DeltaNet, Kimi Linear), and KDA's gate bounded below at −5 (Kimi K3, GLM-5.3-Flash).
PROFILES = [
    ("simple-gla", "production"),
    ("gated-deltanet", "production"),
    ("kda", "production"),
    ("gdn2", "production"),
]


@pytest.mark.parametrize(("name", "regime"), [*PROFILES, ("kda", "lower-bound"), ("gdn2", "lower-bound")])
@DTYPES
def test_every_form_equals_the_reference_with_gates_as_models_compute_them(
    name: str, regime: str, dtype: torch.dtype
) -> None:
    leaves = draw_case(name, 100, regime)
    if regime == "lower-bound":  # the profile reaches the bound: a share of the gates sit at −5
        assert float(leaves["g"].min()) < -4.9 and float((leaves["g"] < -4.5).double().mean()) > 0.2
    want = reference(name, 100, regime)
    for impl, params in (("chunked", {"chunk_size": 32}), ("quadratic", {})):
        assert_matches(run(name, impl, leaves, dtype, **params), want, TOLERANCE[dtype])


def test_a_gate_profile_a_variant_does_not_have_is_refused() -> None:
    """gla's gate has no production profile, simple-gla's no lower bound: one line naming what
    each takes (a --param naming it is exit 2 before anything runs)."""
    gla, simple = VARIANTS["gla"], VARIANTS["simple-gla"]
    (regime, _) = gla.draw_params
    assert regime.problem("production") == "parameter gate_regime must be one of weak, strong; got 'production'"
    (regime, _) = simple.draw_params
    assert "must be one of weak, strong, production;" in str(regime.problem("lower-bound"))
    with pytest.raises(ValueError, match="g has no gate profile 'lower-bound'; it takes weak, strong, production"):
        draw_case("simple-gla", 10, "lower-bound")
