"""One forward and backward of cosine:kernel at the standard point, for Nsight Compute to profile.

Usage: ncu --clock-control none -k regex:linear_attention --launch-skip 3 --launch-count 3 \
       python scripts/gpu/ncu_kernel.py
(B2 H16 S16k D64, bf16, causal: B·H = 32.) The first call builds and warms the library; a call
launches three linear_attention kernels (its forward, and the forward and backward kernels of
its backward: results/h200/ncu-cosine-kernel.txt), so --launch-skip 3 passes over the first call
and --launch-count 3 profiles the second.
"""

import torch

import linbench

q, k, v = (torch.randn(2, 16, 16384, 64, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
for _ in range(2):
    linbench.attention(q, k, v, variant="cosine", impl="kernel", causal=True).sum().backward()
torch.cuda.synchronize()
