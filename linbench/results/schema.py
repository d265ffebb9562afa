"""The columns of results.csv and samples.csv (documented in the README)."""

from __future__ import annotations

from linbench.sweep.points import KEY_COLUMNS

STATUSES = ("ok", "oom", "timeout", "crashed", "mismatch", "skipped", "error")

RESULT_COLUMNS = (
    "variant",
    "impl",
    "mode",
    "causal",
    "dtype",
    "device",
    "device_name",
    "batch",
    "heads",
    "seq",
    "dim_k",
    "dim_v",
    "status",
    "time_ms",
    "time_ms_p20",
    "time_ms_p80",
    "samples",
    "peak_bytes",
    "reserved_bytes",
    "nvml_peak_bytes",
    "flops",
    "tflops",
    "rel_err",
    "error",
    # Beyond the required set: the length the correctness gate ran at, and the GPU's state.
    "check_seq",
    "sm_clock_mhz",
    "temp_c",
    "throttle_reasons",
    # linbench decode (empty on other rows): the context prefilled before the timed steps (the
    # same as seq), the median time of one step, and the bytes the decoder's state holds.
    "context",
    "time_per_token_ms",
    "state_bytes",
    # linbench decode --cuda-graph: whether a step was captured in a CUDA graph, and the
    # median time of one replay of it (the step's device time, without Python or launches).
    "cuda_graph",
    "device_ms",
    # --param values of the row's impl that differ from its defaults (k=v;k=v), and the torch
    # threads its worker ran with.
    "params",
    "threads",
    # Run rows: batch·seq tokens processed per second (--tokens compares lengths at equal work).
    "tokens_per_s",
)

SAMPLE_COLUMNS = (*KEY_COLUMNS, "time_ms")
