"""The gated forms' numerical building blocks (CPU)."""

from __future__ import annotations

import pytest
import torch

from linbench.variants.gated.numerics import chunk_length, decay_matrix, resolve_scale, to_chunks
from linbench.variants.gated.triangular import unit_lower_inverse


@pytest.mark.parametrize("size", [1, 16, 17, 64, 100])
def test_the_blocked_inverse_inverts_i_plus_the_strict_lower_part(size: int) -> None:
    """Only A's strictly lower part is read: the diagonal and upper garbage here must not matter."""
    gen = torch.Generator().manual_seed(size)
    strict = torch.randn(3, size, size, generator=gen, dtype=torch.float64) * 0.3
    want = torch.linalg.inv(torch.eye(size, dtype=torch.float64) + strict.tril(-1))
    torch.testing.assert_close(unit_lower_inverse(strict), want, rtol=1e-10, atol=1e-10)


def test_decay_matrix_stays_finite_when_the_gates_forget_everything() -> None:
    """Cumulative log-decays down to −1e4: e^{−G_s} alone would overflow even fp64."""
    b = torch.linspace(0, -1e4, 64, dtype=torch.float32)
    decay = decay_matrix(b)
    assert torch.isfinite(decay).all()
    assert torch.equal(decay.diagonal(), torch.ones(64))
    assert decay.triu(1).abs().sum() == 0 and float(decay[1, 0]) == pytest.approx(float(torch.exp(b[1] - b[0])))


def test_to_chunks_pads_the_tail_with_zeros() -> None:
    x = torch.arange(1.0, 8.0).reshape(1, 1, 7, 1)
    chunks = to_chunks(x, 3)
    assert chunks.shape == (1, 1, 3, 3, 1)
    assert chunks.flatten().tolist() == [1, 2, 3, 4, 5, 6, 7, 0, 0]
    assert to_chunks(torch.ones(2, 5), 5, seq_dim=-1).shape == (2, 1, 5)


def test_parameters_are_checked() -> None:
    assert resolve_scale(None, 64) == 0.125 and resolve_scale(2, 64) == 2.0
    for bad in (0, -1.0, float("nan"), True, "1"):
        with pytest.raises(ValueError, match="parameter scale must be a positive number or None"):
            resolve_scale(bad, 64)
    assert chunk_length(64) == 64
    for bad in (0, 2.5, True):
        with pytest.raises(ValueError, match="parameter chunk_size must be a positive integer"):
            chunk_length(bad)
