"""Every fla impl of every gated family checked against the fp64 reference under Triton's
interpreter, on the CPU: run as its own process by tests/variants/test_gated_fla_interpreted.py,
since TRITON_INTERPRET must be set before triton and fla are first imported (a test worker may
have imported them already, compiled for a GPU).

Prints one JSON line per case: its name, ok, why it could not run (``unavailable``), what failed
and the seconds it took. ``--then-plant-wrong-scale CASE``: after the cases, CASE again with q's
factor handed to fla 10 % too large (printed as "CASE planted"), which the check must catch.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

os.environ["TRITON_INTERPRET"] = "1"

import torch

import linbench
from linbench.check.correctness import CaseResult, check_impl
from linbench.check.packed import check_packed
from linbench.shape import Shape
from linbench.variants.gated import fla as gated_fla

# 70 tokens: two of fla's 64-token chunks, the second partial; Dk ≠ Dv.
SHAPE = Shape(1, 2, 70, 16, 24)
GQA = Shape(1, 4, 40, 16, 16, kv_heads=2)
GVA = Shape(1, 2, 40, 16, 16, v_heads=4)  # more value heads than q/k heads: fla's native GVA
# GDN-2's and RWKV-7's chunk kernels (forward and backward) at one head and 40 tokens (one chunk
# of 64, partial; several of the DPLR kernel's 16): their interpreted backward costs the most.
SMALL = Shape(1, 1, 40, 16, 8)
START = torch.randn(1, 1, 16, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(7))  # SMALL's state
PACK = (30, 45)  # two sequences, neither a multiple of a chunk
GATED = ("retention", "lightning", "simple-gla", "gla", "deltanet", "gated-deltanet", "kda")
# fla has no backward for these two fused recurrent kernels.
FORWARD_ONLY = {("gated-deltanet", "fla-recurrent"), ("kda", "fla-recurrent")}


def cases() -> Iterator[tuple[str, Callable[[], CaseResult]]]:
    """(name, check) for every impl of every gated family, then GQA, a pack, a given γ."""
    for name in GATED:
        variant = linbench.get_variant(name)
        for kernel in ("fla", "fla-recurrent"):
            gradients = (name, kernel) not in FORWARD_ONLY
            dtype = torch.float16 if (name, kernel) == ("deltanet", "fla") else torch.float32
            yield (
                f"{name}:{kernel}",
                lambda v=variant, k=kernel, g=gradients, d=dtype: check_impl(
                    v, k, SHAPE, causal=True, dtype=d, gradients=g
                ),
            )
    gdn = linbench.get_variant("gated-deltanet")
    # fla's own registry of backends asked (none installed here: fla's kernel answers).
    yield (
        "gated-deltanet:fla-dispatch",
        lambda: check_impl(gdn, "fla-dispatch", SHAPE, causal=True, dtype=torch.float32),
    )
    yield "gated-deltanet:fla gqa", lambda: check_impl(gdn, "fla", GQA, causal=True, dtype=torch.float32)
    yield "gated-deltanet:fla value heads", lambda: check_impl(gdn, "fla", GVA, causal=True, dtype=torch.float32)
    yield (
        "gated-deltanet:fla packed",
        lambda: check_packed(gdn, "fla", PACK, 2, 16, 16, packing="packed", causal=True, dtype=torch.float32),
    )
    # A pack goes to fla whole, with cu_seqlens: a decaying chunk kernel and a forward-only fused one too.
    gla, kda = linbench.get_variant("gla"), linbench.get_variant("kda")
    yield (
        "gla:fla packed",
        lambda: check_packed(gla, "fla", PACK, 2, 16, 16, packing="packed", causal=True, dtype=torch.float32),
    )
    yield (
        "kda:fla-recurrent packed",
        lambda: check_packed(
            kda, "fla-recurrent", PACK, 2, 16, 16, packing="packed", causal=True, dtype=torch.float32, gradients=False
        ),
    )
    # GDN-2's kernels (fla-core 0.6.0's fla/ops/gdn2) and RWKV-7's (fla/ops/rwkv7, the DPLR
    # delta rule): each chunk kernel forward and backward, each fused recurrent one forward only
    # (neither has a backward), gdn2's with value heads native.
    gdn2, rwkv7 = linbench.get_variant("gdn2"), linbench.get_variant("rwkv7")
    yield "gdn2:fla", lambda: check_impl(gdn2, "fla", SMALL, causal=True, dtype=torch.float32)
    yield (
        "gdn2:fla-recurrent value heads",
        lambda: check_impl(gdn2, "fla-recurrent", GVA, causal=True, dtype=torch.float32, gradients=False),
    )
    yield "rwkv7:fla", lambda: check_impl(rwkv7, "fla", SMALL, causal=True, dtype=torch.float32)
    yield (
        "rwkv7:fla-recurrent",
        lambda: check_impl(rwkv7, "fla-recurrent", SHAPE, causal=True, dtype=torch.float32, gradients=False),
    )
    # Their chunk kernels from a given state and on a pack (cu_seqlens), outputs alone.
    for variant in (gdn2, rwkv7):
        yield (
            f"{variant.name}:fla initial state",
            lambda v=variant: check_impl(
                v, "fla", SMALL, causal=True, dtype=torch.float32, gradients=False, params={"initial_state": START}
            ),
        )
        yield (
            f"{variant.name}:fla packed",
            lambda v=variant: check_packed(
                v, "fla", (13, 22), 1, 16, 8, packing="packed", causal=True, dtype=torch.float32, gradients=False
            ),
        )
    retention = linbench.get_variant("retention")
    yield (
        "retention:fla gamma=0.9",
        lambda: check_impl(retention, "fla", SHAPE, causal=True, dtype=torch.float32, params={"gamma": 0.9}),
    )


def plant_wrong_scale() -> None:
    """q's factor 10 % too large on its way to fla's kernels."""
    right = gated_fla.resolve_scale

    def wrong(scale: Any, dim_k: int) -> float:
        return 1.1 * right(scale, dim_k)

    gated_fla.resolve_scale = wrong  # type: ignore[assignment]


def report(name: str, check: Callable[[], CaseResult]) -> None:
    """Run one case and print its line (JSON)."""
    started, cpu = time.perf_counter(), time.process_time()
    case = check()
    line = {
        "case": name,
        "ok": case.ok,
        "unavailable": case.unavailable,
        "error": case.error,
        "failed": None if case.ok else case.describe(),
        "seconds": round(time.perf_counter() - started, 2),
        "cpu_seconds": round(time.process_time() - cpu, 2),
    }
    print(json.dumps(line), flush=True)


def main(argv: list[str]) -> None:
    """The cases named (all when none is), then, with ``--then-plant-wrong-scale CASE``, CASE
    again with q's scale planted wrong, as ``CASE planted``: one process, so triton and fla are
    imported once for both."""
    planted: str | None = None
    if "--then-plant-wrong-scale" in argv:
        at = argv.index("--then-plant-wrong-scale")
        planted, argv = argv[at + 1], argv[:at] + argv[at + 2 :]
    chosen = set(argv)
    every = dict(cases())
    for name, check in every.items():
        if not chosen or name in chosen:
            report(name, check)
    if planted is not None:
        plant_wrong_scale()
        report(f"{planted} planted", every[planted])


if __name__ == "__main__":
    main(sys.argv[1:])
