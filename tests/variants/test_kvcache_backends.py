"""The KV cache's step never runs on cuDNN, which builds a plan for every new key length."""

from __future__ import annotations

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

from linbench.variants.softmax.decode import STEP_BACKENDS, kvcache_prefill, kvcache_step


def test_the_step_backends_leave_cudnn_out() -> None:
    assert torch.nn.attention.SDPBackend.CUDNN_ATTENTION not in STEP_BACKENDS


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_a_cuda_kvcache_step_runs_no_cudnn_attention(dtype: torch.dtype) -> None:
    q, k, v = (torch.randn(1, 4, 256, 64, device="cuda", dtype=dtype) for _ in range(3))
    state = kvcache_prefill(q, k, v, state=None, capacity=300)
    token = [t[..., :1, :] for t in (q, k, v)]
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(3):
            _, state = kvcache_step(*token, state=state)
        torch.cuda.synchronize()
    names = {event.key for event in prof.key_averages()}
    assert not any("cudnn" in name for name in names), sorted(names)
    assert any("scaled_dot_product" in name for name in names), sorted(names)
