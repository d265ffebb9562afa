"""Every column of a run folder's CSV files, declared once (docs/results-columns.md is generated from here).

results.csv holds one row per point, processes.csv one row per worker process that measured
a point (a point is measured in one or more processes; see linbench/results/processes.py),
samples.csv one row per timed repetition. Rows are checked against these declarations when
they are written: a column that is not declared here (a misspelt name) is an error, never an
empty cell. ``SCHEMA_VERSION`` goes into meta.json and changes whenever a column does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# 2: processes.csv, the process column of samples.csv, and the between-process columns.
SCHEMA_VERSION = 2

STATUSES = ("ok", "oom", "timeout", "crashed", "mismatch", "skipped", "error")
# The mode of a decode row (run rows are fwd, bwd or fwdbwd).
DECODE_MODE = "decode"


class UnknownColumnError(KeyError):
    """A row names a column its file does not declare (a bug in the code that wrote it)."""


@dataclass(frozen=True)
class Column:
    name: str
    kind: type  # str, int, float or bool: how a cell is written and read back
    doc: str


def _columns(*specs: tuple[str, type, str]) -> tuple[Column, ...]:
    return tuple(Column(*spec) for spec in specs)


# Every column of every file, once: name, type, meaning.
COLUMNS = {
    column.name: column
    for column in _columns(
        # The point (the key of every file).
        ("variant", str, "the variant (cosine, softmax, ...)"),
        ("impl", str, "the implementation of the variant (chunked, kernel, sdpa, ...)"),
        ("mode", str, "fwd, fwdbwd (forward and backward) or decode (one generated token)"),
        ("causal", bool, "causal masking"),
        ("dtype", str, "fp32, bf16 or fp16"),
        ("device", str, "cpu, cuda:0, ..."),
        ("batch", int, "batch size"),
        ("heads", int, "attention heads"),
        ("seq", int, "sequence length (for decode: the context)"),
        ("dim_k", int, "head dimension of queries and keys"),
        ("dim_v", int, "head dimension of values"),
        ("device_name", str, "the device's model name"),
        # What was measured (per process in processes.csv; over processes in results.csv).
        ("status", str, "ok, oom, timeout, crashed, mismatch, skipped or error"),
        ("time_ms", float, "median time of one call (results.csv: median of process medians; samples.csv: one call)"),
        ("time_ms_p20", float, "20th percentile of the repetitions (results.csv: median over processes)"),
        ("time_ms_p80", float, "80th percentile of the repetitions (results.csv: median over processes)"),
        ("samples", int, "timed repetitions (results.csv: over all processes)"),
        ("peak_bytes", int, "peak memory of one call above the inputs (results.csv: the largest process's)"),
        ("reserved_bytes", int, "CUDA: the caching allocator's reserved peak"),
        ("nvml_peak_bytes", int, "CUDA: the device memory NVML saw in use at the peak"),
        ("flops", float, "floating-point operations of one call, by the variant's count"),
        ("tflops", float, "flops / time_ms"),
        ("rel_err", float, "the correctness gate's relative error against the fp64 reference"),
        ("error", str, "why the point is not ok (or a note on an ok point)"),
        ("check_seq", int, "the length the correctness gate ran at"),
        ("sm_clock_mhz", float, "CUDA: SM clock while the point ran"),
        ("temp_c", float, "CUDA: GPU temperature while the point ran"),
        ("throttle_reasons", str, "CUDA: NVML's clock throttle reasons while the point ran"),
        ("context", int, "decode: the context prefilled before the timed steps (the same as seq)"),
        ("time_per_token_ms", float, "decode: the median time of one step"),
        ("state_bytes", int, "decode: the bytes the decoder's state holds"),
        ("cuda_graph", bool, "whether one call (a decode step) was also timed as CUDA-graph replays"),
        ("device_ms", float, "median time of one CUDA-graph replay: device time without launches"),
        ("params", str, "--param values of the impl that differ from its defaults (k=v;k=v)"),
        ("threads", int, "torch threads the worker ran with"),
        ("tokens_per_s", float, "run: batch·seq tokens processed per second"),
        ("processes", int, "worker processes that measured the point (each a fresh process)"),
        ("time_ms_proc_lo", float, "the fastest process median"),
        ("time_ms_proc_hi", float, "the slowest process median"),
        ("between_spread", float, "1.4826·MAD of the log process medians: the noise between processes"),
        ("timing", str, "the time a gate judges: graph (device_ms) or eager (time_ms)"),
        ("kernels_per_call", int, "CUDA: GPU kernels one call launches (counted once, exact)"),
        ("graph_error", str, "why a call could not be captured in a CUDA graph"),
        ("compile_s", float, "compiled impls: seconds torch.compile took, outside the timed calls"),
        # processes.csv and samples.csv only.
        ("process", int, "the round that ran the process (0, 1, ...)"),
        ("pid", int, "the worker's process id"),
        ("wall_s", float, "seconds from handing the task to the worker to its result"),
        ("timed_s", float, "seconds of timed repetitions inside the process"),
    )
}

KEY_COLUMNS = ("variant", "impl", "mode", "causal", "dtype", "device", "batch", "heads", "seq", "dim_k", "dim_v")
# results.csv: the order of earlier versions, new columns at the end (old runs stay readable).
RESULT_COLUMNS = (
    *KEY_COLUMNS[:6],
    "device_name",
    *KEY_COLUMNS[6:],
    *("status", "time_ms", "time_ms_p20", "time_ms_p80", "samples", "peak_bytes", "reserved_bytes"),
    *("nvml_peak_bytes", "flops", "tflops", "rel_err", "error", "check_seq", "sm_clock_mhz", "temp_c"),
    *("throttle_reasons", "context", "time_per_token_ms", "state_bytes", "cuda_graph", "device_ms"),
    *("params", "threads", "tokens_per_s"),
    # Schema 2.
    *("processes", "time_ms_proc_lo", "time_ms_proc_hi", "between_spread", "timing", "kernels_per_call"),
    *("graph_error", "compile_s"),
)
# The columns every results.csv has had (later ones are optional when reading).
REQUIRED_RESULT_COLUMNS = RESULT_COLUMNS[: RESULT_COLUMNS.index("error") + 1]
# What one worker process measured for one point: the columns of a process's result.
MEASURED_COLUMNS = (
    *("status", "time_ms", "time_ms_p20", "time_ms_p80", "samples", "peak_bytes", "reserved_bytes"),
    *("nvml_peak_bytes", "sm_clock_mhz", "temp_c", "throttle_reasons", "cuda_graph", "device_ms"),
    *("graph_error", "kernels_per_call", "threads", "state_bytes", "compile_s", "rel_err", "error"),
)
PROCESS_COLUMNS = (*KEY_COLUMNS, "process", "pid", *MEASURED_COLUMNS, "check_seq", "wall_s", "timed_s")
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
