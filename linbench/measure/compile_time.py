"""The seconds a process has spent in torch.compile, from dynamo's own tally.

A point whose impl compiles (the ``compiled`` impls compile in their warm-up) reports the
difference before and after it; dynamo is never imported here, so a process that compiled
nothing pays nothing to ask.
"""

from __future__ import annotations

import sys


def compile_seconds() -> float | None:
    """Seconds this process has spent in torch.compile (tracing, Inductor and the C++ or
    Triton compiler); None when this torch does not keep the tally."""
    utils = sys.modules.get("torch._dynamo.utils")  # never imported: nothing was compiled
    if utils is None:
        return 0.0
    metrics = getattr(utils, "compilation_time_metrics", None)
    if not isinstance(metrics, dict):
        return None
    return float(sum(metrics.get("_compile.compile_inner", [])))
