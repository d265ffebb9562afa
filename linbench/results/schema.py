"""Every column of a run folder's CSV files, declared once (docs/results-columns.md is generated from here).

results.csv holds one row per point, processes.csv one row per worker process that measured
a point (a point is measured in one or more processes; see linbench/results/processes.py),
samples.csv one row per timed repetition. Rows are checked against these declarations when
they are written: a column that is not declared here (a misspelt name) is an error, never an
empty cell. ``SCHEMA_VERSION`` goes into meta.json and changes whenever a column does.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from linbench.shape import MODES
from linbench.units import as_number

# MODES is shape.py's (the variants count FLOPs by mode, and they sit below this schema).
__all__ = [
    "COLUMNS",
    "COMBINES",
    "DECODE_MODE",
    "FAILED_STATUSES",
    "GROUPED_BYTES_SCHEMA",
    "HOST_SYNCS_SCHEMA",
    "KEY_COLUMNS",
    "KEY_DEFAULTS",
    "MEASURED_COLUMNS",
    "MEASURED_SCHEMA",
    "MODES",
    "PROCESS_COLUMNS",
    "REQUIRED_KEY_COLUMNS",
    "REQUIRED_RESULT_COLUMNS",
    "RESULT_COLUMNS",
    "SAMPLE_COLUMNS",
    "SCHEMA_VERSION",
    "STATUSES",
    "WHERE_COLUMNS",
    "Column",
    "UnknownColumnError",
    "cell",
    "checked",
]

# 2: processes.csv, the process column of samples.csv, and the between-process columns.
# 3: results.csv's bytes (the roofline's traffic, recorded per point).
# 4: a pack's columns (pack, packing, sequences, padding_waste).
# 5: neighbour_cpu and oversubscribed (CPU points measured beside other processes).
# 6: where a point was measured (host, GPU, cores, shard, attempt): the ``where`` columns.
# 7: kv_heads and chunk in every file's key, gqa in results.csv.
# 8: cpu_ms_p20 (the 20th percentile of the repetitions' process CPU times on a CPU).
# 9: alloc_peak_bytes (a CPU call's peak of live bytes allocated through torch).
# 10: v_heads in every file's key (more value heads than q/k heads, GVA); decode as it is
#    served: tokens_per_step and state_dtype in the key, and pool, accept, contexts,
#    accepted_per_step, time_per_accepted_token_ms, state_bytes_per_request, state_drift,
#    drift_steps, memory_budget_bytes, requests_fit and graph_pools in results.csv.
#    The backend (the library and kernel that answered the call), and on CUDA kernel-only device
#    time and energy per call: kernel_ms, kernel_names, host_overhead_ms, energy_j, power_w,
#    tokens_per_j, power_limit_w, mem_clock_mhz, device_split_note.
# 11: state_layout in every file's key (decode --state-layout: the pool's v-last or k-last
#    state); alloc_call_timed in processes.csv (whether the profiled call that counted
#    allocations was one of the timed repetitions).
# 12: energy_window_s and energy_updates (energy_j's window between two updates of NVML's energy counter)
# 12: kernel_ms is the union of a call's kernel intervals (two streams' overlaps count once), not their sum
# 13: triton_configs, triton_config_source and autotune_s (a Triton impl's autotuned configs).
# 13: compile_s also counts Triton's compiler (a Triton impl's kernels).
# 14: tp in results.csv (the tensor-parallel ranks a preset's heads are one rank's shard of).
# 14: bytes counts each of q, k, v and the output at its own heads (before: all at the value heads).
# 15: paced_p20, pace_ms and pace_work in processes.csv (a one-thread CPU call over a reference call).
# 16: host_syncs (CUDA: the synchronising operations of one call, linbench/measure/host_syncs.py).
SCHEMA_VERSION = 16
# The first schema whose bytes count each tensor at its own heads (report/roofline.py corrects older runs').
GROUPED_BYTES_SCHEMA = 14
# The first schema that counts host syncs (a run of an older one has no column for them: the
# count was never taken, which is not a count that failed; gate/compare.py names it).
HOST_SYNCS_SCHEMA = 16
# meta.json's key for the oldest schema a merged run's figures were measured under (an A/B's
# baseline rounds, by an older linbench), where it differs from the file's own schema_version.
MEASURED_SCHEMA = "measured_schema_version"

STATUSES = ("ok", "oom", "timeout", "crashed", "mismatch", "skipped", "error")
# Statuses that mean a wrong or broken impl: run and decode exit 1 when a point ends so, and a
# budget fails such a point. oom, timeout and skipped are where a sweep stops reaching.
FAILED_STATUSES = ("mismatch", "error", "crashed")
# The mode of a decode row (run rows are fwd, bwd or fwdbwd: MODES).
DECODE_MODE = "decode"

# How a column of results.csv comes from a point's processes (linbench/results/processes.py
# does the combining; linbench/results/record.py builds the row):
#   key      the point itself (every file's key), as the plan made it
#   point    a fact of the point fixed when the sweep is planned (record.PointFacts)
#   gate     the correctness check's, measured once per point (record.Checked)
#   rate     derived from the point's time (record.py)
#   process  processes.csv (and samples.csv) only: one process's bookkeeping
#   where    where and when the point ran, stamped on its row by the fleet agent that ran it
#            (linbench/fleet/); empty in a run made without one
# and, combined over the processes of a point that all ended ok:
#   first    the first process's value that is not empty (measured once: the same in all)
#   median   the median of the processes' values (a time: the median of process medians)
#   max      the largest reading (memory, temperature)
#   sum      the processes' values added up (repetitions)
#   union    every reason any process gave, each once (";"-separated)
#   any      True when any process's is True
#   notes    every note any process gave, each once ("; "-separated)
#   count    how many processes there were
#   fastest  the fastest process median; slowest: the slowest
#   spread   1.4826·MAD of the log gated times (processes.log_spread)
#   timing   "graph" when every process has a CUDA-graph time, else "eager"
#   graph    the median CUDA-graph time, where every process has one
COMBINES = (
    *("key", "point", "gate", "rate", "process", "where", "first", "median", "max", "sum", "union", "any", "notes"),
    *("count", "fastest", "slowest", "spread", "timing", "graph"),
)


class UnknownColumnError(KeyError):
    """A row names a column its file does not declare (a bug in the code that wrote it)."""


@dataclass(frozen=True)
class Column:
    name: str
    kind: type  # str, int, float or bool: how a cell is written and read back
    doc: str
    combine: str  # how results.csv gets it from a point's processes: one of COMBINES

    def parse(self, value: Any) -> Any:
        """``value`` (a cell read back from CSV, or a value as written) as ``kind``; None for
        an empty cell or one that does not read as ``kind``."""
        if value is None or value == "":
            return None
        if self.kind is str:
            return str(value)
        if self.kind is bool:
            return value if isinstance(value, bool) else {"True": True, "False": False}.get(str(value))
        number = as_number(value)
        if number is None or self.kind is float:
            return number
        return int(number) if math.isfinite(number) and number == int(number) else None


def _group(combine: str, *specs: tuple[str, type, str]) -> list[Column]:
    return [Column(name, kind, doc, combine) for name, kind, doc in specs]


# Every column of every file, once: name, type, meaning, grouped by how results.csv combines it.
COLUMNS = {
    column.name: column
    for column in (
        *_group(
            "key",
            ("variant", str, "the variant (cosine, softmax, ...)"),
            ("impl", str, "the implementation of the variant (chunked, kernel, sdpa, ...)"),
            ("mode", str, "fwd, bwd (backward alone), fwdbwd (forward and backward) or decode (one generated token)"),
            ("causal", bool, "causal masking"),
            ("dtype", str, "fp64, fp32, bf16 or fp16"),
            ("device", str, "cpu, cuda:0, ..."),
            ("batch", int, "batch size"),
            ("heads", int, "attention heads"),
            ("seq", int, "sequence length (for decode: the context)"),
            ("dim_k", int, "head dimension of queries and keys"),
            ("dim_v", int, "head dimension of values"),
            ("kv_heads", int, "key/value heads (fewer than heads: grouped-query attention; older runs: heads)"),
            ("chunk", int, "tokens per chunk, for an impl that takes chunk_size in a --chunk sweep (else empty)"),
            (
                "v_heads",
                int,
                "value heads (more than heads: GVA, each q/k head serving v_heads / heads; older runs: heads)",
            ),
            ("tokens_per_step", int, "decode --tokens-per-step: tokens each request takes a step (else empty)"),
            (
                "state_dtype",
                str,
                "decode --state-dtype: the dtype the state is kept in between steps (empty: the compute dtype)",
            ),
            (
                "state_layout",
                str,
                "decode --state-layout: v-last (H, Dk, Dv) or k-last (H, Dv, Dk), how the serving pool keeps "
                "each head's state matrix (empty: v-last, or a KV cache)",
            ),
        ),
        *_group(
            "point",
            ("device_name", str, "the device's model name"),
            ("flops", float, "floating-point operations of one call, by the variant's count"),
            (
                "bytes",
                int,
                "run: the fewest bytes one call moves (inputs read once, outputs written once, each at its own "
                "heads, gates and β included): the roofline's traffic",
            ),
            ("context", int, "decode: the context prefilled before the timed steps (the same as seq)"),
            (
                "tp",
                int,
                "--tp: the tensor-parallel ranks a preset's heads are split over, the row's heads being one "
                "rank's shard (1: a preset without --tp; empty: no preset)",
            ),
            ("params", str, "--param values of the impl that differ from its defaults (k=v;k=v)"),
            ("pool", int, "decode --pool: the state pool's slots, each request holding one (serving points)"),
            ("accept", str, "decode --accept: tokens a request keeps a step: all, a count or a rate"),
            ("contexts", str, "decode --contexts: the distribution the requests' contexts are drawn from"),
            ("pack", str, "run --pack: where the pack's lengths come from, @ its real tokens"),
            ("packing", str, "run --pack: packed (one batch with the boundaries) or padded (to the longest)"),
            ("sequences", int, "run --pack: the sequences in the pack"),
            ("padding_waste", float, "run --pack: the share of the tokens computed that is padding"),
            (
                "gqa",
                str,
                "with fewer key/value heads than heads: native (one state per key/value head) or expanded "
                "(k and v repeated to every head inside the call); with more value heads (v_heads, GVA): native "
                "(the kernel takes them) or expanded (q and k repeated to every value head)",
            ),
        ),
        # What was measured (per process in processes.csv; over processes in results.csv).
        *_group(
            "first",
            ("status", str, "ok, oom, timeout, crashed, mismatch, skipped or error"),
            ("cuda_graph", bool, "whether one call (a decode step) was also timed as CUDA-graph replays"),
            ("graph_error", str, "why a call could not be captured in a CUDA graph"),
            ("kernels_per_call", int, "CUDA: GPU kernels one call launches (counted once, exact)"),
            (
                "host_syncs",
                int,
                "CUDA: times one call makes the host wait for the GPU (a device value read on the host, a "
                "blocking copy: torch's sync debug mode, counted once); above 0 the call's time includes "
                "the host's",
            ),
            ("threads", int, "torch threads the worker ran with"),
            ("state_bytes", int, "decode: the bytes the decoder's state holds"),
            (
                "state_bytes_per_request",
                int,
                "decode (serving): what one request holds between steps: its pool slot, or its KV cache",
            ),
            ("accepted_per_step", float, "decode (serving): tokens a request keeps per step, on average"),
            (
                "state_drift",
                float,
                "decode (serving): relative error of the last of drift_steps steps with the state kept in "
                "state_dtype, against the same steps in fp64 from the same prefilled state",
            ),
            ("drift_steps", int, "decode (serving): the steps state_drift is measured after"),
            (
                "graph_pools",
                int,
                "decode (serving) with --cuda-graph: the rotating pools the step's graphs were replayed over, "
                "so that each replay read its pool cold",
            ),
            (
                "memory_budget_bytes",
                int,
                "decode (serving): the memory requests_fit counts against (--memory-budget, else the device's)",
            ),
            (
                "compile_s",
                float,
                "seconds spent compiling, outside the timed calls: torch.compile's (compiled impls), else Triton's "
                "compiler for a Triton impl's kernels not in its on-disk cache yet",
            ),
            (
                "backend",
                str,
                "the library and kernel that answered the call (fla-triton chunk_gated_delta_rule, torch sdpa "
                "flash, linbench csrc, torch eager, ...): what the impl's call said it ran, else what it declares",
            ),
            (
                "kernel_names",
                str,
                "CUDA: the kernels, memcpys and memsets one call ran, each once, without template arguments "
                "(;-separated): which library's kernels answered",
            ),
            ("power_limit_w", float, "CUDA: the GPU's enforced power limit while the point ran (NVML)"),
            ("mem_clock_mhz", float, "CUDA: the GPU's memory clock while the point ran (NVML)"),
            (
                "device_split_note",
                str,
                "why kernel_ms or energy_j is empty (a CPU has neither; NVML without an energy counter; a "
                "profiler trace that lost records)",
            ),
        ),
        *_group(
            "median",
            (
                "time_ms",
                float,
                "median time of one call (results.csv: median of process medians; samples.csv: one call)",
            ),
            ("time_ms_p20", float, "20th percentile of the repetitions (results.csv: median over processes)"),
            ("time_ms_p80", float, "80th percentile of the repetitions (results.csv: median over processes)"),
            (
                "cpu_ms_p20",
                float,
                "CPU: 20th percentile of the repetitions' process CPU times, every thread of the worker (what "
                "preemption by another process does not add to; results.csv: median over processes)",
            ),
            ("sm_clock_mhz", float, "CUDA: SM clock while the point ran"),
            (
                "kernel_ms",
                float,
                "CUDA: device time of one call's kernels, memcpys and memsets, the union of their intervals (two "
                "streams' overlapping kernels count once; torch.profiler, 3 calls after the timed ones, each after "
                "an L2 flush; the median call's)",
            ),
            (
                "energy_j",
                float,
                "CUDA: joules per call: the average power between two updates of NVML's total-energy counter at "
                "least 0.5 s apart, while calls ran back to back after the timed ones, times one such call's time",
            ),
            ("power_w", float, "CUDA: the GPU's average power over those calls (W)"),
            (
                "energy_window_s",
                float,
                "CUDA: seconds between the two counter updates energy_j was read across (results.csv: median "
                "over processes)",
            ),
            (
                "energy_updates",
                int,
                "CUDA: the energy counter's updates in that window (about 10 a second; results.csv: median over "
                "processes)",
            ),
        ),
        *_group(
            "sum",
            ("samples", int, "timed repetitions (results.csv: over all processes)"),
            (
                "autotune_s",
                float,
                "Triton impls: seconds Triton's autotuner spent choosing configs (benchmarking them; their "
                "compiles are in compile_s), outside the timed calls; 0 where every config came from the store "
                "(results.csv: over all processes)",
            ),
        ),
        *_group(
            "max",
            (
                "peak_bytes",
                int,
                "peak memory of one call above the inputs (CUDA: torch's allocator peak; CPU: peak RSS, which "
                "counts the process's history; results.csv: the largest process's)",
            ),
            (
                "alloc_peak_bytes",
                int,
                "CPU: peak of the live bytes one call allocated through torch, above what was live before it "
                "(torch.profiler's memory events, in a call of its own: a warm-up call, or a timed one where "
                "alloc_call_timed): the same in every process; the CPU's memory figure",
            ),
            ("reserved_bytes", int, "CUDA: the caching allocator's reserved peak"),
            ("nvml_peak_bytes", int, "CUDA: the device memory NVML saw in use at the peak"),
            ("temp_c", float, "CUDA: GPU temperature while the point ran"),
            (
                "neighbour_cpu",
                float,
                "CPU: cores other processes used during the timed repetitions (/proc/stat's busy time less the "
                "worker's own CPU time; results.csv: the most of any process)",
            ),
        ),
        *_group(
            "any",
            (
                "oversubscribed",
                bool,
                "CPU: other processes took cores the worker's threads needed while it was timed (neighbour_cpu + "
                "threads above the cores by more than a quarter core); such a point is left out of fits, "
                "crossovers and the gate",
            ),
        ),
        *_group(
            "union",
            ("throttle_reasons", str, "CUDA: NVML's clock throttle reasons while the point ran"),
            (
                "triton_configs",
                str,
                "Triton impls: each autotuned kernel the call ran and the config that ran, chosen at the point's "
                "own shape (KERNEL: BLOCK=64 warps=4 stages=2; ;-separated; results.csv: every one any process "
                "ran, so a kernel named twice ran two configs)",
            ),
            (
                "triton_config_source",
                str,
                "Triton impls: where triton_configs came from: tuned (in the process, at the point's shape) or "
                "cache (linbench's store, tuned at the same point by an earlier process or linbench warm)",
            ),
        ),
        *_group("notes", ("error", str, "why the point is not ok (or a note on an ok point)")),
        *_group("graph", ("device_ms", float, "median time of one CUDA-graph replay: device time without launches")),
        *_group("count", ("processes", int, "worker processes that measured the point (no two of them one process)")),
        *_group("fastest", ("time_ms_proc_lo", float, "the fastest process median")),
        *_group("slowest", ("time_ms_proc_hi", float, "the slowest process median")),
        *_group(
            "spread", ("between_spread", float, "1.4826·MAD of the log process medians: the noise between processes")
        ),
        *_group("timing", ("timing", str, "the time a gate judges: graph (device_ms) or eager (time_ms)")),
        *_group(
            "gate",
            ("rel_err", float, "the correctness gate's relative error against the fp64 reference"),
            ("check_seq", int, "the length the correctness gate ran at"),
        ),
        *_group(
            "rate",
            ("tflops", float, "flops / time_ms"),
            ("time_per_token_ms", float, "decode: the median time of one step"),
            (
                "tokens_per_s",
                float,
                "run: batch·seq tokens processed per second (a pack's: its real tokens); decode (serving): the "
                "batch's accepted tokens per second",
            ),
            (
                "time_per_accepted_token_ms",
                float,
                "decode (serving): the step's time over the tokens a request keeps per step",
            ),
            ("requests_fit", int, "decode (serving): requests at this context whose state fits memory_budget_bytes"),
            (
                "host_overhead_ms",
                float,
                "CUDA: time_ms − kernel_ms, the call's time its kernels do not account for (Python, dispatch, "
                "launches the GPU waits on)",
            ),
            ("tokens_per_j", float, "run, CUDA: tokens processed per joule (the tokens of tokens_per_s / energy_j)"),
        ),
        # processes.csv and samples.csv only.
        *_group(
            "process",
            ("process", int, "the round that ran the process (0, 1, ...)"),
            ("pid", int, "the worker's process id"),
            ("wall_s", float, "seconds from handing the task to the worker to its result"),
            ("timed_s", float, "seconds of timed repetitions inside the process"),
            (
                "alloc_call_timed",
                bool,
                "CPU: the profiled call that counted alloc_peak_bytes was one of the timed repetitions (its "
                "profiler cost under 0.5% of its time); false: an untimed call; empty: none in this process",
            ),
            (
                "paced_p20",
                float,
                "CPU, one torch thread: 20th percentile of the repetitions' CPU time over the CPU time of a fixed "
                "reference call timed right before each (pace_work): the call's cost in reference calls, which a "
                "virtual core's slow and fast phases divide out of (what the gate judges where both sides have it)",
            ),
            ("pace_ms", float, "CPU, one torch thread: median CPU time of the reference call beside the repetitions"),
            ("pace_work", str, "CPU, one torch thread: the reference call paced_p20 is counted in"),
        ),
        # results.csv of a run spread over several GPUs (docs/scale-out.md): one agent per GPU
        # measured the point, and says where. A run made without the fleet leaves them empty.
        *_group(
            "where",
            ("host", str, "fleet: the host the point ran on"),
            ("gpu_uuid", str, "fleet: the physical GPU's UUID (a MIG slice's parent)"),
            ("mig_uuid", str, "fleet: the MIG slice the point ran on, when it ran on one"),
            ("gpu_pci", str, "fleet: the GPU's PCI bus id (0000:41:00.0)"),
            ("gpu_index", int, "fleet: the GPU's nvidia-smi index (PCI order) on its host"),
            ("numa_node", int, "fleet: the GPU's NUMA node (empty where the host does not say)"),
            ("cpu_affinity", str, "fleet: the cores the agent and its workers ran on (8-15)"),
            ("numa_local", bool, "fleet: every one of those cores is on the GPU's NUMA node"),
            ("shared_cores", bool, "fleet: another agent shared some of those cores (--oversubscribe)"),
            ("shard", str, "fleet: the shard of the plan the point belongs to (s000, ...)"),
            ("attempt", int, "fleet: the attempt of its shard that wrote the row (1, 2, ...)"),
            ("agent_pid", int, "fleet: the agent process that ran the point"),
            ("started_at", str, "fleet: UTC time the point's measurement began"),
            ("finished_at", str, "fleet: UTC time its row was written"),
            (
                "foreign_gpu_procs",
                int,
                "fleet: other processes on the GPU when the point began (any: the point is skipped)",
            ),
        ),
    )
}

# Where a fleet run measured a point (the ``where`` columns, in declaration order).
WHERE_COLUMNS = tuple(name for name, column in COLUMNS.items() if column.combine == "where")
_FIRST_KEYS = ("variant", "impl", "mode", "causal", "dtype", "device", "batch", "heads", "seq", "dim_k", "dim_v")
KEY_COLUMNS = (*_FIRST_KEYS, "kv_heads", "chunk", "v_heads", "tokens_per_step", "state_dtype", "state_layout")
# What a key column of a row from before it existed reads as (record.row_key): kv_heads and
# v_heads the row's heads, the others empty.
KEY_DEFAULTS = {
    "kv_heads": "heads",
    "chunk": None,
    "v_heads": "heads",
    "tokens_per_step": None,
    "state_dtype": None,
    "state_layout": None,
}
# The key columns every run file has had (a reader fills the rest as KEY_DEFAULTS says).
REQUIRED_KEY_COLUMNS = _FIRST_KEYS
# results.csv: the order of earlier versions, new columns at the end but for the key's (readers go
# by the header, and a resumed run rewrites an older header: store.py).
RESULT_COLUMNS = (
    *_FIRST_KEYS[:6],
    "device_name",
    *_FIRST_KEYS[6:],
    # Schema 7: the key's last columns beside the others, so that a torn row's key still reads
    # (schema 10's v_heads, tokens_per_step and state_dtype among them).
    *KEY_COLUMNS[len(_FIRST_KEYS) :],
    *("status", "time_ms", "time_ms_p20", "time_ms_p80", "samples", "peak_bytes", "reserved_bytes"),
    *("nvml_peak_bytes", "flops", "tflops", "rel_err", "error", "check_seq", "sm_clock_mhz", "temp_c"),
    *("throttle_reasons", "context", "time_per_token_ms", "state_bytes", "cuda_graph", "device_ms"),
    *("params", "threads", "tokens_per_s"),
    # Schema 2.
    *("processes", "time_ms_proc_lo", "time_ms_proc_hi", "between_spread", "timing", "kernels_per_call"),
    *("graph_error", "compile_s"),
    # Schema 3.
    "bytes",
    # Schema 4.
    *("pack", "packing", "sequences", "padding_waste"),
    # Schema 5.
    *("neighbour_cpu", "oversubscribed"),
    # Schema 6.
    *WHERE_COLUMNS,
    # Schema 7 (and kv_heads, chunk above).
    "gqa",
    # Schema 8.
    "cpu_ms_p20",
    # Schema 9.
    "alloc_peak_bytes",
    # Schema 10.
    *("pool", "accept", "contexts", "accepted_per_step", "time_per_accepted_token_ms", "state_bytes_per_request"),
    *("state_drift", "drift_steps", "memory_budget_bytes", "requests_fit", "graph_pools"),
    *("backend", "kernel_ms", "host_overhead_ms", "kernel_names", "energy_j", "power_w"),
    *("tokens_per_j", "power_limit_w", "mem_clock_mhz", "device_split_note"),
    # Schema 12.
    *("energy_window_s", "energy_updates"),
    # Schema 13.
    *("triton_configs", "triton_config_source", "autotune_s"),
    # Schema 14.
    "tp",
    # Schema 16.
    "host_syncs",
)
# The columns every results.csv has had (later ones are optional when reading).
REQUIRED_RESULT_COLUMNS = tuple(c for c in RESULT_COLUMNS[: RESULT_COLUMNS.index("error") + 1] if c not in KEY_DEFAULTS)
# What one worker process measured for one point: the columns of a process's result.
MEASURED_COLUMNS = (
    *("status", "time_ms", "time_ms_p20", "time_ms_p80", "samples", "peak_bytes", "reserved_bytes"),
    *("nvml_peak_bytes", "sm_clock_mhz", "temp_c", "throttle_reasons", "cuda_graph", "device_ms"),
    *("graph_error", "kernels_per_call", "threads", "state_bytes", "compile_s", "rel_err", "error"),
    *("neighbour_cpu", "oversubscribed", "cpu_ms_p20", "alloc_peak_bytes"),
    *("state_bytes_per_request", "accepted_per_step", "state_drift", "drift_steps", "memory_budget_bytes"),
    "graph_pools",
    *("backend", "kernel_ms", "kernel_names", "energy_j", "power_w", "power_limit_w", "mem_clock_mhz"),
    "device_split_note",
    # Schema 12.
    *("energy_window_s", "energy_updates"),
    # Schema 13.
    *("triton_configs", "triton_config_source", "autotune_s"),
    # Schema 16.
    "host_syncs",
)
PROCESS_COLUMNS = (
    *(*KEY_COLUMNS, "process", "pid", *MEASURED_COLUMNS, "check_seq", "wall_s", "timed_s"),
    # Schema 11.
    "alloc_call_timed",
    # Schema 15.
    *("paced_p20", "pace_ms", "pace_work"),
)
SAMPLE_COLUMNS = (*KEY_COLUMNS, "process", "time_ms")


def checked(row: Mapping[str, Any], columns: tuple[str, ...], file: str) -> dict[str, Any]:
    """``row`` as a dict of ``columns`` (absent ones None); UnknownColumnError for a name
    ``file`` does not declare, and ValueError for a status that is not a status."""
    unknown = sorted(set(row) - set(columns))
    if unknown:
        raise UnknownColumnError(f"{file} has no column {', '.join(map(repr, unknown))}")
    status = row.get("status")
    if status is not None and status not in STATUSES:
        raise ValueError(f"{file}: {status!r} is not a status ({', '.join(STATUSES)})")
    return {column: row.get(column) for column in columns}


def cell(value: Any) -> Any:
    """One value as it is written to CSV: floats to 6 significant digits, None empty."""
    if isinstance(value, float):
        return f"{value:.6g}"
    return "" if value is None else value
