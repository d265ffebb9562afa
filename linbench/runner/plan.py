"""From a sweep spec to a runnable plan: names resolved, points expanded, limits set.

Everything that can be wrong with the user's request is found here, before a run folder
exists: unknown names, impls that cannot run on the device or take these head dims.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import torch

from linbench.machine.limits import available_memory_bytes
from linbench.results.protocol import ProcessProtocol
from linbench.runner.params import non_default, resolve_params
from linbench.runner.targets import Targets, resolve_targets
from linbench.runner.task import TimingPolicy
from linbench.sweep.points import Point, expand_points
from linbench.sweep.spec import DECODE_MODE, SweepSpec
from linbench.variants.registry import get_variant
from linbench.variants.selection import select_decoders, select_impls

# A CPU worker may take this share of the memory available when the run starts; past it
# an allocation fails cleanly inside the worker (status oom) instead of the machine swapping
# or the kernel's OOM killer choosing a victim.
CPU_MEMORY_SHARE = 0.8
# Each of several processes needs less of its own budget: between processes, not within,
# is where the noise is (docs/gate.md).
CUDA_PROCESS_BUDGET_S = 0.3


@dataclass(frozen=True)
class RunPlan:
    """A resolved sweep: the points in order and how to run each."""

    points: tuple[Point, ...]
    targets: Targets
    device: torch.device
    device_name: str
    timeout_s: float
    timing: TimingPolicy
    plugins: tuple[str, ...] = ()
    memory_limit_bytes: int | None = None
    cuda_graph: bool = False  # decode: steps are also timed as CUDA-graph replays
    # --param: (variant, impl) → the parameter values given for it.
    params: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    threads: int | None = None  # torch threads in each worker; None: torch's default
    tokens: int | None = None  # run --tokens: batch·seq of every point
    processes: ProcessProtocol = field(default_factory=ProcessProtocol)
    # After each point's first process, the points of one curve share a worker per round.
    # Only on GPUs: their allocator peaks are reset per call, while a CPU point's peak RSS
    # needs a fresh process. Saves a CUDA context and a kernel-library load per point.
    share_workers: bool = False

    def impl_params(self, variant: str, impl: str) -> dict[str, Any]:
        """The parameters given for one impl (empty: its defaults)."""
        return dict(self.params.get((variant, impl), {}))

    def params_column(self, point: Point) -> str:
        """results.csv's ``params`` for ``point``: its impl's given values that differ from
        the defaults."""
        values = self.params.get((point.variant, point.impl))
        return non_default((point.variant, point.impl), values, point.mode == DECODE_MODE) if values else ""

    def params_meta(self) -> dict[str, dict[str, Any]]:
        """meta.json's ``params``: "variant:impl" → the values given for it."""
        return {f"{v}:{i}": dict(values) for (v, i), values in self.params.items()}


def _check_shape_support(targets: Targets, spec: SweepSpec) -> None:
    for variant_name, impl_name in targets.pairs:
        impl = get_variant(variant_name).impl(impl_name)
        for block in spec.blocks:
            for dim_k, dim_v in block.dims():
                for dtype in block.dtype:
                    reason = impl.unsupported_reason(dim_k, dim_v, dtype)
                    if reason is not None:
                        what = f"dim_k={dim_k}, dim_v={dim_v}, {dtype}"
                        raise ValueError(f"{variant_name}:{impl_name} does not support {what}: {reason}")


def _drop_other_maskings(points: list[Point], targets: Targets) -> tuple[list[Point], Targets]:
    """The points without those of a masking their variant does not compute (Variant.masking),
    and a note for each variant left so; ValueError when nothing is left."""
    kept: list[Point] = []
    notes: dict[str, None] = {}  # each once, in order
    for point in points:
        reason = get_variant(point.variant).masking_reason(point.causal)
        if reason is None:
            kept.append(point)
        else:
            notes[f"{reason}: its {'causal' if point.causal else 'bidirectional'} points are left out"] = None
    if points and not kept:
        raise ValueError(f"nothing to run: {'; '.join(notes)}")
    return kept, replace(targets, notes=(*targets.notes, *notes))


def make_plan(spec: SweepSpec, device: torch.device, device_name: str) -> RunPlan:
    """The plan for ``spec`` on ``device``; ValueError for anything that cannot run."""
    decode = spec.command == "decode"
    targets = resolve_targets(spec.variants, spec.baselines, device, decode=decode)
    if not decode:  # decoders take any head dim
        _check_shape_support(targets, spec)
    if spec.cuda_graph and device.type != "cuda":
        raise ValueError(f"--cuda-graph times CUDA-graph replays and needs a CUDA device, not {device}")
    points, targets = _drop_other_maskings(expand_points(spec.blocks, targets.pairs, str(device)), targets)
    memory = int(available_memory_bytes() * CPU_MEMORY_SHARE) if device.type == "cpu" else None
    if decode:
        timing = TimingPolicy.for_decode(spec.tokens or 1)
    else:
        budget = spec.budget_s
        if budget is None and (spec.processes or 1) > 1 and device.type == "cuda":
            budget = CUDA_PROCESS_BUDGET_S
        timing = TimingPolicy.for_device(device.type, budget)
        if spec.warmup_s is not None:
            timing = replace(timing, warmup_s=spec.warmup_s)
        if spec.min_reps is not None:
            timing = replace(timing, min_reps=spec.min_reps, max_reps=max(timing.max_reps, spec.min_reps))
    return RunPlan(
        points=tuple(points),
        targets=targets,
        device=device,
        device_name=device_name,
        timeout_s=spec.timeout_s,
        timing=timing,
        plugins=spec.plugins,
        memory_limit_bytes=memory,
        cuda_graph=spec.cuda_graph,
        params=resolve_params(spec.params, targets.pairs, decode=decode),
        threads=spec.threads,
        tokens=next((block.tokens for block in spec.blocks if block.tokens), None),
        processes=ProcessProtocol(1, 1) if decode else ProcessProtocol.of(spec.processes, spec.max_processes),
        share_workers=device.type == "cuda" and not decode,
    )


def count_points(spec: SweepSpec) -> int:
    """The points ``spec`` names on any device: every impl (or decoder) it selects is counted,
    runnable here or not. For a suite that names its impls, this is what a run will measure
    wherever they all run; ValueError for unknown names."""
    select = select_decoders if spec.command == "decode" else select_impls
    pairs: list[tuple[str, str]] = []
    for names in (spec.variants, spec.baselines):
        if names:  # no baseline must not read as "every variant"
            pairs += [(pick.variant.name, pick.impl) for pick in select(names)]
    return len(expand_points(spec.blocks, dict.fromkeys(pairs), "any"))
