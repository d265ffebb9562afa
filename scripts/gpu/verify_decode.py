"""Check `linbench decode`'s GPU time per token against an independent hand-timed loop.

Usage: python scripts/gpu/verify_decode.py RUN_DIR  (a decode run on CUDA, ideally with --cuda-graph)
       python scripts/gpu/verify_decode.py --rehearse RUN_DIR  (on the CPU: drive every row, time nothing)

For every ok row of RUN_DIR/results.csv, the same decoder is prefilled to the same context in
this process (a gated variant's gates and β drawn by the variant's own declarations), and 100
plain steps are timed between two CUDA events (no L2 flush, no per-step events, nothing of
linbench's runner), three times over; then one step is captured in a CUDA graph and 100
replays are timed the same way. A row passes when linbench's median time per token is within
20% of the loops' median, and its `device_ms` (when present) within 20% of the replays'. The
loops' own spread is printed too: an eager step that is launch-bound is host time, and the
host alone moves it between loops. Exit 1 when any row fails.
"""

from __future__ import annotations

import csv
import statistics
import sys
from pathlib import Path

import torch

from linbench.dtypes import torch_dtype
from linbench.variants.extra_inputs import draw_extra_inputs, take_tokens
from linbench.variants.registry import get_variant

STEPS = 100
TOLERANCE = 0.20


class Prepared:
    """A decoder prefilled to a row's context on ``device``, with its next tokens drawn."""

    def __init__(self, row: dict[str, str], device: str) -> None:
        self.variant = get_variant(row["variant"])
        self.decoder = self.variant.decoder(row["impl"])
        b, h, context = int(row["batch"]), int(row["heads"]), int(row["context"])
        dk, dv, dtype = int(row["dim_k"]), int(row["dim_v"]), torch_dtype(row["dtype"])
        total = context + STEPS + 20
        self.params = self.variant.length_params(total, {})
        generator = torch.Generator().manual_seed(1)
        declared = self.variant.extra_inputs

        def extras(n: int) -> dict[str, torch.Tensor]:  # a gated variant's gates and β for n tokens
            return draw_extra_inputs(declared, (b, h, n, dk), generator=generator, device=device, dtype=dtype, dim_v=dv)

        self.state = None
        with torch.no_grad():
            for start in range(0, context, 16384):
                n = min(16384, context - start)
                q, k = (torch.randn(b, h, n, dk, device=device, dtype=dtype) for _ in range(2))
                v = torch.randn(b, h, n, dv, device=device, dtype=dtype)
                self.state = self.decoder.prefill(q, k, v, state=self.state, capacity=total, **self.params, **extras(n))
                del q, k, v
            tokens = [torch.randn(b, h, STEPS + 10, d, device=device, dtype=dtype) for d in (dk, dk, dv)]
            token_extras = extras(STEPS + 10)
        # Every token's q, k, v and gates cut up front, so that nothing but the step is timed.
        self.tokens = [
            ([t[..., i : i + 1, :] for t in tokens], take_tokens(declared, token_extras, i, i + 1))
            for i in range(STEPS + 10)
        ]

    def step(self, i: int) -> None:
        qkv, gates = self.tokens[i]
        _, self.state = self.decoder.step(*qkv, state=self.state, **self.params, **gates)

    def repeat_last(self) -> None:
        """The last token's step from the current state, which it leaves as it is (for a graph)."""
        qkv, gates = self.tokens[-1]
        self.decoder.step(*qkv, state=self.state, **self.params, **gates)


def hand_loop_ms(row: dict[str, str]) -> tuple[list[float], float]:
    prepared = Prepared(row, "cuda")
    with torch.no_grad():
        for i in range(5):  # warm-up steps, untimed
            prepared.step(i)
        loops = []
        for _ in range(3):  # the same 100 tokens each time, from a state that moves on
            start_event, end_event = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            start_event.record()
            for i in range(5, 5 + STEPS):
                prepared.step(i)
            end_event.record()
            torch.cuda.synchronize()
            loops.append(start_event.elapsed_time(end_event) / STEPS)
            if row["impl"] in ("kvcache", "recompute"):
                break  # a cache has room for one pass of the tokens only
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                prepared.repeat_last()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            prepared.repeat_last()
        for _ in range(5):
            graph.replay()
        start_event, end_event = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start_event.record()
        for _ in range(STEPS):
            graph.replay()
        end_event.record()
        torch.cuda.synchronize()
    return loops, start_event.elapsed_time(end_event) / STEPS


def rehearse(run: Path) -> int:
    """On the CPU: prefill every ok row's decoder and take a few steps, timing nothing, so that
    a row this script cannot drive fails here rather than in device time."""
    with (run / "results.csv").open() as handle:
        rows = [row for row in csv.DictReader(handle) if row["status"] == "ok"]
    for row in rows:
        prepared = Prepared(row, "cpu")
        with torch.no_grad():
            for i in range(5):
                prepared.step(i)
            prepared.repeat_last()
        print(
            f"{row['variant']}:{row['impl']} B{row['batch']} context {row['context']}: prefilled and stepped on the CPU"
        )
    return 0


def main(run: Path) -> int:
    with (run / "results.csv").open() as handle:
        rows = [row for row in csv.DictReader(handle) if row["status"] == "ok"]
    failures = 0
    print(
        f"{'decoder':<26} {'batch':>5} {'context':>8} {'eager ms':>9} {'hand loops ms':>22} {'ratio':>6}"
        f" {'graph ms':>9} {'hand replays':>12} {'ratio':>6}"
    )
    for row in rows:
        loops, replay = hand_loop_ms(row)
        loop = statistics.median(loops)
        measured = float(row["time_per_token_ms"])
        ratio = measured / loop
        ok = abs(ratio - 1) <= TOLERANCE
        spread = "/".join(f"{x:.3f}" for x in loops)
        graph_text, graph_ratio = "-", "-"
        if row.get("device_ms"):
            graph_value = float(row["device_ms"])
            graph_ok = abs(graph_value / replay - 1) <= TOLERANCE
            ok = ok and graph_ok
            graph_text, graph_ratio = f"{graph_value:.4f}", f"{graph_value / replay:.2f}"
        failures += not ok
        name = f"{row['variant']}:{row['impl']}"
        print(
            f"{name:<26} {row['batch']:>5} {row['context']:>8} {measured:9.4f} {spread:>22} {ratio:6.2f}"
            f" {graph_text:>9} {replay:12.4f} {graph_ratio:>6} {'ok' if ok else 'OFF'}"
        )
    print(f"{len(rows) - failures} of {len(rows)} rows within {TOLERANCE:.0%} of the hand-timed loop")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--rehearse":
        sys.exit(rehearse(Path(sys.argv[2])))
    sys.exit(main(Path(sys.argv[1])))
