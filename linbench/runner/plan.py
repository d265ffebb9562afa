"""From a sweep spec to a runnable plan: names resolved, points expanded, limits set.

Everything that can be wrong with the user's request is found here, before a run folder
exists: unknown names, impls that cannot run on the device or take these head dims.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from linbench.machine.facts import device_memory_bytes
from linbench.machine.limits import available_memory_bytes
from linbench.measure.timing_policy import TimingPolicy
from linbench.results.protocol import ProcessProtocol
from linbench.results.record import PointFacts
from linbench.runner.kind_protocol import Kind
from linbench.runner.kinds import RUN, kind_of
from linbench.runner.oversized import leave_out_oversized
from linbench.runner.pack_kind import drop_unpackable
from linbench.runner.params import non_default, resolve_params
from linbench.runner.targets import Targets, resolve_targets
from linbench.sweep.points import Point, expand_pack_points, expand_points
from linbench.sweep.spec import SweepSpec
from linbench.variants.declarations import TORCH_COMPILE
from linbench.variants.extra_inputs import probe_draws
from linbench.variants.heads import VALUE_HEADS_REFUSED
from linbench.variants.registry import get_variant
from linbench.variants.serving import pool_need, pool_slots_per_request

Pair = tuple[str, str]
# The parameter a --chunk sweep sets: every chunked form and kernel takes its chunk size so.
CHUNK_PARAM = "chunk_size"
# A CPU worker may take this share of the memory available when the run starts; past it
# an allocation fails cleanly inside the worker (status oom) instead of the machine swapping
# or the kernel's OOM killer choosing a victim.
CPU_MEMORY_SHARE = 0.8
# The seconds a worker task of an impl that torch.compile builds (TORCH_COMPILE) may take beyond
# --timeout-s: its first call in a process compiles, 30-45 s on a 2-core CPU from a cold cache
# (inductor's C++ kernels; the correctness check compiles graphs of its own), seconds from a warm
# one, and --timeout-s limits a point's measuring, not that. Without it a cold compile timed out
# at the gate suite's 20 s, and an A/B whose sides had caches unlike read it as a broken point.
COMPILE_ALLOWANCE_S = 300.0


@dataclass(frozen=True)
class RunPlan:
    """A resolved sweep: the points in order, their kind, and how to run each."""

    points: tuple[Point, ...]
    targets: Targets
    device: torch.device
    device_name: str
    timeout_s: float
    timing: TimingPolicy
    plugins: tuple[str, ...] = ()
    memory_limit_bytes: int | None = None
    cuda_graph: bool = False  # also time each call (decode: step) as CUDA-graph replays
    # --param: (variant, impl) → the parameter values given for it.
    params: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    threads: int | None = None  # torch threads per worker; None: on CPU one per idle core (threads.py), on GPU torch's
    tokens: int | None = None  # run --tokens: batch·seq of every point
    processes: ProcessProtocol = field(default_factory=ProcessProtocol)
    # The points of one curve share a worker per round where the kind allows (run points:
    # GPU allocator peaks are reset per call; a CPU worker hands freed heap back before the
    # call whose peak RSS it reads). On CPU the first round shares one too; on a GPU it starts
    # after each point's first process. Saves the fork, imports, a CUDA context, a
    # kernel-library load and thread pools' start.
    share_workers: bool = False
    # Each point's correctness check against its fp64 reference before it is measured; False
    # (run --no-check): measured unchecked, as linbench ab's rounds after the first, which checked.
    check: bool = True
    kind: Kind = RUN  # what the points are: run or decode (runner/kinds.py), from the command
    tp: int | None = None  # --tp: every point's heads are one of tp ranks' shard (None: no preset)
    compiling: frozenset[Pair] = frozenset()  # the impls torch.compile builds: COMPILE_ALLOWANCE_S each task
    # What each point is, for its rows: fixed here, when the plan is made, from the fields above.
    facts: Mapping[Point, PointFacts] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "facts", {point: self._facts(point) for point in self.points})

    def time_limit_s(self, point: Point) -> float:
        """The seconds a worker task of ``point`` may take: --timeout-s, and the compile
        allowance beside it where torch.compile builds its impl."""
        compiles = (point.variant, point.impl) in self.compiling
        return self.timeout_s + (COMPILE_ALLOWANCE_S if compiles else 0.0)

    def impl_params(self, variant: str, impl: str) -> dict[str, Any]:
        """The parameters given for one impl (empty: its defaults)."""
        return dict(self.params.get((variant, impl), {}))

    def point_params(self, point: Point) -> dict[str, Any]:
        """The parameters ``point``'s impl runs with: those given for it, and the point's
        chunk size in a --chunk sweep."""
        given = self.impl_params(point.variant, point.impl)
        return given if point.chunk is None else given | {CHUNK_PARAM: point.chunk}

    def _facts(self, point: Point) -> PointFacts:
        """The columns of ``point``'s rows that no process measures: its key, the device, the
        impl's given values that differ from its defaults, and what its kind adds."""
        pair = (point.variant, point.impl)
        values = self.params.get(pair)
        params = non_default(pair, values, self.kind) if values else ""
        return replace(self.kind.facts(point, self.device_name, params), tp=self.tp)

    def params_meta(self) -> dict[str, dict[str, Any]]:
        """meta.json's ``params``: "variant:impl" → the values given for it."""
        return {f"{v}:{i}": dict(values) for (v, i), values in self.params.items()}


def chunk_targets(spec: SweepSpec, pairs: Iterable[tuple[str, str]], kind: Kind, device_type: str) -> set[Pair]:
    """The impls of a --chunk sweep that take a chunk size, each checked against every size
    swept; ValueError naming the first size an impl cannot take, or when no impl takes one."""
    sizes = sorted({size for block in spec.blocks for size in block.chunk or ()})
    if not sizes:
        return set()
    takers: set[Pair] = set()
    for pair in pairs:
        param = kind.param_specs(get_variant(pair[0]), pair[1]).get(CHUNK_PARAM)
        if param is None:
            continue
        for size in sizes:
            reason = param.refusal(size, device_type)
            if reason is not None:
                raise ValueError(f"--chunk {size}: {pair[0]}:{pair[1]} cannot take it on {device_type}: {reason}")
        takers.add(pair)
    if not takers:
        raise ValueError(
            "--chunk: no impl of this run takes a chunk size; the chunked forms, the kernels and the compiled "
            "impls do (cosine:chunked, cosine:kernel, ...)"
        )
    return takers


def _check_chunk_not_given_twice(spec: SweepSpec) -> None:
    if any(block.chunk for block in spec.blocks) and any(f".{CHUNK_PARAM}=" in text for text in spec.params):
        raise ValueError(f"--chunk and --param ...{CHUNK_PARAM}= both set the chunk size; give one")


def _check_skips(spec: SweepSpec, kind: Kind) -> None:
    """Every name a suite table's ``skip`` gives is a variant or impl there is: a misspelt one
    would leave in the point it was written to leave out. ValueError, one line."""
    for block in spec.blocks:
        for name in block.skip:
            if name.strip() == "all":
                raise ValueError("skip: 'all' would leave the table no point; drop the table instead")
            try:
                kind.select([name])
            except ValueError as exc:
                raise ValueError(f"skip: {exc}") from None


def _check_shape_support(targets: Targets, spec: SweepSpec, kind: Kind, device_type: str) -> None:
    for pair in targets.pairs:
        for block in spec.blocks:
            if not block.measures(*pair):
                continue
            for dim_k, dim_v in block.dims():
                for dtype in block.dtype:
                    reason = kind.unsupported_reason(pair, dim_k, dim_v, dtype, device_type)
                    if reason is not None:
                        what = f"dim_k={dim_k}, dim_v={dim_v}, {dtype}"
                        raise ValueError(f"{pair[0]}:{pair[1]} does not support {what}: {reason}")


def _undefined(point: Point) -> str | None:
    """Why ``point``'s variant does not compute it (a masking it lacks, more value heads than
    q/k heads where its maths has none), as a note, or None."""
    variant = get_variant(point.variant)
    reason = variant.masking_reason(point.causal)
    if reason is not None:
        return f"{reason}: its {'causal' if point.causal else 'bidirectional'} points are left out"
    if point.shape.value_grouped and not variant.value_heads:
        return f"{variant.name} {VALUE_HEADS_REFUSED}: its --v-heads points are left out"
    return None


def _drop_other_maskings(points: list[Point], targets: Targets) -> tuple[list[Point], Targets]:
    """The points without those of a masking their variant does not compute (Variant.masking)
    or with value heads it does not take (Variant.value_heads), and a note for each variant
    left so; ValueError when nothing is left."""
    kept: list[Point] = []
    notes: dict[str, None] = {}  # each once, in order
    for point in points:
        reason = _undefined(point)
        if reason is None:
            kept.append(point)
        else:
            notes[reason] = None
    if points and not kept:
        raise ValueError(f"nothing to run: {'; '.join(notes)}")
    return kept, replace(targets, notes=(*targets.notes, *notes))


def _points(spec: SweepSpec, targets: Targets, device: torch.device, chunked: set[Pair]) -> tuple[list[Point], Targets]:
    """The points to run: the sweep's axes (a point per chunk size for the ``chunked`` impls of
    a --chunk sweep), or its pack run each way an impl can run it."""
    if spec.pack is None:
        grown = _grown(spec, targets)
        points = expand_points(spec.blocks, targets.pairs, str(device), chunked, spec.serving, grown)
        return _drop_other_maskings(_drawn_contexts(points), targets)
    if any(block.kv_heads or block.v_heads or block.chunk for block in spec.blocks):
        raise ValueError(
            "--pack runs as many key/value and value heads as heads, at each impl's own chunk size: "
            "drop --kv-heads, --v-heads and --chunk"
        )
    points = expand_pack_points(spec.blocks, targets.pairs, str(device), spec.pack, spec.packing)
    points, targets = _drop_other_maskings(points, targets)
    return drop_unpackable(points, targets)


def _grown(spec: SweepSpec, targets: Targets) -> set[Pair]:
    """The decoders whose state grows (a KV cache, kept in the compute dtype, not pooled): no state
    dtype or layout of their own; ValueError when --state-dtype or --state-layout is given and
    every decoder is one."""
    if spec.command != "decode":
        return set()
    grown = {pair for pair in targets.pairs if get_variant(pair[0]).decoder(pair[1]).state_grows}
    if any(block.state_dtype for block in spec.blocks) and grown >= set(targets.pairs):
        names = ", ".join(f"{v}:{i}" for v, i in targets.pairs)
        raise ValueError(f"--state-dtype: {names} keep keys and values in the compute dtype; use --dtype")
    if any(block.state_layout for block in spec.blocks) and grown >= set(targets.pairs):
        names = ", ".join(f"{v}:{i}" for v, i in targets.pairs)
        raise ValueError(f"--state-layout: {names} keep keys and values, not a state matrix per head")
    _pool_holds_every_draft(spec, targets)
    return grown


def _pool_holds_every_draft(spec: SweepSpec, targets: Targets) -> None:
    """A --pool too small for a decoder whose kernel keeps each draft token's state in a slot of
    its own (kda:fla-recurrent: batch × tokens per step), named where it runs or not:
    ValueError, one line."""
    if spec.serving is None or spec.serving.pool is None:
        return
    kind = kind_of(spec.command)
    # Every decoder named, whether it runs here or not: a suite's pool fits wherever it runs.
    picks = [pick for names in (spec.variants, spec.baselines) if names for pick in kind.select(names)]
    named = [(pick.variant.name, pick.impl) for pick in picks]
    for variant, name in dict.fromkeys([*targets.pairs, *named]):
        decoder = get_variant(variant).decoder(name)
        for block in spec.blocks:
            batch, steps = max(block.batch), max(block.tokens_per_step or (1,))
            if spec.serving.pool < batch * pool_slots_per_request(decoder, steps):
                need = pool_need(decoder, batch, steps, f"{variant}:{name}")
                raise ValueError(f"--pool: {spec.serving.pool} slots cannot hold {need}")


def _drawn_contexts(points: list[Point]) -> list[Point]:
    """Points whose requests' contexts are drawn (decode --contexts): each at the mean context
    its batch draws, the context axis replaced (its points fall together)."""
    drawn: dict[Point, None] = {}
    for point in points:
        if point.serving is not None and point.serving.contexts is not None:
            contexts = point.serving.request_contexts(point.shape.batch, point.shape.seq)
            point = replace(point, shape=replace(point.shape, seq=round(sum(contexts) / len(contexts))))
        drawn[point] = None
    return list(drawn)


def _keep_planned(points: list[Point], targets: Targets) -> Targets:
    """The targets whose impls have a point left; ValueError, naming why, when none of the
    impls --variant asked for has one (the run would measure its baseline alone)."""
    planned = {(point.variant, point.impl) for point in points}
    if targets.chosen and not planned & set(targets.chosen):
        asked = list(dict.fromkeys(variant for variant, _ in targets.chosen))
        why = [note for note in targets.notes if any(name in note for name in asked)]
        raise ValueError(f"nothing to run of {', '.join(asked)}: {'; '.join(why) or 'no point is left'}")

    def kept(pairs: tuple[Pair, ...]) -> tuple[Pair, ...]:
        return tuple(pair for pair in pairs if pair in planned)

    return replace(targets, pairs=kept(targets.pairs), baselines=kept(targets.baselines), chosen=kept(targets.chosen))


def gate_params(profile: str | None, pairs: Iterable[Pair]) -> list[str]:
    """--gates as a --param gate_regime of every gated variant of the run (an explicit --param
    after it wins); ValueError, one line, naming the variants whose gate lacks the profile."""
    if profile is None:
        return []
    names = list(dict.fromkeys(variant for variant, _ in pairs))
    gated = {name: spec for name in names for spec in get_variant(name).draw_params if spec.name == "gate_regime"}
    lacking = [name for name, spec in gated.items() if spec.problem(profile)]
    if lacking or not gated:
        why = f"{', '.join(lacking)}: no gate profile {profile!r}" if lacking else "no variant of the run has a gate"
        raise ValueError(f"--gates {profile}: {why}; --param VARIANT.gate_regime=... sets one variant's")
    return [f"{name}.gate_regime={profile}" for name in gated]


def make_plan(spec: SweepSpec, device: torch.device, device_name: str) -> RunPlan:
    """The plan for ``spec`` on ``device``; ValueError for anything that cannot run."""
    kind = kind_of(spec.command, spec.pack)
    targets = resolve_targets(spec.variants, spec.baselines, device, kind)
    _check_skips(spec, kind)
    _check_shape_support(targets, spec, kind, device.type)
    _check_chunk_not_given_twice(spec)
    chunked = chunk_targets(spec, targets.pairs, kind, device.type)
    for name in dict.fromkeys(variant for variant, _ in targets.pairs):
        probe_draws(name, get_variant(name).extra_inputs)
    if spec.cuda_graph and device.type != "cuda":
        raise ValueError(f"--cuda-graph times CUDA-graph replays and needs a CUDA device, not {device}")
    points, targets = _points(spec, targets, device, chunked)
    targets = _keep_planned(points, targets)
    memory = int(available_memory_bytes() * CPU_MEMORY_SHARE) if device.type == "cpu" else None
    if kind is RUN or spec.pack is not None:  # a decoder's state is not a call's working set
        longest = spec.pack.longest if spec.pack is not None else None
        points, targets = leave_out_oversized(points, targets, memory or device_memory_bytes(device), longest)
    return RunPlan(
        points=tuple(points),
        targets=targets,
        device=device,
        device_name=device_name,
        timeout_s=spec.timeout_s,
        timing=kind.timing(spec, device),
        plugins=spec.plugins,
        memory_limit_bytes=memory,
        cuda_graph=spec.cuda_graph,
        params=resolve_params((*gate_params(spec.gates, targets.pairs), *spec.params), targets.pairs, kind),
        threads=spec.threads,
        tokens=next((block.tokens for block in spec.blocks if block.tokens), None),
        processes=kind.protocol(spec),
        share_workers=kind.shares_workers(device),
        kind=kind,
        tp=tensor_parallel(spec.settings),
        compiling=compiled_impls(targets.pairs) if spec.command == "run" else frozenset(),
    )


def compiled_impls(pairs: Iterable[Pair]) -> frozenset[Pair]:
    """The impls among ``pairs`` that torch.compile builds in each process (their backend says so)."""
    return frozenset(pair for pair in pairs if get_variant(pair[0]).impls[pair[1]].backend == TORCH_COMPILE)


def tensor_parallel(settings: Mapping[str, Any]) -> int | None:
    """The ranks a run's preset is sharded over: --tp, 1 for a preset without it, None without one."""
    if settings.get("tp") not in (None, ""):
        return int(settings["tp"])
    return 1 if settings.get("preset") else None


def count_points(spec: SweepSpec) -> int:
    """The points ``spec`` names on any device: every impl (or decoder) it selects is counted,
    runnable here or not. For a suite that names its impls, this is what a run will measure
    wherever they all run; ValueError for unknown names."""
    kind = kind_of(spec.command)
    pairs: list[tuple[str, str]] = []
    for names in (spec.variants, spec.baselines):
        if names:  # no baseline must not read as "every variant"
            pairs += [(pick.variant.name, pick.impl) for pick in kind.select(names)]
    takers = {pair for pair in pairs if CHUNK_PARAM in kind.param_specs(get_variant(pair[0]), pair[1])}
    grown = {p for p in pairs if spec.command == "decode" and get_variant(p[0]).decoder(p[1]).state_grows}
    return len(expand_points(spec.blocks, dict.fromkeys(pairs), "any", takers, spec.serving, grown))
