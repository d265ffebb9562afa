"""``linbench run``: sweep impls over sizes, measure each point in a worker, write the run folder
(results.csv, processes.csv, samples.csv, meta.json)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from linbench.cli import fleet_options as fleet
from linbench.cli.against_options import NO_AGAINST_HELP, OldBaseline, OldNoBaseline, take_old_names
from linbench.cli.common import DEVICE_HELP, GATES_HELP, KV_HEADS_HELP, PLUGIN_HELP, PRESET_HELP, TP_HELP, V_HEADS_HELP
from linbench.cli.errors import CliUsageError, exit_usage_error, usage_errors
from linbench.cli.help_panels import MeasureOption, OutputOption, ShapeOption, WhatOption
from linbench.cli.outputs import run_out
from linbench.cli.run_flow import RANGE_HELP, execute_sweep, sweep_request
from linbench.results.protocol import ENOUGH_THRESHOLD, EXTEND_ABOVE, TRUST_PROCESSES

HELP = {
    "against": "Impls measured beside the variants, the reference they are judged against: NAME or NAME:IMPL "
    "(repeatable or comma list). Default: softmax, every impl that runs on the device.",
    "yes": "Run a sweep past 2000 points or 2 h by the estimate (refused without it).",
    "dry_run": "Print the plan (points, impls, estimated time) and make no folder.",
    "budget": "A budget file (`linbench budget` makes one): after the run, exit 1 when a point's time or memory "
    "is over its limit (saying by how much), or it failed, timed out or ran out of memory against one; exit 4 "
    "when a limit judged no point.",
    "allow_failures": "Exit 0 even when points failed (mismatch, error, crashed); without it such a run exits 1.",
    "seq": f"Sequence lengths: {RANGE_HELP}. Default: 1k..16k.",
    "dim_v": "Head dims of v, crossed with --dim. Default: the same as --dim.",
    "chunk": "Chunk sizes (32,64,128), an axis of the impls that take chunk_size (chunked forms, kernels); "
    "each is checked against what each impl takes. Default: each impl's own.",
    "mode": "fwd, bwd, fwdbwd (comma list). Default: fwd.",
    "timeout_s": "Limit per point, seconds (an impl torch.compile builds gets 300 s more a process, to compile). "
    "Default: 120.",
    "quiet": "No progress display; a summary line at the end.",
    "budget_s": "Seconds of timed repetitions per point. Default: 1 on CPU, 0.5 on GPU.",
    "param": "An impl's parameter, repeatable: cosine:kernel.chunk_size=128 (one impl), "
    "cosine.norm_const=0.3 (every cosine impl that takes it), softmax:sdpa.backend=flash.",
    "threads": "torch threads in each worker (torch.set_num_threads). Default on CPU: one per core idle when "
    "the run starts (at least one), following the idle cores between points; on GPU: torch's.",
    "warmup_s": "Seconds of untimed warm-up per point. Default: 0.2 on CPU, 0.1 on GPU.",
    "min_reps": "Fewest timed repetitions per point. Default: 3 on CPU, 10 on GPU.",
    "processes": "Fresh worker processes per point, in interleaved rounds (several for a regression gate, as "
    "its suite says: the noise that separates runs is between processes, not within one). Default: 1.",
    "max_processes": f"The most processes per point when its first ones disagree by more than {EXTEND_ABOVE:.0%}; "
    f"past {TRUST_PROCESSES}, only while they are too spread for compare to judge within {ENOUGH_THRESHOLD:.0%}. "
    f"Default: {TRUST_PROCESSES} when --processes > 1.",
    "only_points": "Measure only the points of the sweep that this CSV names by their key columns (a results.csv "
    "or rows of one); a point it names that the sweep lacks is refused. linbench ab's extra rounds use it.",
    "no_check": "Measure each point without its correctness check against the fp64 reference first "
    "(linbench ab's rounds after the first, which checked every point). Default: checked.",
    "mix": "With --resume: go on although this machine's device, torch or linbench commit differs from "
    "the run's (the run then mixes them).",
    "cuda_graph": "Also capture one call of each point in a CUDA graph and time its replays (device_ms, "
    "the call without host launch gaps) beside the eager time_ms. CUDA only.",
    "tokens": "A fixed token budget (64k): each point's batch is tokens / seq, in place of --batch; "
    "every seq must divide it. With --pack or --lengths-file: the pack's tokens.",
    "pack": "Run a pack of --tokens tokens in place of --seq and --batch, its lengths drawn from a "
    "distribution: uniform:max=4k[,min=128], lognormal:mean=2k[,sigma=1] (or median=N), each [,seed=N].",
    "lengths_file": "Run a pack of --tokens tokens whose lengths a file lists (whole numbers of at least 1, "
    "whitespace or commas, # comments), in order and from the top again.",
    "packing": "How each impl runs the pack: packed (its sequences' boundaries, cu_seqlens), padded (each "
    "sequence padded to the longest); comma list. Default: both, where the impl can.",
}


def run_command(
    variant: Annotated[
        list[str] | None,
        WhatOption(
            "--variant", help="NAME or NAME:IMPL (repeatable or comma list); 'all' for every variant. Default: all."
        ),
    ] = None,
    against: Annotated[list[str] | None, WhatOption("--against", help=HELP["against"])] = None,
    no_against: Annotated[bool, WhatOption("--no-against", help=NO_AGAINST_HELP)] = False,
    seq: Annotated[str | None, ShapeOption("--seq", help=HELP["seq"])] = None,
    batch: Annotated[str | None, ShapeOption("--batch", help="Batch sizes, same grammar. Default: 1.")] = None,
    heads: Annotated[str | None, ShapeOption("--heads", help="Head counts. Default: 8.")] = None,
    kv_heads: Annotated[str | None, ShapeOption("--kv-heads", help=KV_HEADS_HELP)] = None,
    v_heads: Annotated[str | None, ShapeOption("--v-heads", help=V_HEADS_HELP)] = None,
    dim: Annotated[str | None, ShapeOption("--dim", help="Head dims of q and k (and v). Default: 64.")] = None,
    dim_v: Annotated[str | None, ShapeOption("--dim-v", help=HELP["dim_v"])] = None,
    chunk: Annotated[str | None, ShapeOption("--chunk", help=HELP["chunk"])] = None,
    preset: Annotated[str | None, WhatOption("--preset", help=PRESET_HELP)] = None,
    tp: Annotated[str | None, ShapeOption("--tp", help=TP_HELP)] = None,
    gates: Annotated[str | None, WhatOption("--gates", help=GATES_HELP)] = None,
    dtype: Annotated[
        list[str] | None, ShapeOption("--dtype", help="fp32, bf16, fp16 (comma list). Default: fp32.")
    ] = None,
    mode: Annotated[list[str] | None, ShapeOption("--mode", help=HELP["mode"])] = None,
    causal: Annotated[bool, ShapeOption("--causal", help="Causal masking (the default).")] = False,
    bidirectional: Annotated[bool, ShapeOption("--bidirectional", help="No masking.")] = False,
    device: Annotated[str | None, MeasureOption("--device", help=f"{DEVICE_HELP}. Default: auto.")] = None,
    suite: Annotated[Path | None, WhatOption("--suite", help="A TOML suite; flags override its keys.")] = None,
    out: Annotated[Path | None, OutputOption("--out", help="Where run folders are made.  [default: results]")] = None,
    resume: Annotated[
        Path | None, OutputOption("--resume", help="Finish the run in this folder: only its missing points run.")
    ] = None,
    plugin: Annotated[list[Path] | None, WhatOption("--plugin", help=PLUGIN_HELP)] = None,
    timeout_s: Annotated[float | None, MeasureOption("--timeout-s", help=HELP["timeout_s"])] = None,
    budget_s: Annotated[float | None, MeasureOption("--budget-s", help=HELP["budget_s"])] = None,
    cuda_graph: Annotated[bool, MeasureOption("--cuda-graph", help=HELP["cuda_graph"])] = False,
    quiet: Annotated[bool, OutputOption("--quiet", "-q", help=HELP["quiet"])] = False,
    param: Annotated[list[str] | None, WhatOption("--param", help=HELP["param"])] = None,
    threads: Annotated[str | None, MeasureOption("--threads", help=HELP["threads"])] = None,
    warmup_s: Annotated[str | None, MeasureOption("--warmup-s", help=HELP["warmup_s"])] = None,
    min_reps: Annotated[str | None, MeasureOption("--min-reps", help=HELP["min_reps"])] = None,
    tokens: Annotated[str | None, ShapeOption("--tokens", help=HELP["tokens"])] = None,
    pack: Annotated[str | None, ShapeOption("--pack", help=HELP["pack"])] = None,
    lengths_file: Annotated[Path | None, ShapeOption("--lengths-file", help=HELP["lengths_file"])] = None,
    packing: Annotated[list[str] | None, ShapeOption("--packing", help=HELP["packing"])] = None,
    processes: Annotated[str | None, MeasureOption("--processes", help=HELP["processes"])] = None,
    max_processes: Annotated[str | None, MeasureOption("--max-processes", help=HELP["max_processes"])] = None,
    only_points: Annotated[Path | None, WhatOption("--only-points", help=HELP["only_points"])] = None,
    no_check: Annotated[bool, MeasureOption("--no-check", help=HELP["no_check"])] = False,
    mix: Annotated[bool, OutputOption("--mix", help=HELP["mix"])] = False,
    allow_failures: Annotated[bool, OutputOption("--allow-failures", help=HELP["allow_failures"])] = False,
    budget: Annotated[Path | None, OutputOption("--budget", metavar="FILE", help=HELP["budget"])] = None,
    yes: Annotated[bool, OutputOption("--yes", "-y", help=HELP["yes"])] = False,
    dry_run: Annotated[bool, OutputOption("--dry-run", help=HELP["dry_run"])] = False,
    devices: fleet.Devices = None,
    shard: fleet.Shard = None,
    executor: fleet.Executor = None,
    node_exclusive: fleet.NodeExclusive = False,
    nodes: fleet.Nodes = None,
    cpus_per_gpu: fleet.CpusPerGpu = None,
    max_gpus: fleet.MaxGpus = None,
    oversubscribe: fleet.Oversubscribe = False,
    allow_shared_gpu: fleet.AllowSharedGpu = False,
    slurm_partition: fleet.SlurmPartition = None,
    slurm_time: fleet.SlurmTime = None,
    slurm_option: fleet.SlurmOption = None,
    ray_address: fleet.RayAddress = None,
    baseline: OldBaseline = None,
    no_baseline: OldNoBaseline = False,
) -> None:
    """Measure time and peak memory of attention impls across sizes; write results.csv and meta.json."""
    options = locals()  # every option, by its parameter name: the request takes the sweep's
    with usage_errors():
        options = take_old_names(options)
        request = sweep_request("run", options, causal=_masking(causal, bidirectional))
        spread = fleet.fleet_options(options)
        out = run_out(resume, out)
        if budget is not None:
            _read_budget(budget)  # a bad budget file is refused before anything is measured
    if spread.given or (resume is not None and (resume / "fleet.json").is_file()):
        from linbench.cli.fleet_flow import execute_fleet

        if only_points is not None:
            exit_usage_error("--only-points measures some points on one device; drop it for a run over several GPUs")
        if mix:
            exit_usage_error("--mix resumes a run made on one device; a run over several GPUs never mixes them")
        execute_fleet(
            request,
            spread,
            resume=resume,
            out=out,
            quiet=quiet,
            allow_failures=allow_failures,
            yes=yes,
            dry_run=dry_run,
        )
        return
    folder = execute_sweep(
        request,
        resume=resume,
        out=out,
        quiet=quiet,
        allow_failures=allow_failures,
        yes=yes,
        dry_run=dry_run,
        mix=mix,
        only_points=only_points,
        check=not no_check,
    )
    if budget is not None and folder is not None:
        from linbench.cli.budget_cmd import judge_budget

        judge_budget(folder, budget)


def _read_budget(path: Path) -> None:
    from linbench.history.budget import read

    read(path)


def _masking(causal: bool, bidirectional: bool) -> bool | None:
    """True for --causal, False for --bidirectional, None (the suite's or the default) for neither."""
    if causal and bidirectional:
        raise CliUsageError("--causal and --bidirectional exclude each other")
    return True if causal else False if bidirectional else None
