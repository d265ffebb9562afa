"""``linbench decode``: time per generated token and the memory a decoder holds, by context.

Each point prefills a context (untimed, with the decoder's parallel form), then times
single-token steps: a linear variant's recurrent state against softmax's KV cache and
its naive recomputation, the comparison of Cottention's Figure 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from linbench.cli.against_options import NO_AGAINST_HELP, OldBaseline, OldNoBaseline, take_old_names
from linbench.cli.common import DEVICE_HELP, GATES_HELP, KV_HEADS_HELP, PLUGIN_HELP, PRESET_HELP, TP_HELP, V_HEADS_HELP
from linbench.cli.errors import usage_errors
from linbench.cli.help_panels import MeasureOption, OutputOption, ServingOption, ShapeOption, WhatOption
from linbench.cli.outputs import run_out
from linbench.cli.run_flow import RANGE_HELP, execute_sweep, sweep_request

# Every dtype --state-dtype takes (linbench/dtypes.py), the usual first.
STATE_DTYPES = ("fp32", "bf16", "fp16", "fp64")
HELP = {
    "yes": "Run a sweep past 2000 points or 2 h by the estimate (refused without it).",
    "dry_run": "Print the plan (points, impls, estimated time) and make no folder.",
    "allow_failures": "Exit 0 even when points failed (mismatch, error, crashed); without it such a run exits 1.",
    "variant": "NAME or NAME:DECODER (repeatable or comma list): cosine, cosine:recurrent, 'all'. Default: all.",
    "against": "Decoders measured beside the variants, the reference they are judged against. "
    "Default: softmax (kvcache and recompute).",
    "context": f"Context lengths prefilled before the timed steps: {RANGE_HELP}. Default: 1k..64k.",
    "tokens": "Generated tokens timed per point, after two untimed steps (the first, whose memory is read, "
    "and one more). Default: 32.",
    "timeout_s": "Limit per point (prefill and steps), seconds. Default: 120.",
    "param": "A parameter of a variant's decoders, repeatable: cosine.norm_const=0.3, cosine:recurrent.norm_const=0.3.",
    "threads": "torch threads in each worker (torch.set_num_threads). Default on CPU: one per core idle when "
    "the run starts (at least one), following the idle cores between points; on GPU: torch's.",
    "processes": "Fresh worker processes per point, in interleaved rounds, as run's (5 for a regression gate: "
    "compare judges decode points as it judges run points). Default: 1.",
    "max_processes": "The most processes per point when its first ones disagree, as run's.",
    "tokens_per_step": "Serving: tokens each request takes a step (speculative decoding's drafts, MTP), "
    "range grammar (1,4). The state after each is kept; --accept rolls each request back.",
    "state_dtype": f"Serving: the dtype the state is kept in between steps: {', '.join(STATE_DTYPES)} (comma list; "
    "fp64 keeps it exact, so its drift is the step's own rounding); the step computes in --dtype. A KV cache keeps "
    "--dtype.",
    "state_layout": "Serving: how the pool lays out each head's state matrix: v-last (H, Dk, Dv; linbench's "
    "and fla's) or k-last (H, Dv, Dk; FlashInfer's), comma list. A decoder stepping the other layout "
    "converts in the step (timed); kda:fla-recurrent's kernel takes both. Default: v-last.",
    "pool": "Serving: state pool slots (at least the largest batch); each request holds a scattered slot, "
    "gathered and written back each step (kda:fla-recurrent: by its kernel, T slots a request). "
    "Default: the batch (× T for kda:fla-recurrent).",
    "accept": "Serving: tokens a request keeps of a step's --tokens-per-step: all, a count (2), or a rate "
    "(0.7: each draft token after the first accepted with that probability). Default: all.",
    "contexts": "Serving: the requests' contexts drawn from a distribution, as run --pack's: "
    "lognormal:mean=2k, uniform:min=1k,max=8k (seed=N); replaces --context.",
    "drift_steps": "Serving: steps after which state_drift (the state kept in --state-dtype against fp64) "
    "is read. Default: 256.",
    "memory_budget": "Serving: memory requests_fit counts against (80GiB, 512m). Default: the device's "
    "memory (CPU: the machine's available memory).",
    "cuda_graph": "Also capture one step in a CUDA graph and time its replays (the step's device time, "
    "column device_ms) beside the eager time. CUDA only.",
}


def decode_command(
    variant: Annotated[list[str] | None, WhatOption("--variant", help=HELP["variant"])] = None,
    against: Annotated[list[str] | None, WhatOption("--against", help=HELP["against"])] = None,
    no_against: Annotated[bool, WhatOption("--no-against", help=NO_AGAINST_HELP)] = False,
    context: Annotated[str | None, ShapeOption("--context", help=HELP["context"])] = None,
    tokens: Annotated[str | None, MeasureOption("--tokens", help=HELP["tokens"])] = None,
    batch: Annotated[str | None, ShapeOption("--batch", help="Batch sizes, same grammar. Default: 1.")] = None,
    heads: Annotated[str | None, ShapeOption("--heads", help="Head counts. Default: 8.")] = None,
    kv_heads: Annotated[str | None, ShapeOption("--kv-heads", help=KV_HEADS_HELP)] = None,
    v_heads: Annotated[str | None, ShapeOption("--v-heads", help=V_HEADS_HELP)] = None,
    preset: Annotated[str | None, WhatOption("--preset", help=PRESET_HELP)] = None,
    tp: Annotated[str | None, ShapeOption("--tp", help=TP_HELP)] = None,
    gates: Annotated[str | None, WhatOption("--gates", help=GATES_HELP)] = None,
    dim: Annotated[str | None, ShapeOption("--dim", help="Head dims of q and k (and v). Default: 64.")] = None,
    dim_v: Annotated[
        str | None, ShapeOption("--dim-v", help="Head dims of v, crossed with --dim. Default: the same as --dim.")
    ] = None,
    dtype: Annotated[
        list[str] | None, ShapeOption("--dtype", help="fp32, bf16, fp16 (comma list). Default: fp32.")
    ] = None,
    device: Annotated[str | None, MeasureOption("--device", help=f"{DEVICE_HELP}. Default: auto.")] = None,
    suite: Annotated[Path | None, WhatOption("--suite", help="A decode suite (TOML); flags override it.")] = None,
    out: Annotated[Path | None, OutputOption("--out", help="Where run folders are made.  [default: results]")] = None,
    resume: Annotated[
        Path | None, OutputOption("--resume", help="Finish the run in this folder: only its missing points run.")
    ] = None,
    plugin: Annotated[list[Path] | None, WhatOption("--plugin", help=PLUGIN_HELP)] = None,
    timeout_s: Annotated[float | None, MeasureOption("--timeout-s", help=HELP["timeout_s"])] = None,
    cuda_graph: Annotated[bool, MeasureOption("--cuda-graph", help=HELP["cuda_graph"])] = False,
    quiet: Annotated[bool, OutputOption("--quiet", "-q", help="No progress display; a summary line.")] = False,
    param: Annotated[list[str] | None, WhatOption("--param", help=HELP["param"])] = None,
    threads: Annotated[str | None, MeasureOption("--threads", help=HELP["threads"])] = None,
    processes: Annotated[str | None, MeasureOption("--processes", help=HELP["processes"])] = None,
    max_processes: Annotated[str | None, MeasureOption("--max-processes", help=HELP["max_processes"])] = None,
    tokens_per_step: Annotated[str | None, ServingOption("--tokens-per-step", help=HELP["tokens_per_step"])] = None,
    state_dtype: Annotated[list[str] | None, ServingOption("--state-dtype", help=HELP["state_dtype"])] = None,
    state_layout: Annotated[list[str] | None, ServingOption("--state-layout", help=HELP["state_layout"])] = None,
    pool: Annotated[str | None, ServingOption("--pool", help=HELP["pool"])] = None,
    accept: Annotated[str | None, ServingOption("--accept", help=HELP["accept"])] = None,
    contexts: Annotated[str | None, ServingOption("--contexts", help=HELP["contexts"])] = None,
    drift_steps: Annotated[str | None, ServingOption("--drift-steps", help=HELP["drift_steps"])] = None,
    memory_budget: Annotated[str | None, ServingOption("--memory-budget", help=HELP["memory_budget"])] = None,
    allow_failures: Annotated[bool, OutputOption("--allow-failures", help=HELP["allow_failures"])] = False,
    yes: Annotated[bool, OutputOption("--yes", "-y", help=HELP["yes"])] = False,
    dry_run: Annotated[bool, OutputOption("--dry-run", help=HELP["dry_run"])] = False,
    baseline: OldBaseline = None,
    no_baseline: OldNoBaseline = False,
) -> None:
    """Measure autoregressive decoding: time per token and state memory against context length."""
    options = locals()  # every option, by its parameter name: the request takes the sweep's
    with usage_errors():
        options = take_old_names(options)
        request = sweep_request("decode", options)
        out = run_out(resume, out)
    execute_sweep(
        request,
        resume=resume,
        out=out,
        quiet=quiet,
        allow_failures=allow_failures,
        yes=yes,
        dry_run=dry_run,
    )
