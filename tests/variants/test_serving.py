"""Serving decode equals the fp64 forward, request by request: pooled slots, mixed contexts,
multi-token steps with rollback (CPU, fp64, tiny shapes)."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import linbench
from linbench.check.correctness import Shape, make_inputs
from linbench.variants.gated.numerics import GatedState
from linbench.variants.serving import Accept, Server
from linbench.variants.slot_pool import SlotPool

DECODERS = [
    pytest.param(name, decoder, id=f"{name}:{decoder}")
    for name in linbench.list_variants()
    for decoder, declared in linbench.get_variant(name).decoders.items()
    if declared.library is None  # fla's: tests/variants/test_fla_serving_interpreted.py
]
CONTEXTS = (5, 11, 11, 3)  # mixed: two requests share a context, so one prefill group is batched
STEPS, T = 4, 3


def _rows(value: torch.Tensor, rows: list[int], starts: list[int], length: int, seq_dim: int) -> torch.Tensor:
    """Each request's ``length`` tokens from its own start, along ``seq_dim``, batched."""
    return torch.stack([value[b].narrow(seq_dim - 1, start, length) for b, start in zip(rows, starts, strict=True)])


def _tokens(
    variant: Any, inputs: tuple[torch.Tensor, ...], extras: dict[str, torch.Tensor], rows: list[int], starts: list[int]
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, dict[str, Any]]:
    q, k, v = (_rows(x, rows, starts, T, 2) for x in inputs)
    cut = {e.name: _rows(extras[e.name], rows, starts, T, 2) for e in variant.extra_inputs}
    return q, k, v, cut


def _serve(
    name: str, decoder: str, accept: Accept, slots: int, device: str = "cpu", layout: str = "v-last", v_heads: int = 0
) -> None:
    variant = linbench.get_variant(name)
    total = max(CONTEXTS) + STEPS * T
    shape = Shape(len(CONTEXTS), 2, total, 8, 8, v_heads=v_heads)
    q, k, v, keywords = make_inputs(variant, shape, device, seed=3)
    extras = {e.name: keywords.pop(e.name) for e in variant.extra_inputs}
    params = variant.length_params(total, keywords)
    expected = linbench.attention(q, k, v, variant=name, impl=variant.reference, causal=True, **params, **extras)
    positional = any(p.from_length for p in variant.param_specs)
    server = Server(
        variant.decoder(decoder), params, variant.extra_inputs, CONTEXTS, slots=slots, dtype=torch.float64,
        state_layout=layout, positional=positional, seed=1,
    )  # fmt: skip

    def draw(rows: torch.Tensor, start: int, stop: int) -> Any:
        picked = rows.tolist()
        q_, k_, v_ = (x[picked][..., start:stop, :] for x in (q, k, v))
        return q_, k_, v_, {e.name: e.tokens(extras[e.name][picked], start, stop) for e in variant.extra_inputs}

    server.prefill(draw, capacity=total)
    counts = accept.draw(T, len(CONTEXTS), STEPS, seed=5)
    batch = list(range(len(CONTEXTS)))
    for step in range(STEPS):
        starts = list(server.positions)
        out = server.step(_tokens(variant, (q, k, v), extras, batch, starts), counts[step])
        for b, start in enumerate(starts):
            torch.testing.assert_close(out[b], expected[b, :, start : start + T], rtol=1e-9, atol=1e-9)
    assert server.positions == [c + int(n) for c, n in zip(CONTEXTS, counts.sum(0), strict=True)]


@pytest.mark.parametrize(("name", "decoder"), DECODERS)
def test_pooled_multi_token_steps_with_rollback_equal_the_fp64_forward(name: str, decoder: str) -> None:
    """Slots scattered in a pool larger than the batch, acceptance that differs by request."""
    _serve(name, decoder, Accept(rate=0.5), slots=7)


@pytest.mark.parametrize(
    ("name", "decoder"), [("gated-deltanet", "recurrent"), ("cosine", "recurrent"), ("cosformer", "recurrent")]
)
def test_a_k_last_pool_serves_the_same_outputs(name: str, decoder: str) -> None:
    """The pool keeps each head's state matrix (H, Dv, Dk) and the step reads it transposed: the
    outputs equal the fp64 forward as the v-last pool's do (cosine's key sum, a vector, as it is)."""
    _serve(name, decoder, Accept(rate=0.5), slots=7, layout="k-last")


@pytest.mark.parametrize("name", ["gated-deltanet", "kda"])
def test_more_value_heads_than_q_k_heads_serve_one_output_head_per_value_head(name: str) -> None:
    """GVA (--v-heads): v, the gates and β per value head, the state per value head, and a step's
    outputs (B, H_v, T, Dv), each equal to the fp64 forward."""
    _serve(name, "recurrent", Accept(rate=0.5), slots=7, v_heads=4)


def test_a_k_last_pool_keeps_the_matrix_transposed() -> None:
    state = GatedState(torch.arange(24.0).view(1, 1, 4, 6), 3)
    pool = SlotPool(state, 3, None, "k-last")
    pool.put(torch.tensor([2]), state)
    assert pool.matrix.shape == (3, 1, 6, 4)
    assert torch.equal(pool.matrix[2, 0], state.matrix[0, 0].t())
    assert torch.equal(pool.take(torch.tensor([2])).matrix, state.matrix)
    with pytest.raises(ValueError, match="the layouts are v-last, k-last"):
        SlotPool(state, 3, None, "k-first")


@pytest.mark.cuda
@pytest.mark.parametrize(
    ("name", "decoder"), [("gated-deltanet", "recurrent"), ("kda", "recurrent"), ("softmax", "kvcache")]
)
def test_serving_on_cuda_equals_the_fp64_forward(name: str, decoder: str) -> None:
    """The same proof with the states and tokens on the GPU (the slots and groups stay on the CPU)."""
    _serve(name, decoder, Accept(rate=0.5), slots=7, device="cuda")


def test_a_fixed_accept_count_keeps_every_request_in_step() -> None:
    _serve("gated-deltanet", "recurrent", Accept(count=2), slots=4)


@pytest.mark.parametrize("text", ["0", "1.5", "-1", "x"])
def test_an_accept_that_is_neither_count_nor_rate_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="accept"):
        Accept.parse(text)


def test_an_accept_count_above_the_tokens_per_step_is_refused() -> None:
    with pytest.raises(ValueError, match="above --tokens-per-step"):
        Accept.parse("5").draw(4, 2, 3)


def test_a_pool_smaller_than_the_batch_is_refused() -> None:
    variant = linbench.get_variant("gated-deltanet")
    with pytest.raises(ValueError, match="pool ≥ batch"):
        Server(variant.decoder("recurrent"), {}, variant.extra_inputs, (4, 4, 4), slots=2, dtype=torch.float32)


def test_a_bf16_pool_keeps_the_state_in_bf16_between_steps() -> None:
    variant = linbench.get_variant("gated-deltanet")
    server = Server(
        variant.decoder("recurrent"), variant.length_params(4, {}), variant.extra_inputs, (4, 4), slots=3,
        dtype=torch.float32,
        state_dtype=torch.bfloat16,
    )  # fmt: skip
    q, k, v, keywords = make_inputs(variant, Shape(2, 2, 4, 8, 8), "cpu")
    server.prefill(lambda rows, a, b: (q.float(), k.float(), v.float(), {n: t.float() for n, t in keywords.items()}), 8)
    assert server.pool is not None
    assert all(t.dtype == torch.bfloat16 for t in server.pool.tensors.values())
    assert server.bytes_per_request == 2 * 8 * 8 * 2  # H·Dk·Dv bf16 values
    assert server.held_bytes == 3 * server.bytes_per_request


def test_a_pool_without_a_slot_per_draft_token_is_refused_for_a_kernel_that_keeps_them() -> None:
    """kda:fla-recurrent's kernel writes each of a step's T states to a slot of its own: a pool
    of 4 requests at T = 2 needs 8 slots (nothing of fla runs to say so)."""
    kda = linbench.get_variant("kda")
    with pytest.raises(ValueError, match=r"pool ≥ batch × tokens per step = 8"):
        Server(kda.decoder("fla-recurrent"), {}, kda.extra_inputs, (3, 3, 3, 3), slots=7, dtype=torch.float32,
               tokens_per_step=2)  # fmt: skip
    server = Server(kda.decoder("fla-recurrent"), {}, kda.extra_inputs, (3, 3), slots=4, dtype=torch.float32,
                    tokens_per_step=2)  # fmt: skip
    assert sorted(server.token_slots.flatten().tolist()) == [0, 1, 2, 3]
    assert torch.equal(server.token_slots[:, 0], server.slots)
