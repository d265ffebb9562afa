"""mamba2's mamba-ssm impl and decoder checked against the fp64 reference under Triton's
interpreter, on the CPU: run as its own process by
tests/variants/test_mamba2_mamba_ssm_interpreted.py (TRITON_INTERPRET must be set before triton
is first imported).

Tiny shapes (the interpreter runs every program instance in numpy): 2 groups of q/k heads
serving 4 value heads, a chunk of 16 over 24 tokens (the last chunk partial). Prints one JSON
line per case: its name, ok and what failed. ``planted``: the chunk scan handed half of D (a
wrong skip), which the check must catch.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any

os.environ["TRITON_INTERPRET"] = "1"

import torch

import linbench
from linbench.check.correctness import check_decoder, check_impl, make_inputs
from linbench.check.packed import check_packed
from linbench.shape import Shape
from linbench.variants.backends import take_noted
from linbench.variants.gated.mamba2 import ssd
from linbench.variants.serving import Accept, Server

VARIANT = linbench.get_variant("mamba2")
GROUPED = Shape(1, 2, 24, 8, 8, v_heads=4)
CHUNK = {"chunk_size": 16}
CONTEXTS, STEPS, SLOTS = (6, 3, 6), 2, 11  # mixed: two requests share a context


def _case(check: Callable[[], Any]) -> dict[str, Any]:
    result = check()
    return {"ok": result.ok, "failed": None if result.ok else result.describe()}


def initial_state() -> dict[str, Any]:
    """From a given state: out and every gradient (the state's too) against the recurrent form."""
    q, k, v, keywords = make_inputs(VARIANT, Shape(1, 2, 24, 8, 8, v_heads=4), "cpu", seed=2)
    start = torch.randn(1, 4, 8, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    errors = []
    got: dict[str, list[torch.Tensor]] = {}
    for impl, dtype in (("recurrent", torch.float64), ("mamba-ssm", torch.float32)):
        leaves = [t.detach().to(dtype).requires_grad_() for t in (q, k, v, start)]
        given = {name: t.detach().to(dtype).requires_grad_() for name, t in keywords.items()}
        params = CHUNK if impl == "mamba-ssm" else {}
        out = linbench.attention(*leaves[:3], variant="mamba2", impl=impl, initial_state=leaves[3], **given, **params)
        grads = torch.autograd.grad(out.sum() + (out**2).sum(), [*leaves, *given.values()])
        got[impl] = [out.detach().double(), *(g.double() for g in grads)]
    for want, have in zip(got["recurrent"], got["mamba-ssm"], strict=True):
        errors.append(float((want - have).abs().max() / want.abs().max().clamp_min(1e-30)))
    return {"ok": max(errors) < 1e-4, "failed": None if max(errors) < 1e-4 else f"relative errors {errors}"}


def served(per_step: int, layout: str) -> dict[str, Any]:
    """A batch at mixed contexts in a pool of scattered slots, T tokens a step, acceptance by
    request: every accepted token's output against the fp64 forward; idle slots untouched."""
    total = max(CONTEXTS) + STEPS * per_step
    q, k, v, keywords = make_inputs(VARIANT, Shape(len(CONTEXTS), 2, total, 8, 8, v_heads=4), "cpu", seed=4)
    extras = {"dt": keywords.pop("dt")}
    expected = linbench.attention(q, k, v, variant="mamba2", impl="recurrent", **keywords, **extras)
    low = [x.float() for x in (q, k, v)]
    params = {name: t.float() for name, t in keywords.items()}
    decoder = VARIANT.decoder("mamba-ssm")
    server = Server(decoder, params, VARIANT.extra_inputs, CONTEXTS, slots=SLOTS, dtype=torch.float32,
                    state_dtype=None, state_layout=layout, tokens_per_step=per_step, seed=1)  # fmt: skip

    def cut(x: torch.Tensor, rows: list[int], start: int, stop: int) -> torch.Tensor:
        return x[rows][..., start:stop, :] if x.ndim == 4 else x[rows][..., start:stop]

    def draw(rows: torch.Tensor, start: int, stop: int) -> Any:
        picked = rows.tolist()
        return (*(cut(x, picked, start, stop) for x in low), {"dt": cut(extras["dt"].float(), picked, start, stop)})

    server.prefill(draw, capacity=total)
    assert server.pool is not None
    held = set(server.token_slots.flatten().tolist())
    idle = torch.tensor([s for s in range(SLOTS) if s not in held], dtype=torch.long)
    server.pool.matrix[idle] = 7.0
    counts = Accept(rate=0.5).draw(per_step, len(CONTEXTS), STEPS, seed=5)
    worst = 0.0
    for step in range(STEPS):
        starts = list(server.positions)
        pieces = [torch.stack([x[b, :, s : s + per_step] for b, s in enumerate(starts)]) for x in low]
        dt = torch.stack([extras["dt"][b, :, s : s + per_step].float() for b, s in enumerate(starts)])
        out = server.step((*pieces, {"dt": dt}), counts[step])
        for b, start in enumerate(starts):
            n = int(counts[step, b])
            worst = max(worst, float((out[b, :, :n].double() - expected[b, :, start : start + n]).abs().max()))
    untouched = bool((server.pool.matrix[idle] == 7.0).all())
    ok = worst < 1e-4 and untouched
    return {"ok": ok, "failed": None if ok else f"max error {worst}, idle slots untouched {untouched}"}


def plant_half_skip() -> None:
    """Half of D handed to the chunk scan: a wrong skip."""
    right = ssd.head_parameters

    def halved(params: dict[str, Any], heads: int, like: torch.Tensor) -> dict[str, torch.Tensor]:
        found = right(params, heads, like)
        return found | {"D": found["D"] * 0.5}

    ssd.head_parameters = halved  # type: ignore[assignment]


F32 = torch.float32
CASES: dict[str, Callable[[], dict[str, Any]]] = {
    "chunk scan": lambda: _case(
        lambda: check_impl(VARIANT, "mamba-ssm", GROUPED, causal=True, dtype=F32, params=CHUNK)
    ),
    "chunk scan fp16": lambda: _case(
        lambda: check_impl(VARIANT, "mamba-ssm", GROUPED, causal=True, dtype=torch.float16, params=CHUNK)
    ),
    "initial state": initial_state,
    "packed": lambda: _case(
        lambda: check_packed(
            VARIANT, "mamba-ssm", (13, 22), 2, 8, 8, packing="packed", causal=True, dtype=F32, params=CHUNK
        )
    ),
    "decoder": lambda: _case(lambda: check_decoder(VARIANT, "mamba-ssm", GROUPED, steps=3, dtype=F32)),
    "served T1 v-last": lambda: served(1, "v-last"),
    "served T3 k-last": lambda: served(3, "k-last"),
    "served T3 v-last": lambda: served(3, "v-last"),
    "served T1 k-last": lambda: served(1, "k-last"),
}


def main(argv: list[str]) -> None:
    """The cases named (all when none is), then ``planted``: the chunk scan with half the skip."""
    for name in argv or [*CASES, "planted"]:
        started, cpu = time.perf_counter(), time.process_time()
        if name == "planted":  # outputs alone: the skip is in every output
            plant_half_skip()
            found = _case(
                lambda: check_impl(VARIANT, "mamba-ssm", GROUPED, causal=True, dtype=F32, params=CHUNK, gradients=False)
            )
        else:
            found = CASES[name]()
        line = {"case": name, **found, "backend": take_noted(), "seconds": round(time.perf_counter() - started, 2),
                "cpu_seconds": round(time.process_time() - cpu, 2)}  # fmt: skip
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
