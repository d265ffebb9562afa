"""``linbench warm``: compile and tune every point's Triton kernels into the store, before a run."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from linbench.cli.common import DEVICE_HELP, KV_HEADS_HELP, PLUGIN_HELP, V_HEADS_HELP, load_plugins, stdout_console
from linbench.cli.errors import INTERRUPTED_EXIT, usage_errors
from linbench.cli.run_cmd import HELP
from linbench.cli.run_flow import sweep_request

if TYPE_CHECKING:
    from linbench.runner.warm import Warmed


def warm_command(
    variant: Annotated[
        list[str] | None,
        typer.Option("--variant", help="NAME or NAME:IMPL (repeatable or comma list), as linbench run takes them."),
    ] = None,
    against: Annotated[list[str] | None, typer.Option("--against", help=HELP["against"])] = None,
    no_against: Annotated[bool, typer.Option("--no-against", help="Warm the variants alone.")] = False,
    seq: Annotated[str | None, typer.Option("--seq", help=HELP["seq"])] = None,
    batch: Annotated[str | None, typer.Option("--batch", help="Batch sizes. Default: 1.")] = None,
    heads: Annotated[str | None, typer.Option("--heads", help="Head counts. Default: 8.")] = None,
    kv_heads: Annotated[str | None, typer.Option("--kv-heads", help=KV_HEADS_HELP)] = None,
    v_heads: Annotated[str | None, typer.Option("--v-heads", help=V_HEADS_HELP)] = None,
    dim: Annotated[str | None, typer.Option("--dim", help="Head dims of q and k (and v). Default: 64.")] = None,
    dim_v: Annotated[str | None, typer.Option("--dim-v", help=HELP["dim_v"])] = None,
    dtype: Annotated[list[str] | None, typer.Option("--dtype", help="fp32, bf16, fp16. Default: fp32.")] = None,
    mode: Annotated[list[str] | None, typer.Option("--mode", help=HELP["mode"])] = None,
    bidirectional: Annotated[bool, typer.Option("--bidirectional", help="No masking.")] = False,
    device: Annotated[str | None, typer.Option("--device", help=f"{DEVICE_HELP}. Default: auto.")] = None,
    suite: Annotated[Path | None, typer.Option("--suite", help="A TOML suite; flags override its keys.")] = None,
    plugin: Annotated[list[Path] | None, typer.Option("--plugin", help=PLUGIN_HELP)] = None,
    param: Annotated[list[str] | None, typer.Option("--param", help=HELP["param"])] = None,
    timeout_s: Annotated[float | None, typer.Option("--timeout-s", help="Limit per point. Default: 120.")] = None,
) -> None:
    """Compile and autotune each point's Triton kernels (fla's) into the store, so a run pays it once, before timing.

    Takes the points as linbench run does (the same options and suites) and warms up each point
    whose autotune choices linbench's store lacks (~/.cache/linbench/autotune, or
    $LINBENCH_AUTOTUNE_DIR): one call at the point's own shape, a curve's points in one worker
    process, the curves one after the other. Says how long it took, compiling and tuning apart.
    A later run reads each choice back (triton_config_source: cache), and its estimate no longer
    counts the tuning. Exit 1 when a point's warm-up failed; 2 on bad input.
    """
    from linbench.runner.pipeline import prepare
    from linbench.runner.warm import warm

    options = {name: value for name, value in locals().items() if name not in ("prepare", "warm")}
    with usage_errors():
        request = sweep_request("run", options, causal=False if bidirectional else None)
        load_plugins(list(request.plugins))
        with tempfile.TemporaryDirectory() as nowhere:  # nothing is made: only the plan is wanted
            plan = prepare(request, Path(nowhere), repair=False).plan
    console = stdout_console()
    console.print(f"warming {len(plan.points)} point(s) on {plan.device_name}", markup=False)
    try:
        report = warm(plan, lambda warmed: console.print(_line(warmed), markup=False, soft_wrap=True))
    except KeyboardInterrupt:
        console.print("interrupted: the choices made so far are kept", markup=False)
        raise typer.Exit(INTERRUPTED_EXIT) from None
    console.print(report.summary(), markup=False, soft_wrap=True)
    if any(point.failed for point in report.points):
        raise typer.Exit(1)


def _line(warmed: Warmed) -> str:
    label, result = warmed.point.label, warmed.result
    if result is None:
        return f"  {label}: already warm"
    if warmed.failed:
        return f"  {label}: {result.status}: {result.error}"
    if not warmed.tuned:
        return f"  {label}: no autotuned Triton kernel"
    kernels = len((result.triton_configs or "").split(";"))
    compile_s, tune_s = result.compile_s or 0.0, result.autotune_s or 0.0
    return f"  {label}: {kernels} kernel(s), {compile_s:.1f} s compiling, {tune_s:.1f} s tuning"
