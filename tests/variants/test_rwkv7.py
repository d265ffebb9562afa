"""rwkv7 on the CPU: its reduction to the DPLR recurrence against RWKV-7's recurrence as the
paper writes it (the state V×K, transposed from linbench's) and against fla-core's own PyTorch
references for the generalized delta rule (``dplr_recurrence`` and ``dplr_chunkwise``, where fla
is installed; the first's twin in fla_naive.py elsewhere), and its inputs' one-line errors.
Every form against the reference is test_equivalence.py's."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from fla_naive import fla_source, naive

import linbench

HEADS, SEQ, DIM_K, DIM_V = 2, 16, 8, 6


def _inputs(seed: int = 0) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)

    def draw(*size: int) -> torch.Tensor:
        return torch.randn(*size, generator=gen, dtype=torch.float64)

    return {
        "q": draw(1, HEADS, SEQ, DIM_K),
        "k": draw(1, HEADS, SEQ, DIM_K),
        "v": draw(1, HEADS, SEQ, DIM_V),
        "w": -0.6065 * draw(1, HEADS, SEQ, DIM_K).sigmoid(),
        "kk": F.normalize(draw(1, HEADS, SEQ, DIM_K), dim=-1),
        "a": draw(1, HEADS, SEQ, DIM_K).sigmoid(),
    }


def _rwkv7(given: dict[str, torch.Tensor], impl: str = "recurrent", **params: object) -> torch.Tensor:
    extras = {name: given[name] for name in ("w", "kk", "a")}
    return linbench.attention(given["q"], given["k"], given["v"], variant="rwkv7", impl=impl, **extras, **params)


def _paper_recurrence(given: dict[str, torch.Tensor]) -> torch.Tensor:
    """wkv_t = wkv_{t−1} (diag(e^{w_t}) − κ̂_tᵀ (a_t ⊙ κ̂_t)) + v_tᵀ k_t, o_t = wkv_t r_t (V×K)."""
    state = torch.zeros(1, HEADS, DIM_V, DIM_K, dtype=torch.float64)
    rows = []
    for t in range(SEQ):
        w, kk, a = (given[name][:, :, t] for name in ("w", "kk", "a"))
        transition = torch.diag_embed(w.exp()) - kk.unsqueeze(-1) * (a * kk).unsqueeze(-2)
        state = state @ transition + given["v"][:, :, t].unsqueeze(-1) * given["k"][:, :, t].unsqueeze(-2)
        rows.append((state @ given["q"][:, :, t].unsqueeze(-1)).squeeze(-1))
    return torch.stack(rows, dim=2)


@pytest.mark.parametrize("impl", ["recurrent", "chunked", "quadratic"])
def test_rwkv7_is_the_papers_recurrence(impl: str) -> None:
    given = _inputs()
    params = {"chunk_size": 4} if impl == "chunked" else {}  # 16 tokens: several chunks
    torch.testing.assert_close(_rwkv7(given, impl, **params), _paper_recurrence(given), rtol=1e-10, atol=1e-10)


def _fla_dplr(given: dict[str, torch.Tensor]) -> tuple[torch.Tensor, ...]:
    """The (B, H, T, D) arguments of fla's dplr references, as chunk_rwkv7 maps them: a = −κ̂,
    b = κ̂ ⊙ a, gk = w (its references fix q's factor at Dk^-1/2), in fp32: fla's references
    cast every input to fp32 but α (fla-core 0.6.0), so fp64 inputs fail there on mixed dtypes."""
    kk, a = given["kk"], given["a"]
    return tuple(t.float() for t in (given["q"], given["k"], given["v"], -kk, kk * a, given["w"]))


def test_rwkv7_is_flas_dplr_recurrence() -> None:
    given = _inputs(1)
    want, _ = naive("generalized_delta_rule/dplr", "dplr_recurrence")(*_fla_dplr(given))
    got = _rwkv7(given, scale=DIM_K**-0.5)
    torch.testing.assert_close(got, want.double(), rtol=2e-5, atol=2e-5)


@pytest.mark.skipif(fla_source() is None, reason="fla-core is not installed (its dplr_chunkwise)")
def test_flas_dplr_chunkwise_reference_agrees() -> None:
    """fla's chunkwise reference takes whole chunks only (it asserts T % chunk_size == 0)."""
    given = _inputs(2)
    want, _ = naive("generalized_delta_rule/dplr", "dplr_chunkwise")(*_fla_dplr(given), chunk_size=8)
    torch.testing.assert_close(_rwkv7(given, scale=DIM_K**-0.5), want.double(), rtol=2e-5, atol=2e-5)


def test_rwkv7s_inputs_are_checked_in_one_line() -> None:
    given = _inputs()
    with pytest.raises(ValueError, match=r"a must lie in \[0, 1\]"):
        _rwkv7(given | {"a": given["a"] + 1})
    with pytest.raises(ValueError, match=r"w must be ≤ 0"):
        _rwkv7(given | {"w": -given["w"]})
