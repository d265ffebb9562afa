"""Where a worker's Triton kernels are autotuned, and what a row records of it.

An impl on a Triton library (fla-core) autotunes its kernels the first time it meets each
autotune key, and fla's keys leave the sequence length out. So, in every worker that runs a
Triton impl (measure/autotune.py does the watching):

- each point is a *scope* of its own (``scope``: its key columns, its --param values, the
  device's name and the library's version): an autotuner holds only the current scope's choices,
  so the correctness gate's (at its own length), the tiny warm-up's, and an earlier point's in a
  warm worker are never used at this point;
- a measuring process warms up at the point's own shape before any timed call (run_kind.py's
  ``workload``), so the kernels are compiled and tuned there, under a lock per scope: the point's
  other processes on this machine wait for the first, then read its choices from the store
  (measure/autotune_store.py) instead of tuning again;
- Triton's own on-disk autotune cache, which keys a choice without the point, is turned off in
  each autotuner (and fla's ``FLA_CACHE_RESULTS`` defaults to off: variants/feature_forms/fla.py);
- the row records each autotuned kernel's config, whether it was tuned in the process or read
  from the store, the seconds of tuning (``autotune_s``) and Triton's compiler seconds (in
  ``compile_s``), all outside the timed calls.

``cold_s`` adds what the estimate expects the tuning to cost where the store lacks a point.
"""

from __future__ import annotations

import importlib.metadata
import json
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from linbench.measure import autotune
from linbench.measure.autotune_store import ConfigStore
from linbench.measure.compile_time import compile_seconds
from linbench.results.processes import ProcessResult
from linbench.runner.kind_protocol import Task
from linbench.sweep.points import Point
from linbench.variants.feature_forms.triton_interpreter import TRITON_LIBRARIES
from linbench.variants.registry import get_variant

if TYPE_CHECKING:
    import torch

# What a point of a Triton impl costs when the store lacks it: compiling each kernel's configs
# and benchmarking them. A guess from one fresh H200 (2026-11-27, fla-core 0.6.0, Triton 3.6):
# a process that checked one gated fla impl forward and backward at 724 tokens took about 10 s,
# nearly all of it compiling and tuning. A forward alone tunes about half the kernels.
COLD_S = {"fwd": 5.0, "bwd": 10.0, "fwdbwd": 10.0, "decode": 5.0}


def tunes_at_point(point: Point) -> bool:
    """Whether ``point``'s impl runs a Triton library's autotuned kernels (fla-core's)."""
    impl = get_variant(point.variant).impls.get(point.impl)
    return impl is not None and impl.library in TRITON_LIBRARIES


def scope(point: Point, params: dict[str, Any], device_name: str) -> str:
    """The point as an autotune scope: what the configs chosen for it may be reused for."""
    row = point.as_row() | {"device": point.device.split(":")[0], "packing": point.packing}
    impl = get_variant(point.variant).impls.get(point.impl)
    library = impl.library if impl is not None else None
    spelled = {"point": row, "params": params, "device_name": device_name, "library": _version(library)}
    return json.dumps(spelled, sort_keys=True, default=str)


# The scope being measured in this process (``begin``'s), which a tiny warm-up steps out of.
_measured: list[str] = []


def begin(point: Point, params: dict[str, Any], device: torch.device, *, lock: bool) -> bool:
    """Watch this process's autotuners in ``point``'s scope from here (the first process to tune
    the scope on this machine holding its lock, with ``lock``, until ``timed_calls``); False where
    no Triton kernel can run (nothing is imported for it)."""
    _measured.clear()
    if not (tunes_at_point(point) or "triton" in sys.modules) or not autotune.install():
        return False
    name = scope(point, params, _device_name(device))
    # Another impl (Triton merely imported) locks nothing unless its warm-up runs an autotuner.
    autotune.enter(name, ConfigStore(), lock=lock and tunes_at_point(point))
    if lock:
        _measured.append(name)
    return True


def warm_up(point: Point, call: Callable[[int], None], tiny: int) -> None:
    """The warm-up before a point's timed calls, ``call(seq)`` making one call at length ``seq``:
    at the point's own length for a Triton impl (its first call of each kernel, so the kernels
    compile and tune there); else at ``tiny`` tokens (thread pools and libraries start there),
    in a scope of its own, and once more at the point's length where that call ran an autotuned
    Triton kernel after all (a plugin's)."""
    if tunes_at_point(point):
        call(point.shape.seq)
        return
    if not _measured:  # nothing watched: no Triton kernel can have run
        call(tiny)
        return
    name = _measured[0]
    autotune.enter(f"{name} | warm-up at {tiny} tokens")
    call(tiny)
    autotuned = autotune.reading().configs is not None
    autotune.enter(name, ConfigStore(), lock=autotuned)
    if autotuned:
        call(point.shape.seq)


def timed_calls() -> None:
    """The warm-up is over: Triton's autotuner unwatched for the timed calls."""
    autotune.quiet()


def reading(watched: bool) -> tuple[dict[str, Any], float]:
    """The row's autotune columns for the point just measured, and the seconds Triton's compiler
    took in the process since the point began (none, and 0, where nothing was watched)."""
    if not watched:
        return {}, 0.0
    seen = autotune.reading()
    columns = {"triton_configs": seen.configs, "triton_config_source": seen.source, "autotune_s": seen.tune_s}
    return columns, seen.compile_s


def cold_s(pending: Sequence[Point], params_of: Callable[[Point], dict[str, Any]], device_name: str) -> float:
    """What the estimate adds for tuning: COLD_S for each pending point of a Triton impl whose
    scope the store lacks (the point's first process tunes it; the others read it back);
    ``params_of`` gives a point's --param values (the plan's ``point_params``)."""
    store = ConfigStore()
    total = 0.0
    for point in pending:
        if tunes_at_point(point) and not store.has(autotune.full_scope(scope(point, params_of(point), device_name))):
            total += COLD_S.get(point.mode, COLD_S["fwdbwd"])
    return total


def _device_name(device: torch.device) -> str:
    from linbench.machine.facts import device_name

    return device_name(device)


def _version(library: str | None) -> str | None:
    if library is None:
        return None
    try:
        return f"{library} {importlib.metadata.version(library)}"
    except importlib.metadata.PackageNotFoundError:
        return library


def compiled_s(before: float | None, triton_s: float = 0.0) -> float | None:
    """compile_s: the seconds this point spent in torch.compile (the compiled impls compile in
    the warm-up, ``before`` being torch's tally when the point began), else in Triton's compiler
    (a Triton impl's kernels, compiled in its warm-up: torch.compile's tally already holds the
    Triton kernels it compiled), where it compiled anything; a worker shared by points counts
    each its own."""
    after = compile_seconds()
    seconds = after - before if before is not None and after is not None and after > before else triton_s
    return round(seconds, 3) if seconds > 0 else None


def run_warm(task: Task) -> ProcessResult:
    """A worker's ``warm`` job: the point's warm-up alone, as its measuring process would make
    it, a Triton impl's kernels compiled and tuned at its shape into the store (runner/warm.py);
    what that took."""
    import torch

    compiled_before = compile_seconds()
    device = torch.device(task.point.device)
    watched = begin(task.point, task.params, device, lock=True)
    try:
        with task.kind.measuring():
            task.kind.workload(task, device)
    finally:
        if watched:
            timed_calls()
    tuned, triton_compile_s = reading(watched)
    return ProcessResult("ok", compile_s=compiled_s(compiled_before, triton_compile_s), **tuned)
