"""One call of an impl for Nsight Compute: ``python -m linbench.runner.profile_call``, run by
``linbench profile`` under ``ncu --profile-from-start off --clock-control none``.

A warm-up call first (the kernels compile, autotune and load their libraries), then the call
between ``torch.cuda.profiler.start()`` and ``stop()``: the only kernels ncu profiles.
"""

from __future__ import annotations

import argparse

import torch

from linbench.api import attention, get_variant
from linbench.check.correctness import make_inputs
from linbench.dtypes import torch_dtype
from linbench.shape import Shape


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="linbench.runner.profile_call")
    parser.add_argument("--variant", required=True)
    parser.add_argument("--impl", required=True)
    parser.add_argument("--mode", choices=("fwd", "fwdbwd"), default="fwd")
    parser.add_argument("--dtype", default="bf16")
    parser.add_argument("--causal", type=int, default=1)
    for axis in ("batch", "heads", "seq", "dim_k", "dim_v"):
        parser.add_argument(f"--{axis}", type=int, required=True)
    args = parser.parse_args(argv)
    device = torch.device("cuda")
    variant = get_variant(args.variant)
    shape = Shape(args.batch, args.heads, args.seq, args.dim_k, args.dim_v)
    q, k, v, keywords = make_inputs(variant, shape, device)
    dtype = torch_dtype(args.dtype)
    backward = args.mode == "fwdbwd"
    leaves = [t.to(dtype).requires_grad_(backward) for t in (q, k, v)]
    extra = {name: t.to(dtype) for name, t in keywords.items()}

    def call() -> None:
        out = attention(*leaves, variant=args.variant, impl=args.impl, causal=bool(args.causal), **extra)
        if backward:
            out.backward(torch.ones_like(out))

    call()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    call()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()


if __name__ == "__main__":
    main()
