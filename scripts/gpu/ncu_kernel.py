"""One forward and backward of a cosine impl (cosine:kernel by default) at the standard point,
for Nsight Compute to profile.

Usage: ncu --clock-control none -k regex:linear_attention --launch-skip 3 --launch-count 3 \
       python scripts/gpu/ncu_kernel.py [IMPL]
(B2 H16 S16k D64, bf16, causal: B·H = 32.) The first call builds and warms the library; a call
of cosine:kernel launches three linear_attention kernels (its forward, and the forward and
backward kernels of its backward: results/h200/ncu-cosine-kernel.txt), so --launch-skip 3
passes over the first call and --launch-count 3 profiles the second. Another IMPL (a second
kernel kept beside the first) may launch other kernels: give ncu its own -k and counts.
"""

import sys

import torch

import linbench

impl = sys.argv[1] if len(sys.argv) > 1 else "kernel"
q, k, v = (torch.randn(2, 16, 16384, 64, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
for _ in range(2):
    linbench.attention(q, k, v, variant="cosine", impl=impl, causal=True).sum().backward()
torch.cuda.synchronize()
