"""What a kind of point is: everything that differs between the kinds a sweep measures.

A ``run`` point times one attention call (a forward, a backward, or both) over a sequence;
a ``decode`` point prefills a context and times the tokens it generates, one step a call.
The kind is resolved once, from the sweep's command (``kind_of``), and carried on the plan
and on every task: the planner, the skip policy, the estimate and the worker ask their kind
what to do instead of testing the mode. execute.py calls a kind; a kind never calls it back.

A kind supplies (``Kind``):

- who it is: ``name`` (the command), the ``modes`` of its rows, the ``rate`` its rows derive
  from their time, and ``words`` for what it says: its kind of row's (results/kinds.py), which
  the reading side shares;
- planning: which registry entries its names ``select`` and which cannot run here
  (``unavailable_reason``, ``optional``, ``unsupported_reason``), the ``param_specs`` an entry
  takes, the ``timing`` policy, the process ``protocol``, whether curves may share workers
  (``shares_workers``), and each point's row ``facts`` (FLOPs, context);
- the skip policy's guesses from one length: ``default_exponent`` and ``single_point_range``;
- the estimate (sweep/estimate.py's PointModel): ``held_bytes``, ``refusal``, ``call_s``, ``setup_s``;
- the worker: the correctness ``check``, the ``measuring`` context, the ``workload`` it times,
  what it measures ``after_eager`` on a GPU, and the ``graph_policy`` of CUDA-graph replays.

A third kind (prefill only, say) is one more class with these members, which
runner/kinds.py's ``kind_of`` resolves; ``run`` is runner/run_kind.py, ``decode``
runner/decode_kind.py.

What the supervisor sends a worker is a ``Task``: one point to check or to measure, the rules,
and the kind that does it. It lives here because the two refer to each other: a task carries
its kind, and a kind's worker members are handed the task.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from linbench.measure.timing_policy import TimingPolicy
from linbench.results.kinds import Words
from linbench.results.processes import ProcessResult
from linbench.results.protocol import ProcessProtocol
from linbench.results.record import PointFacts
from linbench.sweep.points import Point
from linbench.variants.declarations import Param
from linbench.variants.selection import Selected
from linbench.variants.variant import Variant

if TYPE_CHECKING:
    import torch

    from linbench.check.correctness import CaseResult
    from linbench.sweep.spec import SweepSpec


class Work(Protocol):
    """What a kind's workload gives the timers: untimed ``before`` and timed ``run`` of one
    repetition."""

    def before(self) -> None: ...

    def run(self) -> None: ...


class Kind(Protocol):
    """What differs between the kinds of point (module doc)."""

    @property
    def name(self) -> str: ...
    @property
    def modes(self) -> tuple[str, ...]: ...
    @property
    def rate(self) -> str: ...
    @property
    def words(self) -> Words: ...
    @property
    def default_exponent(self) -> float: ...
    @property
    def single_point_range(self) -> tuple[float, float]: ...
    @property
    def calls_again(self) -> bool: ...
    @property
    def lower(self) -> str: ...
    def select(self, specs: Iterable[str]) -> list[Selected]: ...
    def unavailable_reason(self, pick: Selected, device: torch.device) -> str | None: ...
    def optional(self, pick: Selected) -> bool: ...
    def unsupported_reason(
        self, pair: tuple[str, str], dim_k: int, dim_v: int, dtype: str, device_type: str | None = None
    ) -> str | None: ...
    def param_specs(self, variant: Variant, name: str) -> dict[str, Param]: ...
    def timing(self, spec: SweepSpec, device: torch.device) -> TimingPolicy: ...
    def protocol(self, spec: SweepSpec) -> ProcessProtocol: ...
    def shares_workers(self, device: torch.device) -> bool: ...
    def facts(self, point: Point, device_name: str, params: str) -> PointFacts: ...
    def held_bytes(self, point: Point) -> int: ...
    def refusal(self, point: Point, held: str, device: str) -> str: ...
    def call_s(self, point: Point) -> float: ...
    def setup_s(self, point: Point) -> float: ...
    def check(self, task: Task) -> CaseResult: ...
    def measuring(self) -> AbstractContextManager[object]: ...
    def workload(self, task: Task, device: torch.device) -> tuple[Work, int | None]: ...
    def after_eager(self, task: Task, work: Work, device: torch.device, result: ProcessResult) -> ProcessResult: ...
    def graph_policy(self, timing: TimingPolicy) -> TimingPolicy: ...


@dataclass(frozen=True)
class Task:
    """One job for a worker process: ``gate`` checks a point against its reference,
    ``measure`` times it and reads its peak memory, as its ``kind`` of point says; ``warm``
    compiles and tunes its Triton kernels into the store (runner/warm.py) and times nothing."""

    job: Literal["gate", "measure", "warm"]
    point: Point
    timing: TimingPolicy
    kind: Kind  # run, decode or pack (runner/kinds.py, runner/pack_kind.py)
    plugins: tuple[str, ...] = ()
    # CPU only: the most address space the worker may add; None leaves it unlimited.
    memory_limit_bytes: int | None = None
    seed: int = 0
    cuda_graph: bool = False  # on CUDA: also time replays of a call (run) or step (decode) captured in a graph
    # On probation (runner/policy.py): the point's time limit, checked after its first call.
    stop_after_s: float | None = None
    params: dict[str, Any] = field(default_factory=dict)  # --param values for the point's impl
    threads: int | None = None  # torch.set_num_threads in the worker; None: torch's default
    # On CUDA: count the launches of one untimed call (kernels_per_call) after the timing. The
    # count is the same in every process, and the profiler slows the process after it: count
    # in one process per point, as the last measurement that process makes.
    count_launches: bool = True
    # On CPU: profile one untimed call after the timing for alloc_peak_bytes. The figure is the
    # same in every process (tests/runner/test_alloc_peak.py), and a profiled call costs about
    # one call or more: count in one process per point, its first.
    count_allocations: bool = True


class SharedKind:
    """What the kinds share: the options that shrink a point, and its row's facts."""

    rate: str
    words: Words

    @property
    def lower(self) -> str:
        return f"--{self.words.length}, --batch, --heads or --dim"

    def _facts(
        self,
        point: Point,
        device_name: str,
        params: str,
        flops: float | None,
        context: int | None,
        traffic: int | None = None,
        native: bool = False,
    ) -> PointFacts:
        tokens = point.shape.batch * point.shape.seq
        # With fewer key/value heads than heads, or more value heads (GVA), how the impl
        # (decoder) took them.
        grouped = point.shape.grouped or point.shape.value_grouped
        gqa = ("native" if native else "expanded") if grouped else ""
        return PointFacts(point.as_row(), device_name, params, flops, context, self.rate, tokens, traffic, gqa=gqa)
