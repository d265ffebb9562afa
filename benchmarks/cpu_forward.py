"""Forward time and peak memory of attention impls on CPU, one fresh process per point.

    python benchmarks/cpu_forward.py                       # the variant library's target
    python benchmarks/cpu_forward.py --impl cosine:naive --seq 1024,2048

Each point runs in its own process so that its peak memory does not depend on what ran
before it: libraries are warmed up at a tiny shape, the first full-size call's peak RSS is
the point's memory, and only then is it timed (pinning glibc's mmap threshold instead
would make every allocation fault in fresh pages and slow the timed calls down).
Every point is checked against the variant's reference at a small shape before it is timed.
(`linbench run` supersedes this script for full sweeps.)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys

DEFAULT_IMPLS = "softmax:sdpa,cosine:chunked,cosine:recurrent"


def measure_point(variant: str, impl: str, seq: int, batch: int, heads: int, dim: int) -> dict[str, float]:
    """Check, then time and measure one point; runs inside the worker process."""
    import torch

    import linbench
    from linbench.correctness import Shape, check_impl
    from linbench.measure.memory import PeakRSS
    from linbench.measure.timer import time_cpu

    spec = linbench.get_variant(variant)
    check = check_impl(spec, impl, Shape(1, 2, 100, 16, 16), causal=True, dtype=torch.float32, gradients=False)
    if not check.ok:
        raise SystemExit(f"refusing to time a wrong impl: {check.describe()}")
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(batch, heads, seq, dim, generator=gen) for _ in range(3))
    tiny = (t[..., :8, :].clone() for t in (q, k, v))

    def call() -> torch.Tensor:
        return linbench.attention(q, k, v, variant=variant, impl=impl, causal=True)

    with torch.no_grad():
        # Thread pools and kernels initialise on a tiny call, which leaves no large freed
        # buffers behind for the measured call to reuse.
        linbench.attention(*tiny, variant=variant, impl=impl, causal=True)
        with PeakRSS() as peak:
            call()
        timing = time_cpu(call, warmup_s=0.5, budget_s=5.0, min_reps=3, max_reps=50)
    return {
        "median_ms": timing.median_ms,
        "p20_ms": timing.percentile_ms(20),
        "p80_ms": timing.percentile_ms(80),
        "samples": timing.count,
        "peak_bytes": peak.peak_bytes,
    }


def run_worker(variant: str, impl: str, seq: int, batch: int, heads: int, dim: int) -> dict[str, float]:
    args = [sys.executable, __file__, "--worker", f"{variant}:{impl}", str(seq), str(batch), str(heads), str(dim)]
    proc = subprocess.run(args, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["exit " + str(proc.returncode)])[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of log y against log x: the scaling exponent."""
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly, strict=True)) / sum((a - mx) ** 2 for a in lx)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--impl", default=DEFAULT_IMPLS, help="comma-separated variant:impl list")
    parser.add_argument("--seq", default="4096,8192,16384", help="comma-separated sequence lengths")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--worker", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        name, seq, batch, heads, dim = args.worker
        variant, impl = name.split(":")
        print(json.dumps(measure_point(variant, impl, int(seq), int(batch), int(heads), int(dim))))
        return
    seqs = [int(s) for s in args.seq.split(",")]
    impls = [tuple(item.split(":")) for item in args.impl.split(",")]
    print(f"B={args.batch} H={args.heads} D={args.dim} fp32 causal forward, CPU threads={os.cpu_count()}")
    print(f"{'impl':<20}{'S':>7}{'median ms':>11}{'p20–p80 ms':>18}{'n':>4}{'peak MiB':>10}")
    table: dict[tuple[str, str], dict[int, dict[str, float]]] = {}
    for variant, impl in impls:
        for seq in seqs:
            r = run_worker(variant, impl, seq, args.batch, args.heads, args.dim)
            table.setdefault((variant, impl), {})[seq] = r
            if "error" in r:
                print(f"{variant + ':' + impl:<20}{seq:>7}  error: {r['error']}")
                continue
            spread = f"{r['p20_ms']:.1f}–{r['p80_ms']:.1f}"
            print(
                f"{variant + ':' + impl:<20}{seq:>7}{r['median_ms']:>11.1f}{spread:>18}{r['samples']:>4.0f}"
                f"{r['peak_bytes'] / 2**20:>10.1f}"
            )
    print()
    for (variant, impl), points in table.items():
        ok = {s: p for s, p in points.items() if "error" not in p}
        if len(ok) >= 2:
            xs = sorted(ok)
            t_exp = _slope(xs, [ok[s]["median_ms"] for s in xs])
            m_exp = _slope(xs, [max(ok[s]["peak_bytes"], 1) for s in xs])
            print(f"{variant}:{impl}: time ∝ S^{t_exp:.2f}, peak memory ∝ S^{m_exp:.2f}")
    base = table.get(("softmax", "sdpa"), {})
    for (variant, impl), points in table.items():
        if variant == "softmax":
            continue
        for seq, p in points.items():
            if "error" not in p and "error" not in base.get(seq, {"error": 1}):
                print(f"S={seq}: {variant}:{impl} is {base[seq]['median_ms'] / p['median_ms']:.1f}x softmax:sdpa")


if __name__ == "__main__":
    main()
