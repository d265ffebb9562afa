"""Plant a known slowdown in one cosine:kernel point of a linbench tree, for checking the gate.

Usage: python scripts/gpu/plant.py TREE SEQ PERCENT [DEVICE]

Times cosine:kernel's forward at the ci-gpu shape (B4 H16 D64, bf16, causal; on the CPU, where
this is only rehearsed, B1 H2 D16 fp32) at length SEQ, then rewrites
TREE/linbench/variants/cosine/kernel.py so that every call at that length first waits PERCENT of
the measured time. On a GPU the wait is ``torch.cuda._sleep`` (device work on the call's stream,
its cycles per millisecond timed here), so it is in event times and CUDA-graph replays alike; on
the CPU it is a busy loop. Every other point is left as it was. The planted delay is printed; a
gate that then calls that point "same" has missed it. This edits a throwaway copy: never run it
on a checkout you mean to keep.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

ANCHOR = "    scale = float(value_scale(norm_const, seq_len, heads, seq, v))\n"


def median_ms(fn: Callable[[], object], cuda: bool, reps: int = 30) -> float:
    for _ in range(5):
        fn()
    times = []
    for _ in range(reps):
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
        else:
            begin = time.perf_counter()
            fn()
            times.append((time.perf_counter() - begin) * 1e3)
    return statistics.median(times)


def main(tree: Path, seq: int, percent: float, device: str) -> int:
    import linbench

    cuda = device == "cuda"
    shape, dtype = ((4, 16, seq, 64), torch.bfloat16) if cuda else ((1, 2, seq, 16), torch.float32)
    q, k, v = (torch.randn(*shape, device=device, dtype=dtype) for _ in range(3))
    with torch.no_grad():
        point_ms = median_ms(lambda: linbench.attention(q, k, v, variant="cosine", impl="kernel", causal=True), cuda)
    delay_ms = point_ms * percent / 100
    if cuda:
        probe_cycles = 10_000_000
        sleep_ms = median_ms(lambda: torch.cuda._sleep(probe_cycles), cuda, reps=10)
        cycles = int(probe_cycles * delay_ms / sleep_ms)
        spin = f"        torch.cuda._sleep({cycles})  # planted\n"
        what = f"{cycles} GPU cycles at {probe_cycles / sleep_ms / 1e6:.2f} GHz"
    else:
        spin = (
            "        import time  # planted\n"
            f"        until = time.perf_counter() + {delay_ms / 1e3!r}  # planted\n"
            "        while time.perf_counter() < until:  # planted\n"
            "            pass  # planted\n"
        )
        what = "a busy loop"
    path = tree / "linbench" / "variants" / "cosine" / "kernel.py"
    text = path.read_text()
    if ANCHOR not in text:
        print(f"plant: {path} has changed; the anchor line is gone", file=sys.stderr)
        return 2
    path.write_text(text.replace(ANCHOR, f"    if seq == {seq}:  # planted\n{spin}{ANCHOR}"))
    print(
        f"plant: cosine:kernel fwd at {seq} took {point_ms:.3f} ms; planted +{percent:g}% = {delay_ms:.3f} ms ({what})"
    )
    return 0


if __name__ == "__main__":
    if len(sys.argv) not in (4, 5):
        print("usage: python scripts/gpu/plant.py TREE SEQ PERCENT [DEVICE]", file=sys.stderr)
        sys.exit(2)
    device = sys.argv[4] if len(sys.argv) == 5 else "cuda"
    sys.exit(main(Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), device))
