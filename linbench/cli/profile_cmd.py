"""``linbench profile``: one call of an impl at one point under Nsight Compute (``ncu``), its
report and a per-kernel summary kept in a folder (a run's, to keep the evidence beside it).

The call runs in a process of its own (linbench/runner/profile_call.py) under
``ncu --profile-from-start off --clock-control none``: a warm-up call unprofiled, then the
profiled one, at the clocks the GPU runs at when linbench times it (ncu would otherwise lock them
to base, linbench/measure/ncu.py). The folder
gets ``<variant>-<impl>-<point>.ncu-rep`` (open it in Nsight Compute's GUI, or
``ncu --import``) and ``<...>.summary.csv``: per kernel launch, its duration and its DRAM and
compute throughput as % of peak and achieved occupancy, which the command also prints.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Annotated

import typer

from linbench.cli.common import parse_dtypes
from linbench.cli.errors import CliUsageError, exit_usage_error, usage_errors
from linbench.variants.selection import select_impls

HELP = {
    "variant": "The impl to profile, as VARIANT:IMPL (gated-deltanet:fla).",
    "out": "The folder the report and its summary go to (a run folder keeps them beside its results).",
    "set": "Nsight Compute's section set: basic, detailed, full (every section) or source (with SASS/source).",
}


def profile_command(
    variant: Annotated[str, typer.Option("--variant", help=HELP["variant"])],
    out: Annotated[Path, typer.Option("--out", help=HELP["out"])],
    seq: Annotated[int, typer.Option("--seq", help="Sequence length.", min=1)] = 4096,
    batch: Annotated[int, typer.Option("--batch", help="Batch size.", min=1)] = 1,
    heads: Annotated[int, typer.Option("--heads", help="Attention heads.", min=1)] = 8,
    dim: Annotated[int, typer.Option("--dim", help="Head dimension of q and k.", min=1)] = 64,
    dim_v: Annotated[int | None, typer.Option("--dim-v", help="Head dimension of v (default: --dim).", min=1)] = None,
    dtype: Annotated[str, typer.Option("--dtype", help="fp32, bf16 or fp16.")] = "bf16",
    mode: Annotated[str, typer.Option("--mode", help="fwd or fwdbwd.")] = "fwd",
    section_set: Annotated[str, typer.Option("--set", help=HELP["set"])] = "full",
) -> None:
    """Profile one call of an impl under Nsight Compute (ncu) and keep the report with a per-kernel summary."""
    from linbench.measure.ncu import MISSING_NCU, find_ncu, parse_summary, profile_command, summary_command, summary_csv

    name, _, impl = variant.partition(":")
    if not impl:
        exit_usage_error(f"--variant {variant!r}: give one impl as VARIANT:IMPL")
    if mode not in ("fwd", "fwdbwd"):
        exit_usage_error(f"--mode {mode!r}: fwd or fwdbwd")
    with usage_errors():  # before ncu starts: a name or dtype it would only fail on, minutes later
        select_impls([variant])
        parse_dtypes([dtype])
        if out.exists() and not out.is_dir():
            raise CliUsageError(f"--out {str(out)!r} is a file; give the folder the report goes to")
    ncu = find_ncu()
    if ncu is None:
        exit_usage_error(MISSING_NCU)
    stem = f"{name}-{impl}-{mode}-{dtype}-B{batch}-H{heads}-S{seq}-D{dim}"
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        exit_usage_error(f"cannot make the folder {str(out)!r}: {exc.strerror or exc}")
    report = out / f"{stem}.ncu-rep"
    child = [sys.executable, "-m", "linbench.runner.profile_call", "--variant", name, "--impl", impl]
    child += ["--mode", mode, "--dtype", dtype, "--batch", str(batch), "--heads", str(heads), "--seq", str(seq)]
    child += ["--dim_k", str(dim), "--dim_v", str(dim_v or dim)]
    try:
        command = profile_command(ncu, report, section_set, child)
    except ValueError as exc:
        exit_usage_error(str(exc))
    profiled = subprocess.run(command, check=False)
    if profiled.returncode != 0:
        typer.echo(f"linbench profile: ncu exited {profiled.returncode}; its output is above", err=True)
        raise typer.Exit(1)
    text = subprocess.run(summary_command(ncu, report), capture_output=True, text=True, check=False).stdout
    profiles = parse_summary(text)
    summary = out / f"{stem}.summary.csv"
    summary.write_text(summary_csv(profiles))
    typer.echo(f"linbench profile: {len(profiles)} kernel launches profiled: {report}, {summary}")
    for p in profiles:
        figures = (p.duration_us, p.dram_pct, p.compute_pct, p.occupancy_pct)
        shown = [f"{x:.1f}" if x is not None else "-" for x in figures]
        typer.echo(f"  {p.kernel[:80]}: {shown[0]} µs, DRAM {shown[1]}%, compute {shown[2]}%, occupancy {shown[3]}%")
