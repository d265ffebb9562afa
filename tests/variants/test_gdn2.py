"""gdn2 on the CPU: its DPLR reduction against fla-core's own PyTorch references for GDN-2
(``naive_recurrent_gdn2`` and ``naive_chunk_gdn2``, where fla is installed; their twin in
fla_naive.py elsewhere), against KDA when both gates collapse to one scalar (the paper's
reduction), and its inputs' one-line errors. Every form against the reference is
test_equivalence.py's; fla's kernels through the interpreter are test_gated_fla_interpreted.py's."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from fla_naive import fla_source, naive

import linbench

HEADS, V_HEADS, SEQ, DIM_K, DIM_V = 2, 4, 19, 8, 6


def _inputs(seed: int = 0) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)

    def draw(*size: int) -> torch.Tensor:
        return torch.randn(*size, generator=gen, dtype=torch.float64)

    return {
        "q": draw(1, HEADS, SEQ, DIM_K),
        "k": draw(1, HEADS, SEQ, DIM_K),
        "v": draw(1, V_HEADS, SEQ, DIM_V),
        "g": F.logsigmoid(draw(1, V_HEADS, SEQ, DIM_K)),
        "b": draw(1, V_HEADS, SEQ, DIM_K).sigmoid(),
        "w": draw(1, V_HEADS, SEQ, DIM_V).sigmoid(),
    }


def _gdn2(given: dict[str, torch.Tensor], impl: str = "recurrent", **params: object) -> torch.Tensor:
    q, k, v = given["q"], given["k"], given["v"]
    extras = {name: given[name] for name in ("g", "b", "w")}
    return linbench.attention(q, k, v, variant="gdn2", impl=impl, **extras, **params)


def _fla_layout(given: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """fla's (B, T, H, D), q and k normalised and repeated to the value heads (fla's layer does both)."""
    q, k = (F.normalize(given[name], dim=-1).repeat_interleave(V_HEADS // HEADS, dim=1) for name in ("q", "k"))
    return {name: t.transpose(1, 2) for name, t in ({"q": q, "k": k} | {n: given[n] for n in "vgbw"}).items()}


@pytest.mark.parametrize("impl", ["recurrent", "chunked", "quadratic"])
def test_gdn2_is_flas_naive_recurrent_gdn2(impl: str) -> None:
    """fla's reference computes in fp32: agreement to its rounding."""
    given = _inputs()
    want, _ = naive("gdn2", "naive_recurrent_gdn2")(**_fla_layout(given))
    torch.testing.assert_close(_gdn2(given, impl), want.transpose(1, 2).double(), rtol=2e-5, atol=2e-5)


@pytest.mark.skipif(fla_source() is None, reason="fla-core is not installed (its naive_chunk_gdn2)")
def test_flas_naive_chunk_gdn2_agrees_with_its_naive_recurrence() -> None:
    """fla's chunkwise PyTorch reference (WY form, chunk 16 here: the 19 tokens' last chunk partial)."""
    given = _inputs(1)
    chunked, _ = naive("gdn2", "naive_chunk_gdn2")(**_fla_layout(given), chunk_size=16)
    torch.testing.assert_close(_gdn2(given), chunked.transpose(1, 2).double(), rtol=2e-5, atol=2e-5)


def test_gdn2_with_both_gates_one_scalar_is_kda() -> None:
    """b = w = β: the paper's (and fla's docstring's) reduction to KDA."""
    given = _inputs(2)
    beta = given["b"][..., 0]
    collapsed = given | {
        "b": beta.unsqueeze(-1).expand(-1, -1, -1, DIM_K),
        "w": beta.unsqueeze(-1).expand_as(given["w"]),
    }
    kda = linbench.attention(given["q"], given["k"], given["v"], variant="kda", g=given["g"], beta=beta)
    torch.testing.assert_close(_gdn2(collapsed, "chunked"), kda, rtol=1e-10, atol=1e-10)


def test_the_write_gate_is_per_value_channel_and_checked_in_one_line() -> None:
    given = _inputs()
    with pytest.raises(ValueError, match=r"w must have shape \(B, H, S, Dv\) = \(1, 4, 19, 6\); got \(1, 4, 19, 8\)"):
        _gdn2(given | {"w": torch.rand(1, V_HEADS, SEQ, DIM_K, dtype=torch.float64)})
    with pytest.raises(ValueError, match=r"b must lie in \[0, 2\]"):
        _gdn2(given | {"b": given["b"] + 2})


def test_flas_chunk_kernel_declares_its_key_head_dim_limit() -> None:
    """chunk_gdn2 asserts K ≤ 256: declared, so a sweep leaves such a point out with the reason."""
    impls = linbench.get_variant("gdn2").impls
    assert "at most 256" in (impls["fla"].unsupported_reason(512, 64, "bf16", "cuda") or "")
    assert impls["fla"].unsupported_reason(256, 64, "bf16", "cuda") is None
    assert impls["fla-recurrent"].unsupported_reason(512, 64, "bf16", "cuda") is None
