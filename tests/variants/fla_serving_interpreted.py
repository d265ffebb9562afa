"""fla's decoders served under Triton's interpreter on the CPU: run as its own process by
tests/variants/test_fla_serving_interpreted.py (TRITON_INTERPRET must be set before triton and
fla are first imported).

Each case serves a batch of requests at mixed contexts, their slots scattered in a pool larger
than the batch, T tokens a step with acceptance that differs by request, and checks every
request's outputs, request by request, against the variant's fp64 forward over its accepted
tokens, and that the slots no request names are untouched. Prints one JSON line per case.
``gated-deltanet plain`` and ``kda plain`` are each decoder unserved, as decode's correctness
gate runs it. ``planted`` serves "kda T3 rate" with the kernel told every request kept one
token fewer than it did, which the check must catch; ``workload`` is a served point as
``linbench decode`` measures it. ``... served gate HV4`` runs decode's served correctness gate
(linbench/runner/serving_gate.py) on a point with 4 value heads for 2 q/k heads, T = 2.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

os.environ["TRITON_INTERPRET"] = "1"

import torch

import linbench
from linbench.check.correctness import Shape, check_decoder, make_inputs
from linbench.variants.backends import take_noted
from linbench.variants.serving import Accept, Server

CONTEXTS = (5, 9, 9, 3)  # mixed: two requests share a context (one prefill group of two)
STEPS = 3
SLOTS = 13  # scattered: more than the batch × T of the widest case
# Each case: variant, tokens a step, the accept pattern, the pool's state dtype and layout.
CASES: dict[str, tuple[str, int, Accept, torch.dtype | None, str]] = {
    "kda T1": ("kda", 1, Accept(), None, "v-last"),
    "kda T3 rate": ("kda", 3, Accept(rate=0.5), None, "v-last"),
    "kda T3 rate k-last": ("kda", 3, Accept(rate=0.5), None, "k-last"),
    "kda T2 bf16 pool": ("kda", 2, Accept(rate=0.5), torch.bfloat16, "v-last"),
    "gated-deltanet T3 rate": ("gated-deltanet", 3, Accept(rate=0.5), None, "v-last"),
    "gated-deltanet T2 k-last": ("gated-deltanet", 2, Accept(rate=0.5), None, "k-last"),
    "gdn2 T3 rate k-last": ("gdn2", 3, Accept(rate=0.5), None, "k-last"),
    "rwkv7 T2 rate": ("rwkv7", 2, Accept(rate=0.5), None, "v-last"),
}


def _rows(value: torch.Tensor, starts: list[int], length: int) -> torch.Tensor:
    return torch.stack([value[b, :, start : start + length] for b, start in enumerate(starts)])


def serve(case: str, plant: bool = False) -> dict[str, Any]:
    """The case served step by step; the largest error against the fp64 forward and whether
    the slots no request holds kept their contents."""
    name, per_step, accept, state_dtype, layout = CASES[case]
    variant = linbench.get_variant(name)
    total = max(CONTEXTS) + STEPS * per_step
    q, k, v, keywords = make_inputs(variant, Shape(len(CONTEXTS), 2, total, 8, 8), "cpu", seed=3)
    extras = {e.name: keywords.pop(e.name) for e in variant.extra_inputs}
    params = variant.length_params(total, keywords)
    expected = linbench.attention(q, k, v, variant=name, impl=variant.reference, causal=True, **params, **extras)
    low = [x.float() for x in (q, k, v)]
    low_extras = {name: value.float() for name, value in extras.items()}
    server = Server(
        variant.decoder("fla-recurrent"), params, variant.extra_inputs, CONTEXTS, slots=SLOTS,
        dtype=torch.float32, state_dtype=state_dtype, state_layout=layout, tokens_per_step=per_step, seed=1,
    )  # fmt: skip

    def draw(rows: torch.Tensor, start: int, stop: int) -> Any:
        picked = rows.tolist()
        q_, k_, v_ = (x[picked][..., start:stop, :] for x in low)
        return q_, k_, v_, {e.name: e.tokens(low_extras[e.name][picked], start, stop) for e in variant.extra_inputs}

    server.prefill(draw, capacity=total)
    assert server.pool is not None
    held = set(server.token_slots.flatten().tolist())
    idle = torch.tensor([s for s in range(SLOTS) if s not in held], dtype=torch.long)
    server.pool.matrix[idle] = 7.0  # what no request holds must stay as it was
    counts = accept.draw(per_step, len(CONTEXTS), STEPS, seed=5)
    worst = 0.0
    for step in range(STEPS):
        starts = list(server.positions)
        tokens = (
            *(_rows(x, starts, per_step) for x in low),
            {n: _rows(e, starts, per_step) for n, e in low_extras.items()},
        )
        kept = (counts[step] - 1).clamp_min(1) if plant else counts[step]
        out = server.step(tokens, kept)
        for b, start in enumerate(starts):
            # Only the accepted tokens are the request's: the rest are drafts that were rolled back.
            n = int(counts[step, b])
            error = (out[b, :, :n].double() - expected[b, :, start : start + n]).abs().max()
            worst = max(worst, float(error))
        if plant:
            server.positions = [s + int(n) for s, n in zip(starts, counts[step], strict=True)]
    untouched = bool((server.pool.matrix[idle].float() == 7.0).all())
    return {"max_error": worst, "untouched": untouched, "backend": take_noted()}


def workload() -> dict[str, Any]:
    """A serving point of kda:fla-recurrent as ``linbench decode`` measures it (T = 2, a k-last
    bf16 pool): the steps, the readings, and the steps a CUDA graph would capture, run eagerly
    over rotating pools."""
    from linbench.runner.serving_workload import ServingWorkload
    from linbench.shape import Shape as PointShape
    from linbench.sweep.points import Point
    from linbench.sweep.serving import Serving

    serving = Serving(accept="1", drift_steps=4)
    shape = PointShape(3, 2, 6, 8, 8)
    point = Point("kda", "fla-recurrent", "decode", True, "fp32", "cpu", shape, tokens_per_step=2,
                  state_dtype="bf16", state_layout="k-last", serving=serving)  # fmt: skip
    work = ServingWorkload(point, torch.device("cpu"), 2)
    work.prefill()
    work.run()
    take_noted()
    readings = work.readings()
    pool = work.server.pool
    assert pool is not None
    steps = work.graph_steps(2)
    before = pool.matrix.clone()
    steps[1]()  # a copy's step: the server's own pool is untouched
    own_untouched = bool(torch.equal(pool.matrix, before))
    steps[0]()
    used = work.server.token_slots.flatten()
    return {
        "slots": work.server.slot_count,
        "pool_shape": list(pool.matrix.shape),
        "pool_dtype": str(pool.matrix.dtype),
        "state_bytes_per_request": readings["state_bytes_per_request"],
        "state_drift": readings["state_drift"],
        "copy_left_own_pool": own_untouched,
        "own_step_wrote_slots": not bool(torch.equal(pool.matrix[used], before[used])),
        "backend": take_noted(),
    }


def plain(name: str) -> dict[str, Any]:
    """The decoder as ``linbench decode``'s correctness gate runs it: a prefill, then 4 steps
    against the last rows of the fp64 reference."""
    result = check_decoder(
        linbench.get_variant(name), "fla-recurrent", Shape(1, 2, 40, 16, 16), steps=4, dtype=torch.float32
    )
    return {"ok": result.ok, "failed": None if result.ok else result.describe()}


PLAIN = {"gated-deltanet plain": "gated-deltanet", "kda plain": "kda", "gdn2 plain": "gdn2", "rwkv7 plain": "rwkv7"}


def served_gate(name: str) -> dict[str, Any]:
    """Decode's gate of a serving point with more value heads than q/k heads (GVA), T = 2."""
    from linbench.runner.serving_gate import check_served
    from linbench.shape import Shape as PointShape
    from linbench.sweep.points import Point
    from linbench.sweep.serving import Serving

    shape = PointShape(2, 2, 8, 8, 8, v_heads=4)
    point = Point(name, "fla-recurrent", "decode", True, "fp32", "cpu", shape, tokens_per_step=2,
                  serving=Serving(accept="1"))  # fmt: skip
    result = check_served(point, torch.device("cpu"), 0, None)
    return {"ok": result.ok, "failed": None if result.ok else result.describe(), "backend": take_noted()}


SERVED_GATE = {"gated-deltanet served gate HV4": "gated-deltanet", "kda served gate HV4": "kda"}


def main(argv: list[str]) -> None:
    for case in argv or [*CASES, "planted", "workload", *PLAIN, *SERVED_GATE]:
        started = time.perf_counter()
        if case in PLAIN:
            found = plain(PLAIN[case])
        elif case in SERVED_GATE:
            found = served_gate(SERVED_GATE[case])
        elif case == "workload":
            found = workload()
        else:
            found = serve("kda T3 rate", plant=True) if case == "planted" else serve(case)
        line = {"case": case, **found, "seconds": round(time.perf_counter() - started, 2)}
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
