"""mamba2 on the CPU: its reduction to the decaying recurrence against an SSD loop written here
and against mamba-ssm's own PyTorch references (``ssd_minimal_discrete``, Listing 1 of the
Mamba2 paper, and ``selective_state_update_ref``, where mamba-ssm is installed), and its
parameters' one-line errors. Every form against the reference is test_equivalence.py's."""

from __future__ import annotations

import importlib.util
import math

import pytest
import torch
import torch.nn.functional as F

import linbench
from linbench.variants.gated.mamba2 import library
from linbench.variants.gated.mamba2.inputs import a_log_values, dt_bias_values

GROUPS, HEADS, SEQ, STATE, HEAD_DIM = 2, 4, 12, 5, 3


def _inputs(seed: int = 0) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)

    def draw(*size: int) -> torch.Tensor:
        return torch.randn(*size, generator=gen, dtype=torch.float64)

    return {
        "C": draw(1, GROUPS, SEQ, STATE),
        "B": draw(1, GROUPS, SEQ, STATE),
        "x": draw(1, HEADS, SEQ, HEAD_DIM),
        "dt": draw(1, HEADS, SEQ),
        "A_log": a_log_values(HEADS, gen),
        "dt_bias": dt_bias_values(HEADS, gen),
        "D": draw(HEADS),
    }


def _mamba2(given: dict[str, torch.Tensor], impl: str = "recurrent", **more: torch.Tensor) -> torch.Tensor:
    keywords = {name: given[name] for name in ("dt", "A_log", "dt_bias", "D")} | more
    return linbench.attention(given["C"], given["B"], given["x"], variant="mamba2", impl=impl, **keywords)


def _ssd_loop(given: dict[str, torch.Tensor]) -> torch.Tensor:
    """The SSD recurrence as the paper writes it, head by head, B and C read by group."""
    step = F.softplus(given["dt"] + given["dt_bias"][:, None])  # (1, H, S)
    a = -given["A_log"].exp()
    per_group = HEADS // GROUPS
    rows = []
    for h in range(HEADS):
        state = torch.zeros(STATE, HEAD_DIM, dtype=torch.float64)
        out = []
        for t in range(SEQ):
            b, c, x = given["B"][0, h // per_group, t], given["C"][0, h // per_group, t], given["x"][0, h, t]
            state = torch.exp(step[0, h, t] * a[h]) * state + step[0, h, t] * torch.outer(b, x)
            out.append(state.T @ c + given["D"][h] * x)
        rows.append(torch.stack(out))
    return torch.stack(rows).unsqueeze(0)


@pytest.mark.parametrize("impl", ["recurrent", "chunked", "quadratic"])
def test_mamba2_is_the_ssd_recurrence_with_groups_and_the_skip(impl: str) -> None:
    given = _inputs()
    torch.testing.assert_close(_mamba2(given, impl), _ssd_loop(given), rtol=1e-10, atol=1e-10)


def test_the_default_parameters_are_mamba2s_init_spread_over_the_heads() -> None:
    given = _inputs()
    spread = (torch.arange(HEADS, dtype=torch.float64) + 0.5) / HEADS
    defaults = given | {"A_log": (1 + 15 * spread).log(), "D": torch.ones(HEADS, dtype=torch.float64)}
    step = math.log(0.001) + (math.log(0.1) - math.log(0.001)) * spread
    defaults["dt_bias"] = step.exp() + torch.log(-torch.expm1(-step.exp()))
    got = linbench.attention(given["C"], given["B"], given["x"], variant="mamba2", dt=given["dt"])
    torch.testing.assert_close(got, _ssd_loop(defaults), rtol=1e-10, atol=1e-10)


def test_a_parameter_of_the_wrong_shape_is_one_line() -> None:
    given = _inputs()
    with pytest.raises(
        ValueError, match=r"parameter D must have shape \(H,\) = \(4,\), one per value head; got \(2,\)"
    ):
        _mamba2(given | {"D": torch.ones(2, dtype=torch.float64)})
    with pytest.raises(ValueError, match="A_log must be 'init'"):
        _mamba2(given | {"A_log": "fast"})  # type: ignore[dict-item]


needs_mamba_ssm = pytest.mark.skipif(
    importlib.util.find_spec("mamba_ssm") is None or importlib.util.find_spec("triton") is None,
    reason="mamba-ssm (with triton) is not installed",
)


@needs_mamba_ssm
def test_mamba2_matches_mamba_ssms_listing_1_reference() -> None:
    """``ssd_minimal_discrete`` (pure PyTorch) takes X = Δ·x, A = Δ·A and B, C per head; its
    output has no skip, so D is 0 here."""
    given = _inputs() | {"D": torch.zeros(HEADS, dtype=torch.float64)}
    minimal = library.import_kernels("mamba_ssm.modules.ssd_minimal").ssd_minimal_discrete
    step = F.softplus(given["dt"] + given["dt_bias"][:, None])
    per_head = {name: given[name].repeat_interleave(HEADS // GROUPS, dim=1).transpose(1, 2) for name in ("B", "C")}
    x = (given["x"] * step.unsqueeze(-1)).transpose(1, 2)
    decay = (step * -given["A_log"].exp()[:, None]).transpose(1, 2)
    want, _ = minimal(x, decay, per_head["B"], per_head["C"], block_len=4)
    torch.testing.assert_close(_mamba2(given), want.transpose(1, 2), rtol=1e-10, atol=1e-10)


@needs_mamba_ssm
def test_mamba2s_decoder_step_matches_mamba_ssms_step_reference() -> None:
    """One token after a prefill through mamba2's recurrent decoder against
    ``selective_state_update_ref`` from the same state (mamba-ssm's layout (H, P, N))."""
    given = _inputs()
    variant = linbench.get_variant("mamba2")
    decoder = variant.decoder("recurrent")
    params = {name: given[name] for name in ("A_log", "dt_bias", "D")}
    prefix = {name: given[name][..., : SEQ - 1, :] for name in ("C", "B", "x")}
    state = decoder.prefill(
        prefix["C"], prefix["B"], prefix["x"], state=None, capacity=SEQ, dt=given["dt"][..., : SEQ - 1], **params
    )
    last = {name: given[name][..., SEQ - 1 :, :] for name in ("C", "B", "x")}
    out, _ = decoder.step(last["C"], last["B"], last["x"], state=state, dt=given["dt"][..., SEQ - 1 :], **params)
    reference = library.import_kernels(library.STEP_MODULE).selective_state_update_ref
    kept = state.matrix.transpose(-1, -2)[0].clone()  # (H, P, N)
    tied = {"A": -given["A_log"].exp()[:, None, None].expand(HEADS, HEAD_DIM, STATE)}
    tied |= {name: given[name][:, None].expand(HEADS, HEAD_DIM) for name in ("dt_bias", "D")}
    want = reference(
        kept.unsqueeze(0),
        given["x"][:, :, -1],
        given["dt"][:, :, -1, None].expand(1, HEADS, HEAD_DIM),
        B=given["B"][:, :, -1],
        C=given["C"][:, :, -1],
        dt_softplus=True,
        **tied,
    )
    torch.testing.assert_close(out[:, :, 0], want, rtol=1e-10, atol=1e-10)
