"""The fast CUDA pass against the generic one (the _v1 ops, kept for this one measurement), fla and
SDPA at the standard point: B2 H16 S16k D64, bf16, causal, cosine (its L2 map and s^-σ(m) scale
fused into linbench's kernels) and linear (elu + 1, normalised: the fast pass's split kernels and
its normalised backward), forward and forward + backward, median CUDA-event time and, for the
forward, CUDA-graph replay. Prints a markdown table; --out also writes it to a file (the
results/<gpu>/ table of csrc/cuda/README.md's "What to measure first on a GPU").

Usage: python scripts/gpu/kernel_v1_v2.py [--reps 50] [--out results/h200/kernel-v1-v2.md]
Needs a GPU, the CUDA kernels built (linbench build) and, for the fla row, fla-core.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable, Iterator
from pathlib import Path

import torch
import torch.nn.functional as F

import linbench
from linbench.kernels.ops import kernel_ops
from linbench.variants.cosine.features import value_scale

B, H, S, D = 2, 16, 16384, 64


def event_ms(call: Callable[[], object], reps: int) -> float:
    """Median of `reps` CUDA-event timings of `call`, after three warm calls."""
    for _ in range(3):
        call()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def graph_ms(call: Callable[[], object], reps: int) -> float | None:
    """The same, replaying one CUDA graph of `call` (None where it cannot be captured)."""
    try:
        call()
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            call()
    except Exception:  # an impl that cannot be captured (a host sync, an allocation): no replay figure
        return None
    return event_ms(graph.replay, reps)


def impls(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> dict[str, Callable[..., torch.Tensor]]:
    ops = kernel_ops()
    scale = float(value_scale(0.5, None, H, S, v))

    def cosine(forward: Callable[..., tuple[torch.Tensor, torch.Tensor]]) -> Callable[..., torch.Tensor]:
        return lambda *t: forward(*t, None, True, False, 0.0, 64, 1, scale)[0]

    def linear(forward: Callable[..., tuple[torch.Tensor, torch.Tensor]]) -> Callable[..., torch.Tensor]:
        return lambda *t: forward(*t, None, True, True, 1e-6, 64, 2, 1.0)[0]

    # In the order they are worth: a run cut off at its limit keeps the first rows.
    return {
        "cosine: fast pass (linear_attention_forward)": cosine(ops.linear_attention_forward),
        "cosine: generic pass (linear_attention_forward_v1)": cosine(ops.linear_attention_forward_v1),
        "cosine:fla": lambda *t: linbench.attention(*t, variant="cosine", impl="fla", causal=True),
        "softmax: SDPA (default backend)": lambda *t: F.scaled_dot_product_attention(*t, is_causal=True),
        "linear: fast pass, normalised (linear_attention_forward)": linear(ops.linear_attention_forward),
        "linear: generic pass, normalised (linear_attention_forward_v1)": linear(ops.linear_attention_forward_v1),
        "linear:fla": lambda *t: linbench.attention(*t, variant="linear", impl="fla", causal=True),
    }


def measure(reps: int) -> Iterator[str]:
    """The table's lines, each row as soon as it is measured."""
    q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
    grad = torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16)
    yield "| impl | forward | forward, graph replay | forward + backward |"
    yield "|---|---|---|---|"
    for name, fn in impls(q, k, v).items():
        try:
            with torch.no_grad():
                fwd = event_ms(lambda fn=fn: fn(q, k, v), reps)
                replay = graph_ms(lambda fn=fn: fn(q, k, v), reps)
            both = event_ms(lambda fn=fn: torch.autograd.grad(fn(q, k, v), (q, k, v), grad), reps)
        except Exception as exc:  # one impl failing (fla missing, say) leaves the others' rows
            yield f"| {name} | failed: {type(exc).__name__}: {str(exc)[:80]} | | |"
            continue
        shown = "–" if replay is None else f"{replay:.3f} ms"
        yield f"| {name} | {fwd:.3f} ms | {shown} | {both:.3f} ms |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    header = f"{torch.cuda.get_device_name()}, torch {torch.__version__}: B{B} H{H} S{S} D{D}, bf16, causal"
    lines = [header, ""]
    print(*lines, sep="\n", flush=True)
    for line in measure(args.reps):  # printed as it comes: a run cut off keeps the rows it measured
        lines.append(line)
        print(line, flush=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
