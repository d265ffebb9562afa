"""GPU diagnosis of two wrong numbers: KV-cache decode steps and linear:kernel's bf16 gradients.

Run on a CUDA machine from the repository root: `python scripts/gpu/diagnose.py`. Prints what it
finds and writes the same under $OUT (diagnose.txt). Needs linbench importable (PYTHONPATH=.).

1. KV-cache step: one query against a cache of `context` keys, timed by hand (CUDA events around
   100 plain steps), under SDPA's default choice and with each backend pinned, and profiled.
2. Recurrent step: eager against a CUDA-graph replay of the same step.
3. bf16 gradient error of linear (and cosine) impls, fla if importable and a plain bf16 evaluation
   of the formula, against an fp64 reference, norm-wise and element-wise, over several seeds.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import linbench
from linbench.variants.registry import get_variant
from linbench.variants.softmax.decode import kvcache_prefill, kvcache_step

OUT = Path(os.environ.get("OUT", "/tmp"))
LOG = open(OUT / "diagnose.txt", "w")  # noqa: SIM115 - the whole script's log


def say(*parts: object) -> None:
    line = " ".join(str(p) for p in parts)
    print(line, flush=True)
    LOG.write(line + "\n")
    LOG.flush()


DEV = torch.device("cuda")


def hand_time(step, n: int = 100) -> float:
    """ms per call of ``step`` over ``n`` back-to-back calls between two CUDA events."""
    for _ in range(5):
        step()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(n):
        step()
    b.record()
    torch.cuda.synchronize()
    return a.elapsed_time(b) / n


def kvcache_section() -> None:
    say("== KV-cache decode step (B1 H8 D64 bf16) ==")
    backends = {
        "default": None,
        "flash": SDPBackend.FLASH_ATTENTION,
        "efficient": SDPBackend.EFFICIENT_ATTENTION,
        "cudnn": SDPBackend.CUDNN_ATTENTION,
        "math": SDPBackend.MATH,
    }
    for context in (1024, 16384, 262144):
        gen = torch.Generator(device=DEV).manual_seed(0)
        q, k, v = (torch.randn(1, 8, context, 64, device=DEV, dtype=torch.bfloat16, generator=gen) for _ in range(3))
        for name, backend in backends.items():
            box = [kvcache_prefill(q, k, v, state=None, capacity=context + 200)]
            tok = [torch.randn(1, 8, 1, 64, device=DEV, dtype=torch.bfloat16) for _ in range(3)]

            def step(box=box, tok=tok):
                box[0] = kvcache_step(*tok, state=box[0])[1]

            ctx = sdpa_kernel(backend) if backend is not None else contextlib.nullcontext()
            try:
                with ctx:
                    t0 = time.perf_counter()
                    ms = hand_time(step, n=100)
                    wall = time.perf_counter() - t0
                say(f"context {context:>7} {name:>9}: {ms:8.4f} ms/step (events), wall {wall * 1e3 / 105:8.3f} ms/step")
            except RuntimeError as exc:
                say(f"context {context:>7} {name:>9}: cannot run: {str(exc).splitlines()[0][:120]}")
        # Same length every call: does the default get fast when the shape repeats?
        cache_k, cache_v = k, v
        q1 = torch.randn(1, 8, 1, 64, device=DEV, dtype=torch.bfloat16)
        ms = hand_time(lambda q1=q1, k=cache_k, v=cache_v: F.scaled_dot_product_attention(q1, k, v), n=100)
        say(f"context {context:>7}   default, fixed length (no append): {ms:8.4f} ms/call")
        del q, k, v
    # What the default runs, and where its host time goes.
    context = 16384
    q, k, v = (torch.randn(1, 8, context, 64, device=DEV, dtype=torch.bfloat16) for _ in range(3))
    box = [kvcache_prefill(q, k, v, state=None, capacity=context + 64)]
    tok = [torch.randn(1, 8, 1, 64, device=DEV, dtype=torch.bfloat16) for _ in range(3)]
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(5):
            box[0] = kvcache_step(*tok, state=box[0])[1]
        torch.cuda.synchronize()
    say(prof.key_averages().table(sort_by="cpu_time_total", row_limit=14))
    say(prof.key_averages().table(sort_by="cuda_time_total", row_limit=8))


def recurrent_section() -> None:
    say("== recurrent decode step: eager against a CUDA-graph replay (B1 H8 D64 bf16, context 4k) ==")
    from linbench.variants.decoding import decode  # noqa: F401 - the decoders register with the variants

    for name in ("cosine", "linear", "cosformer", "heinsen"):
        variant = get_variant(name)
        dec = variant.decoder("recurrent")
        context = 4096
        params = variant.length_params(context + 512, {})
        q, k, v = (torch.randn(1, 8, context, 64, device=DEV, dtype=torch.bfloat16) for _ in range(3))
        with torch.no_grad():
            state = dec.prefill(q, k, v, state=None, capacity=context + 512, **params)
            tok = [torch.randn(1, 8, 1, 64, device=DEV, dtype=torch.bfloat16) for _ in range(3)]
            box = [state]

            def step(box=box, dec=dec, tok=tok, params=params):
                box[0] = dec.step(*tok, state=box[0], **params)[1]

            eager = hand_time(step, n=100)
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(3):
                    dec.step(*tok, state=state, **params)
            torch.cuda.current_stream().wait_stream(s)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                dec.step(*tok, state=state, **params)
            replay = hand_time(graph.replay, n=200)
        say(f"{name:>10}:recurrent eager {eager:7.4f} ms/step, graph replay {replay:7.4f} ms/step")


def _norm_err(a: torch.Tensor, e: torch.Tensor) -> float:
    a, e = a.double(), e.double()
    return float((a - e).norm() / e.norm().clamp_min(1e-300))


def _max_over_rms(a: torch.Tensor, e: torch.Tensor) -> float:
    a, e = a.double(), e.double()
    return float((a - e).abs().max() / e.square().mean().sqrt().clamp_min(1e-300))


def _grads(fn, q, k, v, cot):
    leaves = [t.detach().clone().requires_grad_(True) for t in (q, k, v)]
    out = fn(*leaves)
    g = torch.autograd.grad((out.double() * cot).sum(), leaves)
    return {"out": out.detach(), "dq": g[0], "dk": g[1], "dv": g[2]}


def _plain_bf16_linear(q, k, v):
    """The formula evaluated as a plain bf16 program would: features, scores and products in bf16."""
    fq, fk = F.elu(q) + 1, F.elu(k) + 1
    a = (fq @ fk.transpose(-1, -2)).tril()
    return (a @ v) / (a.sum(-1, keepdim=True) + 1e-6)


def _fla_linear(q, k, v):
    from fla.ops.linear_attn import chunk_linear_attn

    t = lambda x: x.transpose(1, 2)  # noqa: E731 - fla's (B, S, H, D)
    o, _ = chunk_linear_attn(t(F.elu(q) + 1), t(F.elu(k) + 1), t(v), scale=1.0, normalize=True)
    return t(o)


def tolerance_section() -> None:
    say("== bf16 error against fp64: linear (elu+1, normalised), B4 H16 S512 D64 causal, fwd+bwd ==")
    say("norm-wise ‖a−e‖/‖e‖ and max|a−e|/rms(e), per tensor; 3 seeds")
    impls = {
        "linear:kernel": lambda q, k, v: linbench.attention(q, k, v, variant="linear", impl="kernel", causal=True),
        "linear:chunked": lambda q, k, v: linbench.attention(q, k, v, variant="linear", impl="chunked", causal=True),
        "plain-bf16": _plain_bf16_linear,
    }
    try:
        import fla  # noqa: F401

        impls["fla:linear"] = _fla_linear
    except Exception as exc:
        say("fla unavailable:", exc)
    ref = lambda q, k, v: linbench.attention(q, k, v, variant="linear", impl="quadratic", causal=True)  # noqa: E731
    for seed in range(3):
        gen = torch.Generator(device="cpu").manual_seed(seed)
        q, k, v = (torch.randn(4, 16, 512, 64, generator=gen, dtype=torch.float64).to(DEV) for _ in range(3))
        cot = torch.randn(4, 16, 512, 64, generator=gen, dtype=torch.float64).to(DEV)
        cot = cot.bfloat16().double()
        q, k, v = (t.bfloat16().double() for t in (q, k, v))
        expected = _grads(ref, q, k, v, cot)
        for name, fn in impls.items():
            try:
                got = _grads(fn, *(t.bfloat16() for t in (q, k, v)), cot)
            except Exception as exc:
                say(f"seed {seed} {name}: raised {exc}")
                continue
            parts = [
                f"{key} {_norm_err(got[key], expected[key]):.2e}/{_max_over_rms(got[key], expected[key]):.2e}"
                for key in got
            ]
            say(f"seed {seed} {name:>15}: " + "  ".join(parts))
        # linbench's own gate on the kernel, and a planted 1.01 gradient.
        say(
            f"seed {seed} rms: "
            + "  ".join(f"{key} {float(t.double().square().mean().sqrt()):.3e}" for key, t in expected.items())
        )
    from linbench.check.correctness import check_impl
    from linbench.shape import Shape

    shape = Shape(batch=4, heads=16, seq=512, dim_k=64, dim_v=64)
    for name in ("linear", "cosine", "cosformer", "heinsen"):
        for impl in ("kernel", "chunked"):
            res = check_impl(get_variant(name), impl, shape, causal=True, dtype=torch.bfloat16, device=DEV)
            say(f"linbench check {name}:{impl} bf16 fwdbwd: ok={res.ok} {res.describe()}")


def main() -> None:
    say("torch", torch.__version__, "device", torch.cuda.get_device_name(), "python", sys.version.split()[0])
    say(
        "sdpa enabled: flash",
        torch.backends.cuda.flash_sdp_enabled(),
        "efficient",
        torch.backends.cuda.mem_efficient_sdp_enabled(),
        "cudnn",
        torch.backends.cuda.cudnn_sdp_enabled(),
        "math",
        torch.backends.cuda.math_sdp_enabled(),
    )
    t0 = time.perf_counter()
    linbench.attention(
        *(torch.randn(1, 1, 64, 64, device=DEV) for _ in range(3)), variant="cosine", impl="kernel", causal=True
    )
    say(f"kernel library ready in {time.perf_counter() - t0:.1f} s")
    for section in (kvcache_section, recurrent_section, tolerance_section):
        try:
            section()
        except Exception as exc:  # one section's failure must not lose the others
            import traceback

            say(f"{section.__name__} failed: {exc}")
            say(traceback.format_exc())


if __name__ == "__main__":
    main()
