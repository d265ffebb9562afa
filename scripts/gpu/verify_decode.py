"""Check `linbench decode`'s GPU time per token against an independent hand-timed loop.

Usage: python scripts/gpu/verify_decode.py RUN_DIR  (a decode run on CUDA, ideally with --cuda-graph)

For every ok row of RUN_DIR/results.csv, the same decoder is prefilled to the same context in
this process, and 100 plain steps are timed between two CUDA events (no L2 flush, no per-step
events, nothing of linbench's runner), three times over; then one step is captured in a CUDA
graph and 100 replays are timed the same way. A row passes when linbench's median time per
token is within 20% of the loops' median, and its `device_ms` (when present) within 20% of the
replays'. The loops' own spread is printed too: an eager step that is launch-bound is host
time, and the host alone moves it between loops. Exit 1 when any row fails.
"""

from __future__ import annotations

import csv
import statistics
import sys
from pathlib import Path

import torch

from linbench.dtypes import torch_dtype
from linbench.variants.registry import get_variant

STEPS = 100
TOLERANCE = 0.20


def hand_loop_ms(variant_name: str, decoder_name: str, row: dict[str, str]) -> tuple[list[float], float]:
    variant = get_variant(variant_name)
    decoder = variant.decoder(decoder_name)
    b, h, context = int(row["batch"]), int(row["heads"]), int(row["context"])
    dk, dv, dtype = int(row["dim_k"]), int(row["dim_v"]), torch_dtype(row["dtype"])
    total = context + STEPS + 20
    params = variant.length_params(total, {})
    state = None
    with torch.no_grad():
        for start in range(0, context, 16384):
            n = min(16384, context - start)
            q, k = (torch.randn(b, h, n, dk, device="cuda", dtype=dtype) for _ in range(2))
            v = torch.randn(b, h, n, dv, device="cuda", dtype=dtype)
            state = decoder.prefill(q, k, v, state=state, capacity=total, **params)
            del q, k, v
        tokens = [torch.randn(b, h, STEPS + 10, d, device="cuda", dtype=dtype) for d in (dk, dk, dv)]
        for i in range(5):  # warm-up steps, untimed
            _, state = decoder.step(*(t[..., i : i + 1, :] for t in tokens), state=state, **params)
        loops = []
        for _ in range(3):  # the same 100 tokens each time, from a state that moves on
            start_event, end_event = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            start_event.record()
            for i in range(5, 5 + STEPS):
                _, state = decoder.step(*(t[..., i : i + 1, :] for t in tokens), state=state, **params)
            end_event.record()
            torch.cuda.synchronize()
            loops.append(start_event.elapsed_time(end_event) / STEPS)
            if decoder_name in ("kvcache", "recompute"):
                break  # a cache has room for one pass of the tokens only
        token = [t[..., -1:, :] for t in tokens]
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                decoder.step(*token, state=state, **params)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            decoder.step(*token, state=state, **params)
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


def main(run: Path) -> int:
    with (run / "results.csv").open() as handle:
        rows = [row for row in csv.DictReader(handle) if row["status"] == "ok"]
    failures = 0
    print(
        f"{'decoder':<20} {'context':>8} {'eager ms':>9} {'hand loops ms':>22} {'ratio':>6}"
        f" {'graph ms':>9} {'hand replays':>12} {'ratio':>6}"
    )
    for row in rows:
        loops, replay = hand_loop_ms(row["variant"], row["impl"], row)
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
            f"{name:<20} {row['context']:>8} {measured:9.4f} {spread:>22} {ratio:6.2f}"
            f" {graph_text:>9} {replay:12.4f} {graph_ratio:>6} {'ok' if ok else 'OFF'}"
        )
    print(f"{len(rows) - failures} of {len(rows)} rows within {TOLERANCE:.0%} of the hand-timed loop")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
