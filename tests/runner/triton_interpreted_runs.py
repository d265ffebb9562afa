"""Runs on the CPU under Triton's interpreter whose points run autotuned Triton kernels, as a
process of its own (the interpreter must be on before a kernel is defined and fla is first
imported): run by tests/runner/test_triton_interpreted_runs.py.

Prints one JSON line per case, its rows' autotune columns by length and its processes':
``plugin`` (tuned:triton, tests/runner/tuned_plugin.py, at 16 and 128 tokens, twice: the second
run reads the first's choices back), ``warm`` (linbench warm's work at 32 and 256 tokens, then
``run after warm`` at 256), ``fla`` (gated-deltanet:fla at 32 and 64 tokens; fla is
left out of a run under the interpreter, so planning is told it may be timed: its times are
numpy's and mean nothing, its recorded configs are what is checked).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "1"

from linbench import SweepRequest, run_sweep
from linbench.results.store import RunStore
from linbench.runner import run_kind

PLUGIN = Path(__file__).with_name("tuned_plugin.py")
FAST = {"device": "cpu", "budget_s": 0.01, "warmup_s": 0.0, "min_reps": 1, "no_against": True, "heads": 1}
COLUMNS = ("status", "triton_configs", "triton_config_source", "autotune_s", "error")


def _case(name: str, request: SweepRequest, out: Path) -> None:
    outcome = run_sweep(request, out=out)
    rows = {str(row["seq"]): {c: row.get(c) for c in COLUMNS} for row in outcome.rows}
    processes = [{c: row.get(c) for c in ("seq", *COLUMNS)} for row in RunStore(outcome.path).process_rows()]
    print(json.dumps({"case": name, "rows": rows, "processes": processes}, default=str), flush=True)


def _warm(out: Path) -> None:
    """linbench warm's work on new lengths, twice (the second finds them warm), what the run's
    estimate counts for them before and after, then a run of one of them."""
    from linbench.runner.pipeline import prepare
    from linbench.runner.triton_tuning import cold_s
    from linbench.runner.warm import warm

    request = SweepRequest(variants=("tuned:triton",), seq="32,256", dim=4, plugins=(PLUGIN,), **FAST)  # type: ignore[arg-type]
    plan = prepare(request, out / "warm", repair=False).plan
    before = cold_s(plan.points, plan.point_params, plan.device_name)
    first, second = warm(plan), warm(plan)
    warmed = {str(w.point.shape.seq): w.result.triton_configs if w.result else None for w in first.points}
    after = cold_s(plan.points, plan.point_params, plan.device_name)
    report = {"cold_before": before, "cold_after": after, "warmed": warmed}
    report |= {"first": first.summary(), "second": second.summary()}
    print(json.dumps({"case": "warm", **report}), flush=True)
    again = SweepRequest(variants=("tuned:triton",), seq="256", dim=4, plugins=(PLUGIN,), **FAST)  # type: ignore[arg-type]
    _case("run after warm", again, out / "after-warm")


def main(out: Path) -> None:
    plugin = SweepRequest(variants=("tuned:triton",), seq="16,128", dim=4, plugins=(PLUGIN,), **FAST)  # type: ignore[arg-type]
    _case("plugin", plugin, out / "plugin")
    _case("plugin again", plugin, out / "plugin-again")
    _warm(out)
    run_kind.untimeable_reason = lambda library, device: None  # type: ignore[assignment]
    fla = SweepRequest(variants=("gated-deltanet:fla",), seq="32,64", dim=16, **FAST)  # type: ignore[arg-type]
    _case("fla", fla, out / "fla")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
