"""The loop forms' backward stays linear in S (CPU): no autograd node that costs a
full-size gradient per token or per chunk.

A slice or an index of an input (SliceBackward0, SelectBackward0) and a write into a
slice of an output (CopySlices) each make a gradient as large as the whole tensor in the
backward, once per chunk or token: the backward became quadratic in S (cosine:recurrent
fwd+bwd took 1.3 s at 1k tokens and 4.5 s at 2k). Tokens and chunks are taken by unbind or
split and joined by stack or cat instead, one node each. The graph is checked, not timed.
"""

from __future__ import annotations

import pytest
import torch

import linbench
from linbench.variants.extra_inputs import draw_extra_inputs

PER_PIECE_NODES = {"SliceBackward0", "SelectBackward0", "CopySlices", "AsStridedBackward0"}
FORMS = ("chunked", "recurrent")
LOOP_FORMS = [
    ("cosine", "chunked"),
    ("cosine", "recurrent"),
    ("linear", "chunked"),
    ("linear", "recurrent"),
    ("cosformer", "chunked"),
    ("cosformer", "recurrent"),
    ("heinsen", "chunked"),
    ("heinsen", "recurrent"),
    *((gated, form) for gated in ("retention", "simple-gla", "gla", "deltanet", "gated-deltanet") for form in FORMS),
]


def _node_names(out: torch.Tensor) -> dict[str, int]:
    counts: dict[str, int] = {}
    seen: set[int] = set()
    stack = [out.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        name = type(node).__name__
        counts[name] = counts.get(name, 0) + 1
        stack.extend(next_fn for next_fn, _ in node.next_functions)
    return counts


@pytest.mark.parametrize(("variant", "impl"), LOOP_FORMS, ids=lambda x: str(x))
@pytest.mark.parametrize("causal", [True, False], ids=["causal", "bidirectional"])
def test_the_backward_graph_has_no_node_per_token_or_chunk_that_costs_a_whole_gradient(
    variant: str, impl: str, causal: bool
) -> None:
    spec = linbench.get_variant(variant)
    if spec.masking_reason(causal):
        pytest.skip(spec.masking_reason(causal))
    seq = 40  # several chunks at the chunk sizes below, many tokens
    q, k, v = (torch.randn(1, 2, seq, 8, dtype=torch.float64, requires_grad=True) for _ in range(3))
    # The gates and β take gradients too: their per-token pieces must not cost a whole gradient each.
    extras = draw_extra_inputs(
        spec.extra_inputs, (1, 2, seq, 8), generator=torch.Generator(), device="cpu", dtype=q.dtype, dim_v=8
    )
    params = {"chunk_size": 8} if impl == "chunked" else {}
    given = {name: t.requires_grad_() for name, t in extras.items()}
    out = linbench.attention(q, k, v, variant=variant, impl=impl, causal=causal, **params, **given)
    counts = _node_names(out)
    costly = {name: n for name, n in counts.items() if name in PER_PIECE_NODES and n > 1}
    assert not costly, f"{variant}:{impl}: {costly}"
