"""``linbench check``'s one-config Triton autotuner (``LINBENCH_CHECK_ONE_CONFIG=1``).

A kernel under ``@triton.autotune`` (all of fla-core's) compiles and times every config of its
list the first time it meets a new key: on a fresh GPU that, not the check, is where a
correctness check's minutes go (on an H200, fla's first compiles in thirteen processes at once
took the whole limit of a check of seven variants). Correctness does not depend on the config:
every config computes the same function. So, when this variable is set, ``linbench check``
(and nothing else) keeps for each kernel and key the first config, in Triton's own order after
its own pruning, that compiles and runs here: that one is run once, untimed; a config that
cannot be compiled for this GPU (Triton's out-of-resources answer) is passed over as Triton's
own tuning passes over it; the configs after the first that ran are neither compiled nor run.

A choice made so must never be timed. Only cli/check_cmd.py installs the pin; a timing process
refuses to measure where it is installed (runner/worker.py); and while it is installed Triton's
on-disk autotune cache is neither read nor written (fla turns that cache on with
``FLA_CACHE_RESULTS``), so no pinned choice reaches a later process as if it had been tuned.
Under Triton's interpreter the interpreter's bridge (triton_interpreter.py) ties every config
anyway, which keeps the first.
"""

from __future__ import annotations

import importlib.util
import math
import os
import sys
from typing import Any

ENV = "LINBENCH_CHECK_ONE_CONFIG"
_ON = ("1", "true", "on", "yes")
CHECK_NOTE = (
    f"autotuner: each Triton kernel ran the first of its configs that compiles here, untimed ({ENV}=1): "
    "correctness does not depend on the config; times never come from such a process"
)
TIMING_REFUSAL = (
    f"this process's Triton autotuner is pinned to first configs ({ENV}, for `linbench check` only): "
    "a time measured here would not be of a tuned kernel"
)
_INF = [math.inf, math.inf, math.inf]
_RAN = "_linbench_pinned_ran_for"  # on an autotuner: the call whose tuning already ran a config
_original: dict[str, Any] = {}  # Triton's own _bench and check_disk_cache, while the pin is in
_ABSENT = object()


def requested() -> bool:
    """Whether the variable asks for the pin (only `linbench check` reads this)."""
    return os.environ.get(ENV, "").strip().lower() in _ON


def pin_first_config() -> bool:
    """Install the pin in this process; False where Triton is not installed (nothing to pin)."""
    if importlib.util.find_spec("triton") is None:
        return False
    from triton.runtime import autotuner

    tuner = autotuner.Autotuner
    if not pinned():
        _original.update(bench=tuner._bench, disk=tuner.check_disk_cache)
        tuner._bench = _first_config_that_runs
        tuner.check_disk_cache = _no_disk_cache
    return True


def unpin() -> None:
    """Put Triton's own tuning back (the autotuners' in-memory choices made under the pin stay)."""
    if pinned():
        tuner = sys.modules["triton.runtime.autotuner"].Autotuner
        tuner._bench, tuner.check_disk_cache = _original.pop("bench"), _original.pop("disk")


def pinned() -> bool:
    """Whether the pin is installed in this process (Triton is never imported to answer)."""
    module = sys.modules.get("triton.runtime.autotuner")
    return module is not None and getattr(module.Autotuner, "_bench", None) is _first_config_that_runs


def _first_config_that_runs(self: Any, *args: Any, config: Any, **meta: Any) -> list[float]:
    """The autotuner's benchmark of ``config`` in one tuning loop (one ``run`` of the autotuner,
    whose ``nargs`` are that call's arguments): inf without compiling once an earlier config of
    the loop ran; else Triton's own benchmark path with one untimed call in place of its timing
    loop: 0 when the config ran, Triton's inf when it could not be compiled here."""
    if self.__dict__.get(_RAN) is self.nargs:
        return list(_INF)
    own = self.__dict__.get("do_bench", _ABSENT)  # do_bench is a cached property: an instance value
    self.__dict__["do_bench"] = _call_once
    try:
        timing = _original["bench"](self, *args, config=config, **meta)
    finally:
        if own is _ABSENT:
            del self.__dict__["do_bench"]
        else:
            self.__dict__["do_bench"] = own
    if not math.isinf(timing[0]):
        self.__dict__[_RAN] = self.nargs  # the reference ends with the next tuning of this kernel
    return list(timing)


def _call_once(kernel_call: Any, quantiles: Any = (0.5, 0.2, 0.8)) -> list[float]:
    kernel_call()
    return [0.0] * len(quantiles)


def _no_disk_cache(self: Any, tuning_key: Any, configs: Any, bench_fn: Any) -> bool:
    """Triton's on-disk autotune cache, left out: the loop runs here, and nothing is written."""
    del self, tuning_key, configs
    bench_fn()
    return False
