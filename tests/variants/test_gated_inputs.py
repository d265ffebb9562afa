"""The gated variants' extra inputs: declared, drawn, checked and cut as data (CPU)."""

from __future__ import annotations

import pytest
import torch
from gated_cases import VARIANTS

import linbench
from linbench.variants.extra_inputs import ExtraInput, check_extra_inputs, take_tokens
from linbench.variants.gated.gates import BETA, CHANNEL_GATE, HEAD_GATE, retention_log_decay, retnet_decays
from linbench.variants.registry import Impl, Param, Variant

Q = torch.zeros(2, 3, 5, 4)


def _message(excinfo: pytest.ExceptionInfo[ValueError]) -> str:
    message = str(excinfo.value)
    assert "\n" not in message  # one line, as the CLI prints it
    return message


@pytest.mark.parametrize(
    ("extra", "value", "match"),
    [
        (HEAD_GATE, torch.full((2, 3, 5), 0.25), r"g must be ≤ 0 \(a log-gate.*largest value is 0.25"),
        (HEAD_GATE, torch.full((2, 3, 5), float("nan")), r"g must be finite \(a log-gate\)"),
        (HEAD_GATE, torch.full((2, 3, 5), float("-inf")), r"g must be finite"),
        (HEAD_GATE, torch.zeros(2, 3, 6), r"g must have shape \(B, H, S\) = \(2, 3, 5\); got \(2, 3, 6\)"),
        (CHANNEL_GATE, torch.zeros(2, 3, 5), r"g must have shape \(B, H, S, Dk\) = \(2, 3, 5, 4\); got \(2, 3, 5\)"),
        (HEAD_GATE, torch.zeros(2, 3, 5, dtype=torch.float64), r"g must be torch.float32 for torch.float32 q"),
        (HEAD_GATE, [0.0], r"g must be a torch.Tensor, got list"),
        (BETA, torch.full((2, 3, 5), 1.5), r"beta must lie in \[0, 1\]; its values run from 1.5 to 1.5"),
        (BETA, torch.linspace(-0.5, 0.5, 30).reshape(2, 3, 5), r"beta must lie in \[0, 1\]; .* from -0.5 to 0.5"),
        (BETA, torch.full((2, 3, 5), float("inf")), r"beta must lie in \[0, 1\]; it has inf or nan values"),
    ],
)
def test_bad_extra_inputs_get_one_line(extra: ExtraInput, value: object, match: str) -> None:
    with pytest.raises(ValueError, match=f"^gla: {match}") as excinfo:
        check_extra_inputs("gla", [extra], {extra.name: value}, Q)
    _message(excinfo)


def test_good_extra_inputs_pass_and_zero_gates_and_unit_beta_are_in_range() -> None:
    given = {"g": torch.zeros(2, 3, 5), "beta": torch.ones(2, 3, 5)}
    check_extra_inputs("gated-deltanet", [HEAD_GATE, BETA], given, Q)
    check_extra_inputs("gla", [CHANNEL_GATE], {"g": -torch.rand(2, 3, 5, 4)}, Q)


def test_a_missing_extra_input_is_named_with_what_it_is() -> None:
    with pytest.raises(ValueError, match=r"^gated-deltanet needs the extra input\(s\) beta: writing strength") as e:
        check_extra_inputs("gated-deltanet", [HEAD_GATE, BETA], {"g": torch.zeros(2, 3, 5)}, Q)
    _message(e)
    variant = VARIANTS["gated-deltanet"]
    with pytest.raises(ValueError, match=r"^gated-deltanet needs the extra input\(s\) g: log-gate .*; beta: ") as e:
        variant.bind_params(variant.impl("chunked"), {})
    _message(e)


def test_the_registry_binds_extra_inputs_beside_parameters() -> None:
    variant = VARIANTS["gla"]
    g = torch.zeros(2, 3, 5, 4)
    bound = variant.bind_params(variant.impl("chunked"), {"g": g})
    assert bound["g"] is g and bound == {"scale": None, "chunk_size": 64, "initial_state": None, "g": g}
    with pytest.raises(
        ValueError, match=r"unknown parameter\(s\) beta for gla:chunked; it takes: chunk_size, g, initial_state, scale"
    ):
        variant.bind_params(variant.impl("chunked"), {"g": g, "beta": g})


def test_an_extra_input_may_not_share_a_parameters_name() -> None:
    impl = Impl("ref", lambda q, k, v, *, causal, g: v, "identity", "O(s)", "O(s)")
    with pytest.raises(ValueError, match=r"\['g'\] are both parameters and extra inputs"):
        Variant(
            "clash",
            "O = V",
            (impl,),
            "ref",
            (Param("g", 0, "g"),),
            lambda *a: 0.0,
            "O(s)",
            "O(s)",
            extra_inputs=(HEAD_GATE,),
        )


def test_attention_takes_extra_inputs_by_keyword() -> None:
    """Through linbench.attention: gla is a built-in variant."""
    q, k, v = (torch.randn(1, 2, 9, 4, dtype=torch.bfloat16) for _ in range(3))
    g = CHANNEL_GATE.draw(1, 2, 9, 4, generator=torch.Generator().manual_seed(0), device="cpu", dtype=torch.bfloat16)
    out = linbench.attention(q, k, v, variant="gla", impl="chunked", g=g)
    assert out.dtype == torch.bfloat16 and out.shape == (1, 2, 9, 4)
    with pytest.raises(ValueError, match="gla needs the extra input"):
        linbench.attention(q, k, v, variant="gla")


@pytest.mark.parametrize(
    ("variant", "given", "match"),
    [
        ("simple-gla", {"g": torch.full((1, 2, 9), 0.5)}, r"^simple-gla: g must be ≤ 0 \(a log-gate"),
        (
            "gated-deltanet",
            {"g": torch.zeros(1, 2, 9), "beta": torch.full((1, 2, 9), 1.5)},
            r"beta must lie in \[0, 1\]",
        ),
        ("deltanet", {"beta": torch.full((1, 2, 9), -0.1)}, r"^deltanet: beta must lie in \[0, 1\]"),
        ("gla", {"g": torch.zeros(1, 2, 9)}, r"^gla: g must have shape \(B, H, S, Dk\) = \(1, 2, 9, 4\)"),
        ("retention", {"gamma": 1.0}, r"gamma must lie in \(0, 1\)"),
    ],
)
def test_attention_refuses_bad_extra_inputs_in_one_line(variant: str, given: dict, match: str) -> None:
    """A positive log-gate, β outside [0, 1], a gate of the wrong shape, a decay of 1: ValueError."""
    q, k, v = (torch.randn(1, 2, 9, 4) for _ in range(3))
    for impl in ("recurrent", "chunked"):
        with pytest.raises(ValueError, match=match) as excinfo:
            linbench.attention(q, k, v, variant=variant, impl=impl, **given)
        _message(excinfo)


def test_attention_prechecked_reads_no_values_but_checks_shapes() -> None:
    """The benchmark's timed call: a value out of range passes (it was checked once, untimed),
    a wrong shape does not."""
    from linbench.api import attention_prechecked

    q, k, v = (torch.randn(1, 2, 9, 4) for _ in range(3))
    attention_prechecked(q, k, v, variant="simple-gla", impl="chunked", g=torch.full((1, 2, 9), 0.5))
    with pytest.raises(ValueError, match="g must have shape"):
        attention_prechecked(q, k, v, variant="simple-gla", impl="chunked", g=torch.zeros(1, 2, 8))


@pytest.mark.parametrize("extra", [HEAD_GATE, CHANNEL_GATE, BETA], ids=["g", "g-channel", "beta"])
@pytest.mark.parametrize("regime", ["weak", "strong"])
def test_draws_are_in_range_reproducible_and_shaped(extra: ExtraInput, regime: str) -> None:
    def draw(seed: int) -> torch.Tensor:
        gen = torch.Generator().manual_seed(seed)
        return extra.draw(2, 3, 5, 4, generator=gen, device="cpu", dtype=torch.float32, regime=regime)

    value = draw(1)
    assert value.shape == extra.sizes(2, 3, 5, 4) and value.dtype == torch.float32
    assert extra.problem(value, Q) is None
    assert torch.equal(value, draw(1)) and not torch.equal(value, draw(2))


def test_the_regimes_forget_as_documented() -> None:
    """Weak: log σ(x)/16, mean ≈ −0.05 (a memory of ~20 tokens); strong: log σ(x), mean ≈ −0.8."""
    gen = torch.Generator().manual_seed(0)
    weak = HEAD_GATE.draw(4, 8, 1000, 4, generator=gen, device="cpu", dtype=torch.float64, regime="weak")
    strong = HEAD_GATE.draw(4, 8, 1000, 4, generator=gen, device="cpu", dtype=torch.float64, regime="strong")
    assert -0.06 < float(weak.mean()) < -0.045
    assert -0.85 < float(strong.mean()) < -0.75
    beta = BETA.draw(4, 8, 1000, 4, generator=gen, device="cpu", dtype=torch.float64, regime="strong")
    assert 0.48 < float(beta.mean()) < 0.52
    with pytest.raises(ValueError, match="unknown regime 'mild' for g; regimes: weak, strong"):
        HEAD_GATE.draw(1, 1, 1, 1, generator=gen, device="cpu", dtype=torch.float64, regime="mild")


def test_gates_come_in_fp32_for_16_bit_q_and_beta_in_qs_dtype() -> None:
    assert HEAD_GATE.dtype_for(torch.bfloat16) == CHANNEL_GATE.dtype_for(torch.float16) == torch.float32
    assert HEAD_GATE.dtype_for(torch.float64) == torch.float64
    assert BETA.dtype_for(torch.bfloat16) == torch.bfloat16
    q = torch.zeros(2, 3, 5, 4, dtype=torch.bfloat16)
    assert HEAD_GATE.problem(torch.zeros(2, 3, 5, dtype=torch.bfloat16), q) == (
        "g must be torch.float32 for torch.bfloat16 q; got torch.bfloat16"
    )


def test_take_tokens_cuts_per_token_inputs_only() -> None:
    given = {"g": torch.arange(10.0).reshape(1, 1, 10), "beta": torch.rand(1, 1, 10), "scale": 0.5}
    cut = take_tokens([HEAD_GATE, BETA], given, 3, 5)
    assert torch.equal(cut["g"], torch.tensor([[[3.0, 4.0]]])) and cut["beta"].shape == (1, 1, 2)
    assert cut["scale"] == 0.5
    channel = take_tokens([CHANNEL_GATE], {"g": torch.zeros(1, 1, 10, 4)}, 3, 5)
    assert channel["g"].shape == (1, 1, 2, 4)


def test_an_extra_input_declares_a_known_shape_and_dtype_rule() -> None:
    with pytest.raises(ValueError, match="shape 'per_batch' is not one of per_head, per_token, per_token_channel"):
        ExtraInput("x", "per_batch", "x", HEAD_GATE.draw_fn, HEAD_GATE.range_fn)
    with pytest.raises(ValueError, match="dtype rule 'fp8'"):
        ExtraInput("x", "per_token", "x", HEAD_GATE.draw_fn, HEAD_GATE.range_fn, dtype_rule="fp8")


def test_retnets_decay_schedule() -> None:
    """γ_h = 1 − 2^(−5−h): 0.96875 for the first head, each next head remembering twice as long."""
    assert retnet_decays(3) == [1 - 1 / 32, 1 - 1 / 64, 1 - 1 / 128]
    like = torch.zeros(1, dtype=torch.float64)
    torch.testing.assert_close(retention_log_decay(None, 3, like), torch.tensor(retnet_decays(3)).double().log())


@pytest.mark.parametrize(
    ("gamma", "match"),
    [
        (1.0, r"gamma must lie in \(0, 1\) \(a decay per token\); got 1.0"),
        (0, r"gamma must lie in \(0, 1\)"),
        (torch.tensor([0.5, 1.2]), r"gamma must lie in \(0, 1\) .*; its values run from 0.5 to 1.2"),
        (
            torch.tensor([0.5, 0.5, 0.5]),
            r"gamma must be a number, a tensor of shape \(H,\) = \(2,\) or None; got \(3,\)",
        ),
        ("0.5", r"gamma must be a number, .* got str"),
    ],
)
def test_bad_retention_decays_get_one_line(gamma: object, match: str) -> None:
    with pytest.raises(ValueError, match=match) as excinfo:
        retention_log_decay(gamma, 2, torch.zeros(1))
    _message(excinfo)


def _drawn_wide(sizes: tuple[int, ...], generator: torch.Generator, regime: str) -> torch.Tensor:
    return -torch.rand((*sizes, 2), generator=generator, dtype=torch.float64)


def _drawn_positive_when_strong(sizes: tuple[int, ...], generator: torch.Generator, regime: str) -> torch.Tensor:
    return torch.full(sizes, 0.5 if regime == "strong" else -0.5, dtype=torch.float64)


def _raises(sizes: tuple[int, ...], generator: torch.Generator, regime: str) -> torch.Tensor:
    raise RuntimeError("no gate here")


@pytest.mark.parametrize(
    ("draw_fn", "match"),
    [
        (_drawn_wide, r"planted: its draw_fn for g \(weak regime\) drew what it refuses: g must have shape"),
        (_drawn_positive_when_strong, r"g \(strong regime\) drew what it refuses: g must be ≤ 0"),
        (_raises, r"planted: drawing g \(weak regime\) raised RuntimeError: no gate here"),
    ],
)
def test_a_declaration_whose_draw_it_refuses_is_refused_before_a_run(draw_fn: object, match: str) -> None:
    """A plugin's draw_fn that draws the wrong shape, out of range, or raises: one line, at plan time."""
    from linbench.variants.extra_inputs import probe_draws

    extra = ExtraInput("g", "per_token", "a gate", draw_fn, HEAD_GATE.range_fn)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=match) as excinfo:
        probe_draws("planted", (extra,))
    _message(excinfo)
    probe_draws("gla", CHANNEL_GATE and (CHANNEL_GATE,))  # linbench's own draw what they accept
    probe_draws("gated-deltanet", (HEAD_GATE, BETA))
