"""A gated variant started from a non-zero state, and the final state it returns (CPU, fp64).

The reference is independent of the parameter: the recurrent form over a prefix P and then
the tokens X, whose rows for X must be what every form gives on X alone started from the state
P left. Gradients reach the initial state through every form; the final state is the stream's.
Shapes: H = 2 q/k heads, H_v = 4 value heads (GVA), 37 tokens, strong gates.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import torch
from gated_cases import VARIANTS, one_thread

import linbench
from linbench.errors import ImplUnavailableError
from linbench.variants.feature_forms import fla as fla_common
from linbench.variants.gated import fla as gated_fla

BATCH, HEADS, V_HEADS, PREFIX, SEQ, DIM_K, DIM_V = 1, 2, 4, 11, 37, 8, 6


@pytest.fixture(autouse=True)
def _one_thread() -> Iterator[None]:
    with one_thread():
        yield


def _inputs(name: str, length: int, seed: int) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    inputs = {
        "q": torch.randn(BATCH, HEADS, length, DIM_K, generator=gen, dtype=torch.float64),
        "k": torch.randn(BATCH, HEADS, length, DIM_K, generator=gen, dtype=torch.float64),
        "v": torch.randn(BATCH, V_HEADS, length, DIM_V, generator=gen, dtype=torch.float64),
    }
    for extra in VARIANTS[name].extra_inputs:
        inputs[extra.name] = extra.draw(
            BATCH,
            V_HEADS,
            length,
            DIM_K,
            generator=gen,
            device="cpu",
            dtype=torch.float64,
            regime="strong",
            dim_v=DIM_V,
        )
    return inputs


def _split(inputs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, dict[str, Any]]:
    return inputs["q"], inputs["k"], inputs["v"], {key: t for key, t in inputs.items() if key not in "qkv"}


@pytest.mark.parametrize("name", list(VARIANTS))
def test_every_form_continues_from_the_initial_state_the_prefix_left(name: str) -> None:
    prefix, tokens = _inputs(name, PREFIX, 1), _inputs(name, SEQ, 2)
    whole = {key: torch.cat([prefix[key], tokens[key]], dim=2) for key in prefix}
    stream = VARIANTS[name].stream_attention
    _, left = stream(*_split(prefix)[:3], **_split(prefix)[3])
    want, final = stream(*_split(whole)[:3], **_split(whole)[3])
    state = left.matrix
    assert state.shape == (BATCH, V_HEADS, DIM_K, DIM_V) and float(state.abs().max()) > 0
    q, k, v, extras = _split(tokens)
    outputs, gradients = {}, {}
    for impl, params in (("recurrent", {}), ("chunked", {"chunk_size": 16})):
        start = state.clone().requires_grad_()
        out = linbench.attention(q, k, v, variant=name, impl=impl, initial_state=start, **extras, **params)
        torch.testing.assert_close(out, want[..., PREFIX:, :], rtol=1e-10, atol=1e-10)
        (out * torch.linspace(-1, 1, out.numel(), dtype=out.dtype).view_as(out)).sum().backward()
        outputs[impl], gradients[impl] = out, start.grad
    torch.testing.assert_close(gradients["chunked"], gradients["recurrent"], rtol=1e-10, atol=1e-10)
    assert float(gradients["recurrent"].abs().max()) > 0
    _, after = stream(q, k, v, initial_state=state, **extras)  # the final state, from the state given
    torch.testing.assert_close(after.matrix, final.matrix, rtol=1e-10, atol=1e-10)


def test_an_initial_state_of_the_wrong_shape_or_where_a_form_has_none_is_refused() -> None:
    q, k, v, extras = _split(_inputs("gated-deltanet", SEQ, 3))
    wrong = torch.zeros(BATCH, HEADS, DIM_K, DIM_V)  # per q/k head, not per value head
    with pytest.raises(ValueError, match=r"initial_state must have shape \(B, H_v, Dk, Dv\) = \(1, 4, 8, 6\)"):
        linbench.attention(q, k, v, variant="gated-deltanet", impl="chunked", initial_state=wrong, **extras)
    state = torch.zeros(BATCH, V_HEADS, DIM_K, DIM_V, dtype=torch.float64)
    with pytest.raises(ImplUnavailableError, match="takes no initial_state"):
        linbench.attention(q, k, v, variant="gated-deltanet", impl="quadratic", initial_state=state, **extras)
    with pytest.raises(ValueError, match=r"initial_state must be a tensor .* got str"):
        linbench.attention(q, k, v, variant="gated-deltanet", impl="chunked", initial_state="zeros", **extras)


def test_fla_gets_the_initial_state_as_it_takes_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """(N, H_v, K, V), untransposed, beside the seq-major inputs."""
    seen: dict[str, Any] = {}

    def kernel(**given: Any) -> tuple[torch.Tensor, None]:
        seen.update(given)
        return torch.zeros_like(given["v"]), None

    monkeypatch.setattr(gated_fla, "fla_kernel", lambda module, name: kernel)
    monkeypatch.setattr(fla_common, "fla_unavailable", lambda *args: None)
    q, k, v, extras = _split({key: t.float() for key, t in _inputs("kda", SEQ, 4).items()})
    state = torch.randn(BATCH, V_HEADS, DIM_K, DIM_V)
    linbench.attention(q, k, v, variant="kda", impl="fla", initial_state=state, **extras)
    assert seen["initial_state"] is state and seen["v"].shape == (BATCH, SEQ, V_HEADS, DIM_V)
