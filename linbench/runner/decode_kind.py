"""``linbench decode``'s kind of point: one generated token a call, after a prefilled context.

What a kind supplies is runner/kind_protocol.py's ``Kind``; this one's rows are of mode
"decode", its length the context, its rate per token, and its gate the decoder's steps
against the fp64 reference's last rows.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from linbench.dtypes import torch_dtype
from linbench.measure.timing_policy import TimingPolicy
from linbench.results.kinds import DECODE_ROWS, Words
from linbench.results.processes import ProcessResult
from linbench.results.protocol import ProcessProtocol
from linbench.results.record import PointFacts
from linbench.runner.gate_point import GATE_STEPS
from linbench.runner.kind_protocol import SharedKind, Task, Work
from linbench.sweep import estimate
from linbench.sweep.points import Point
from linbench.sweep.serving import Serving
from linbench.variants.declarations import Param
from linbench.variants.registry import get_variant
from linbench.variants.selection import Selected, select_decoders
from linbench.variants.serving import pool_slots_per_request
from linbench.variants.variant import Variant

if TYPE_CHECKING:
    import torch

    from linbench.check.correctness import CaseResult
    from linbench.runner.serving_workload import ServingWorkload
    from linbench.sweep.spec import SweepSpec


@dataclass(frozen=True)
class DecodeKind(SharedKind):
    """``linbench decode``: one generated token a call, after a prefilled context."""

    name: str = DECODE_ROWS.name
    modes: tuple[str, ...] = DECODE_ROWS.modes
    rate: str = DECODE_ROWS.rate
    words: Words = DECODE_ROWS.words
    # A KV cache's step is linear in the context, a recurrent one constant; the naive
    # recompute's quadratic step shows its exponent from its second context on.
    default_exponent: float = 1.0
    single_point_range: tuple[float, float] = (0.0, 2.0)
    # The workload holds one token per timed step (and a spare for a CUDA graph's): no step is
    # left to count allocations in, so a CPU step's memory is its peak RSS alone.
    calls_again: bool = False

    def select(self, specs: Iterable[str]) -> list[Selected]:
        return select_decoders(specs)

    def unavailable_reason(self, pick: Selected, device: torch.device) -> str | None:
        """None for a decoder in PyTorch (it runs wherever torch does); one on a library (fla's)
        says why it cannot run on ``device``."""
        decoder = pick.variant.decoder(pick.impl)
        return decoder.availability(device) if decoder.availability is not None else None

    def optional(self, pick: Selected) -> bool:
        return pick.variant.decoder(pick.impl).library is not None

    def unsupported_reason(
        self, pair: tuple[str, str], dim_k: int, dim_v: int, dtype: str, device_type: str | None = None
    ) -> str | None:
        return None  # decoders take any head dim

    def param_specs(self, variant: Variant, name: str) -> dict[str, Param]:
        """A decoder takes its variant's parameters (ValueError naming the decoders) and how
        its extra inputs are drawn (gate_regime)."""
        variant.decoder(name)
        return {spec.name: spec for spec in (*variant.param_specs, *variant.draw_params)}

    def timing(self, spec: SweepSpec, device: torch.device) -> TimingPolicy:
        return TimingPolicy.for_decode(spec.tokens or 1)

    def protocol(self, spec: SweepSpec) -> ProcessProtocol:
        """Repeated processes as run's (--processes), so that compare judges decode points."""
        return ProcessProtocol.of(spec.processes, spec.max_processes)

    def shares_workers(self, device: torch.device) -> bool:
        return False

    def facts(self, point: Point, device_name: str, params: str) -> PointFacts:
        # A variant's FLOP formula counts a whole sequence; a decode step is another thing. Its
        # length is the context the steps follow.
        native = get_variant(point.variant).decoder(point.impl).gqa
        facts = self._facts(point, device_name, params, None, context=point.shape.seq, native=native)
        if not point.serves:
            return facts
        serving = point.serving or Serving()
        per_request = pool_slots_per_request(get_variant(point.variant).decoder(point.impl), point.tokens_per_step or 1)
        pool = serving.slots(point.shape.batch, per_request)
        given = {"pool": pool, "accept": serving.accept, "contexts": serving.contexts}
        return replace(facts, pack={name: value for name, value in given.items() if value is not None})

    def held_bytes(self, point: Point) -> int:
        """The context's keys and values, for a decoder whose state grows with it."""
        decoder = get_variant(point.variant).decoders.get(point.impl)
        return estimate.context_bytes(point) if decoder is None or decoder.state_grows else 0

    def refusal(self, point: Point, held: str, device: str) -> str:
        return (
            f"{point.variant}:{point.impl} at {point.shape.label} {point.dtype} keeps {held} of keys and "
            f"values; {device}: lower {self.lower}, or drop the decoder"
        )

    def call_s(self, point: Point) -> float:
        decoder = get_variant(point.variant).decoders.get(point.impl)
        exponent = decoder.step_exponent if decoder is not None else None
        # A serving step takes tokens_per_step tokens of every request.
        return estimate.call_seconds(point, estimate.step_flops(point, exponent)) * (point.tokens_per_step or 1)

    def setup_s(self, point: Point) -> float:
        return estimate.prefill_s(point)

    def check(self, task: Task) -> CaseResult:
        """Decoding against the reference's last rows, after a prefill of the point's context;
        a serving point's decoder also as it is served (runner/serving_gate.py)."""
        from linbench.check.correctness import check_decoder

        point = task.point
        shape = replace(point.shape, seq=point.shape.seq + GATE_STEPS)
        variant, dtype = get_variant(point.variant), torch_dtype(point.dtype)
        result = check_decoder(
            variant,
            point.impl,
            shape,
            steps=GATE_STEPS,
            dtype=dtype,
            device=point.device,
            seed=task.seed,
            params=task.params,
        )
        if not point.serves or not result.ok:
            return result
        import torch

        from linbench.runner.serving_gate import check_served

        served = check_served(point, torch.device(point.device), task.seed, task.params)
        result.comparisons += served.comparisons
        result.error, result.out_of_memory = served.error, served.out_of_memory
        result.setting = ";".join(part for part in (result.setting, served.setting) if part)
        return result

    def measuring(self) -> AbstractContextManager[object]:
        import torch

        return torch.no_grad()

    def workload(self, task: Task, device: torch.device) -> tuple[Work, int | None]:
        """The steps after an untimed prefill, and the bytes the state holds then (``cuda_graph``
        reserves the spare token a repeatable step needs)."""
        from linbench.runner.decode_workload import DecodeWorkload, warm_up
        from linbench.variants.decoding import state_bytes

        warm_up(task.point, device, params=task.params)
        if task.point.serves:
            return self._serving(task, device)
        work = DecodeWorkload(
            task.point, device, task.timing.calls, task.seed, spare=task.cuda_graph, params=task.params
        )
        work.prefill()
        return work, state_bytes(work.state)

    def _serving(self, task: Task, device: torch.device) -> tuple[Work, int | None]:
        """A serving point's requests, prefilled; the bytes their pool (or caches) hold."""
        from linbench.runner.serving_workload import ServingWorkload

        work = ServingWorkload(task.point, device, task.timing.calls, task.seed, params=task.params)
        work.prefill()
        return work, work.server.held_bytes

    def after_eager(self, task: Task, work: Work, device: torch.device, result: ProcessResult) -> ProcessResult:
        """With ``cuda_graph``, the replays of one captured step, then its launches."""
        from linbench.runner import execute_gpu
        from linbench.runner.decode_workload import DecodeWorkload
        from linbench.runner.serving_workload import ServingWorkload

        if isinstance(work, ServingWorkload):
            return self._serving_graphs(task, work, device, result) if task.cuda_graph else result
        assert isinstance(work, DecodeWorkload)
        if not task.cuda_graph:
            return result
        step = work.repeatable_step()
        result = execute_gpu.with_graph(result, lambda: step, device, self.graph_policy(task.timing))
        return execute_gpu.with_launches(result, step, device) if task.count_launches else result

    def _serving_graphs(
        self, task: Task, work: ServingWorkload, device: torch.device, result: ProcessResult
    ) -> ProcessResult:
        """A serving step captured over rotating pools, enough that each replay reads its pool
        cold (past twice the L2), replayed in turn."""
        import torch

        from linbench.runner import execute_gpu
        from linbench.variants.serving import rotations_to_miss_l2

        l2 = int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0))
        free = int(torch.cuda.mem_get_info(device)[0])
        try:
            steps = work.graph_steps(rotations_to_miss_l2(work.server.held_bytes, l2, free))
        except ValueError as exc:
            return replace(result, cuda_graph=False, graph_error=str(exc))
        return execute_gpu.with_rotating_graphs(result, steps, device, self.graph_policy(task.timing))

    def graph_policy(self, timing: TimingPolicy) -> TimingPolicy:
        from linbench.runner.execute_gpu import decode_graph_policy

        return decode_graph_policy(timing)


# The decode kind: it holds nothing per sweep, so one serves every decode (runner/kinds.py).
DECODE = DecodeKind()
