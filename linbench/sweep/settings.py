"""The keys a sweep takes and their defaults, for ``run`` and ``decode`` (linbench/sweep/spec.py
reads settings against them: a key not named here is refused, one left out takes its default)."""

from __future__ import annotations

from typing import Any

from linbench.results.kinds import ROW_KINDS
from linbench.results.schema import DECODE_MODE

COMMANDS = ("run", "decode")
SIZE_AXES = ("seq", "batch", "heads", "kv_heads", "v_heads", "dim", "dim_v", "chunk")
AXIS_KEYS = (*SIZE_AXES, "dtype", "mode", "causal")
# Knobs of how each point runs (--param, --threads; run also --warmup-s, --min-reps, --tokens,
# --processes, --max-processes).
RUN_KNOBS = ("param", "threads", "warmup_s", "min_reps", "tokens", "processes", "max_processes")
# A packed variable-length batch in place of the seq and batch axes (linbench/sweep/lengths.py).
PACK_KEYS = ("pack", "lengths_file", "packing")
DECODE_KNOBS = ("param", "threads", "processes", "max_processes")
# decode as it is served (sweep/serving.py).
SERVING_KEYS = ("pool", "accept", "contexts", "drift_steps", "memory_budget")
RUN_KEYS = (
    *("name", "variant", "against", "no_against", "device", "timeout_s", "budget_s", "cuda_graph", "plugin"),
    "preset",
    "tp",
    "gates",
    "controls",
    *RUN_KNOBS,
    *PACK_KEYS,
)
DECODE_AXIS_KEYS = (
    "context", "batch", "heads", "kv_heads", "v_heads", "dim", "dim_v", "dtype", "tokens_per_step", "state_dtype",
    "state_layout",
)  # fmt: skip
DECODE_KEYS = (
    *("name", "variant", "against", "no_against", "device", "timeout_s", "tokens", "cuda_graph", "plugin"),
    "preset",
    "tp",
    "gates",
    *DECODE_KNOBS,
    *SERVING_KEYS,
)
# Keys a suite's top level takes beside its command's own.
SUITE_KEYS = ("description", "command")
# Keys renamed since: a suite or a recorded run (meta.json) spelling the old name. A suite is
# refused naming the new key; a recorded run's settings are read under the new one.
RENAMED_KEYS = {"baseline": "against", "no_baseline": "no_against"}
DEFAULT_SETTINGS: dict[str, Any] = {
    "seq": "1k..16k",
    "batch": 1,
    "heads": 8,
    "kv_heads": None,  # None: as many key/value heads as heads; fewer: grouped-query attention
    "v_heads": None,  # None: as many value heads as heads; a multiple: GVA (gated variants only)
    "dim": 64,
    "dim_v": None,  # None: dim_v = dim_k, paired rather than crossed
    "chunk": None,  # None: each chunked impl's own chunk_size; sizes: an axis of the impls that take one
    "dtype": "fp32",
    "mode": "fwd",
    "causal": True,
    "variant": ["all"],
    "against": ["softmax"],  # the impls measured beside the variants (the reference: softmax)
    "no_against": False,
    "device": "auto",
    "timeout_s": 120.0,
    "budget_s": None,  # None: the device's default (measure/timing_policy.py)
    "cuda_graph": False,  # also time each call as a CUDA-graph replay (GPU only)
    "plugin": [],
    "param": [],  # impl parameters: "cosine:chunked.chunk_size=64", "cosine.norm_const=0.3"
    "threads": None,  # torch threads per worker; None: on CPU one per idle core (runner/threads.py), on GPU torch's
    "warmup_s": None,  # None: the device's default (measure/timing_policy.py)
    "min_reps": None,  # None: the device's default
    "tokens": None,  # a fixed token budget: each point's batch is tokens / seq (replaces batch)
    "processes": None,  # fresh worker processes per point; None: 1
    "max_processes": None,  # None: 20 (results/protocol.py) when processes > 1, for points that disagree
    "controls": [],  # quiet impls ("softmax:sdpa") compare checks for drift of the whole machine
    # A pack of --tokens tokens, its lengths drawn from a distribution ("lognormal:mean=2k") or
    # read from a file, run in place of the seq and batch axes; packing: how each impl runs it.
    "pack": None,
    "lengths_file": None,
    "packing": ["packed", "padded"],
    "preset": None,  # a model's attention shape (sweep/presets.py): heads, kv_heads, dim and lengths
    "tp": None,  # N-way tensor parallelism: a preset's head counts as one rank holds them
    "gates": None,  # every gated variant's gate profile (gate_regime): production, lower-bound, ...
}
DECODE_SETTINGS: dict[str, Any] = {
    "context": "1k..64k",
    "tokens": 32,  # timed steps (generated tokens) per point
    "cuda_graph": False,  # also time each step as a CUDA-graph replay (GPU only)
    "batch": 1,
    "heads": 8,
    "kv_heads": None,
    "v_heads": None,
    "dim": 64,
    "dim_v": None,
    "dtype": "fp32",
    "variant": ["all"],
    "against": ["softmax"],
    "no_against": False,
    "device": "auto",
    "timeout_s": 120.0,
    "plugin": [],
    "param": [],
    "threads": None,
    "preset": None,
    "processes": None,  # fresh worker processes per point, as run's (None: 1)
    "max_processes": None,
    # decode as it is served: none given, a point is one batch of identical sequences.
    "tokens_per_step": None,
    "state_dtype": None,
    "state_layout": None,
    "pool": None,
    "accept": None,
    "contexts": None,
    "drift_steps": None,
    "memory_budget": None,
    "tp": None,
    "gates": None,
}
DEFAULTS = {"run": DEFAULT_SETTINGS, "decode": DECODE_SETTINGS}
# A [[sweep]] table's own key beside the axes: the impls (a variant, or variant:impl) its points
# leave out, as a gate suite leaves out a point it cannot judge in its budget (suites/gate-cpu.toml).
TABLE_ONLY_KEYS = ("skip",)
TABLE_KEYS = {"run": (*AXIS_KEYS, *TABLE_ONLY_KEYS), "decode": (*DECODE_AXIS_KEYS, *TABLE_ONLY_KEYS)}
TOP_KEYS = {"run": (*AXIS_KEYS, *RUN_KEYS), "decode": (*DECODE_AXIS_KEYS, *DECODE_KEYS)}
# Per command: the axis its lengths are read from (a decode sweep's length is its context),
# the axes it fixes instead of reading them (a decode point is causal, of mode "decode"), and
# whether its ``tokens`` is a budget per point (run: each point's batch is tokens / seq) or the
# steps each point times (decode).
# The setting each command sweeps the length in: its kind of row's (results/kinds.py).
LENGTH_AXIS = {name: kind.words.length for name, kind in ROW_KINDS.items()}
FIXED_AXES: dict[str, dict[str, tuple[Any, ...]]] = {"run": {}, "decode": {"mode": (DECODE_MODE,), "causal": (True,)}}
TOKEN_BUDGET = {"run": True, "decode": False}
