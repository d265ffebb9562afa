"""A sweep as data: which impls, which axes, where, and how long a point may take.

Settings come from three layers, later over earlier: the defaults, a TOML suite, and the
request (the command line's options, or a script's: linbench/sweep/request.py). A suite
may hold several ``[[sweep]]`` tables (say, one over sequence length at a fixed head
dimension and one over head dimension at a fixed length); their points are united. A
setting the request gives overrides the key in every table.

Two commands read sweeps: ``run`` (forward and backward over sequence lengths) and
``decode`` (generation after a context). A suite says which with ``command``; a decode
sweep's points are ordinary points of mode "decode" whose length is the context.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from linbench.dtypes import parse_dtypes
from linbench.results.schema import MODES
from linbench.shape import STATE_LAYOUTS
from linbench.sweep.lengths import Pack
from linbench.sweep.model_shapes import kv_heads_axis, place_groupings, preset_settings, v_heads_axis
from linbench.sweep.packs import pack_settings
from linbench.sweep.params import parse_param
from linbench.sweep.request import SweepRequest
from linbench.sweep.serving import Serving, check_new_serving, check_serving, read_serving
from linbench.sweep.settings import (
    COMMANDS,
    DEFAULT_SETTINGS,
    DEFAULTS,
    FIXED_AXES,
    LENGTH_AXIS,
    RENAMED_KEYS,
    TOKEN_BUDGET,
)
from linbench.sweep.suites import find_suite, load_suite, read_suite, suite_command
from linbench.sweep.values import (
    SpecError,
    as_list,
    flag,
    name_list,
    nonnegative_float,
    one_size,
    optional,
    parse_sizes,
    positive_float,
    positive_int,
)

# SpecError and the suite readers are imported from here too (docs/python-api.md names
# linbench.sweep.spec.SpecError).
__all__ = [
    "Axes",
    "SpecError",
    "SweepSpec",
    "build_spec",
    "read_suite",
    "short_name",
    "spec_from_settings",
    "suite_command",
    "with_timeout",
]


@dataclass(frozen=True)
class Axes:
    """One block of the sweep: the cross product of these values."""

    seq: tuple[int, ...]
    batch: tuple[int, ...]
    heads: tuple[int, ...]
    dim: tuple[int, ...]
    dim_v: tuple[int, ...] | None
    dtype: tuple[str, ...]
    mode: tuple[str, ...]
    causal: tuple[bool, ...]
    # run --tokens: each point's batch is tokens / seq, in place of the batch axis.
    tokens: int | None = None
    # Key/value heads (None: as many as heads), each dividing every head count.
    kv_heads: tuple[int, ...] | None = None
    # Chunk sizes of the impls that take chunk_size (None: each impl's own).
    chunk: tuple[int, ...] | None = None
    # decode: tokens a request takes a step, and the dtypes a state is kept in between steps.
    tokens_per_step: tuple[int, ...] | None = None
    state_dtype: tuple[str, ...] | None = None
    state_layout: tuple[str, ...] | None = None  # v-last, k-last: the pool's state matrices
    # Value heads (None: as many as heads), each a multiple of every head count (GVA).
    v_heads: tuple[int, ...] | None = None
    # The variants this block is for (None: every one): a hybrid preset's block of one layer kind.
    layer_variants: tuple[str, ...] | None = None
    # The impls this block leaves out (a suite table's ``skip``): a variant, every impl of it, or
    # one variant:impl (checked against the registry where the sweep is planned: runner/plan.py).
    skip: tuple[str, ...] = ()

    def measures(self, variant: str, impl: str) -> bool:
        """Whether this block has points of ``variant:impl``."""
        if self.layer_variants is not None and variant not in self.layer_variants:
            return False  # a hybrid's block of the other layer kind
        return variant not in self.skip and f"{variant}:{impl}" not in self.skip

    def kv_heads_for(self, heads: int) -> tuple[int, ...]:
        """The key/value head counts at ``heads`` query heads."""
        return self.kv_heads or (heads,)

    def v_heads_for(self, heads: int) -> tuple[int, ...]:
        """The value head counts at ``heads`` q/k heads."""
        return self.v_heads or (heads,)

    def batches(self, seq: int) -> tuple[int, ...]:
        """The batch sizes at length ``seq``."""
        return (self.tokens // seq,) if self.tokens else self.batch

    def dims(self) -> list[tuple[int, int]]:
        """(dim_k, dim_v) pairs: paired when dim_v is unset, crossed when it is set."""
        if self.dim_v is None:
            return [(d, d) for d in self.dim]
        return [(dk, dv) for dk in self.dim for dv in self.dim_v]


@dataclass(frozen=True)
class SweepSpec:
    """Everything a run needs to know before it resolves names against the registry."""

    name: str
    variants: tuple[str, ...]
    baselines: tuple[str, ...]
    blocks: tuple[Axes, ...]
    device: str
    timeout_s: float
    budget_s: float | None = None
    plugins: tuple[str, ...] = ()
    suite: str | None = None
    settings: dict[str, Any] = field(default_factory=dict, compare=False)
    command: str = "run"
    tokens: int | None = None  # decode: timed steps per point
    cuda_graph: bool = False  # also time each call (run) or step (decode) as a CUDA-graph replay
    params: tuple[str, ...] = ()  # --param settings, as given (resolved by runner/params.py)
    # --gates: the gate profile (a gate_regime) of every gated variant of the run; None: each its own.
    gates: str | None = None
    threads: int | None = None  # torch threads per worker; None: torch's default
    warmup_s: float | None = None  # run: replaces the device's warm-up time
    min_reps: int | None = None  # run: replaces the device's minimum repetitions
    processes: int | None = None  # run: fresh worker processes per point (None: 1)
    max_processes: int | None = None  # run: the most per point when processes disagree
    pack: Pack | None = None  # run: a pack of variable-length sequences in place of seq and batch
    packing: tuple[str, ...] = ()  # run: how each impl runs the pack (packed, padded)
    serving: Serving | None = None  # decode: the pool, accept pattern, contexts (sweep/serving.py)


def _modes(value: Any) -> tuple[str, ...]:
    modes = name_list("mode", value)
    for mode in modes:
        if mode not in MODES:
            raise SpecError(f"mode: unknown mode {mode!r}; modes: {', '.join(MODES)}")
    if not modes:
        raise SpecError("mode: no mode given; modes: " + ", ".join(MODES))
    return tuple(modes)


def _causal(value: Any) -> tuple[bool, ...]:
    items = value if isinstance(value, list | tuple) else [value]
    words = {"causal": (True,), "bidirectional": (False,), "both": (True, False)}
    out: list[bool] = []
    for item in items:
        if isinstance(item, bool):
            out.append(item)
        elif isinstance(item, str) and item.strip().lower() in words:
            out.extend(words[item.strip().lower()])
        else:
            raise SpecError(f"causal: {item!r} is not true, false, 'causal', 'bidirectional' or 'both'")
    return tuple(dict.fromkeys(out))


def _axes(settings: Mapping[str, Any], command: str) -> Axes:
    """One block of points; a decode block is causal, of mode "decode", its length the context."""
    try:
        dtypes = tuple(parse_dtypes(settings["dtype"] if isinstance(settings["dtype"], list) else [settings["dtype"]]))
    except ValueError as exc:
        raise SpecError(f"dtype: {exc}") from None
    dim_v = settings.get("dim_v")
    budget = TOKEN_BUDGET[command] and settings.get("tokens") is not None
    tokens = one_size("tokens", settings["tokens"]) if budget else None
    axis, fixed = LENGTH_AXIS[command], FIXED_AXES[command]
    seqs = parse_sizes(axis, settings[axis])
    packed = settings.get("pack") is not None or settings.get("lengths_file") is not None
    for seq in () if packed else seqs:  # a pack's lengths fill the budget in place of seq
        if tokens is not None and tokens % seq:
            what = f"shorter than seq {seq}: the batch would be 0" if seq > tokens else f"not a multiple of seq {seq}"
            raise SpecError(f"tokens: {tokens} is {what} (each point's batch is tokens / seq)")
    heads = parse_sizes("heads", settings["heads"])
    kv_heads = kv_heads_axis(settings.get("kv_heads"), heads)
    v_heads = v_heads_axis(settings.get("v_heads"), heads, kv_heads)
    chunk = settings.get("chunk")
    steps, states = settings.get("tokens_per_step"), settings.get("state_dtype")
    return Axes(
        seq=seqs,
        batch=parse_sizes("batch", settings["batch"]),
        heads=heads,
        dim=parse_sizes("dim", settings["dim"]),
        dim_v=None if dim_v is None else parse_sizes("dim_v", dim_v),
        dtype=dtypes,
        mode=fixed.get("mode") or _modes(settings["mode"]),
        causal=fixed.get("causal") or _causal(settings["causal"]),
        tokens=tokens,
        kv_heads=kv_heads,
        v_heads=v_heads,
        layer_variants=tuple(settings["layer_variants"]) if settings.get("layer_variants") else None,
        skip=tuple(name_list("skip", settings["skip"])) if settings.get("skip") else (),
        chunk=None if chunk is None else parse_sizes("chunk", chunk),
        tokens_per_step=None if steps is None else parse_sizes("tokens_per_step", steps),
        state_dtype=None if states is None else _state_dtypes(states),
        state_layout=_state_layouts(settings.get("state_layout")),
    )


def _state_dtypes(value: Any) -> tuple[str, ...]:
    """The dtypes a decode state is kept in (fp32, bf16, fp16)."""
    try:
        return tuple(parse_dtypes(value if isinstance(value, list) else [value]))
    except ValueError as exc:
        raise SpecError(f"state_dtype: {exc}") from None


def _state_layouts(value: Any) -> tuple[str, ...] | None:
    """The layouts a serving pool keeps its state matrices in (v-last, k-last); None: not given."""
    if value is None:
        return None
    words = [
        word.strip()
        for item in (value if isinstance(value, list | tuple) else [value])
        for word in str(item).split(",")
    ]
    wrong = [word for word in words if word not in STATE_LAYOUTS]
    if wrong or not words:
        given = ", ".join(wrong) or "nothing"
        raise SpecError(f"state_layout: {given} given; the layouts are {', '.join(STATE_LAYOUTS)}")
    return tuple(dict.fromkeys(words))


def short_name(variants: Iterable[str], suite: Path | None) -> str:
    """The folder suffix: the suite's name, else the variants asked for."""
    if suite is not None:
        return suite.stem
    # Each name of a comma list apart (--variant a,b), ":" as "-", and nothing a path would
    # read otherwise (a comma, a slash, a leading dot).
    names = [name.strip() for given in variants for name in str(given).split(",") if name.strip()]
    safe = [re.sub(r"[^A-Za-z0-9_.+-]", "-", name.replace(":", "-")).lstrip(".-") for name in names]
    joined = "+".join(name for name in safe if name) or "run"
    return joined if len(joined) <= 40 else joined[:40].rstrip("+-")


def build_spec(request: SweepRequest) -> SweepSpec:
    """The sweep ``request`` asks for: its command's defaults, then its suite, then what it gives."""
    if request.command not in COMMANDS:
        raise SpecError(f"command {request.command!r} is not one of {', '.join(COMMANDS)}")
    command, suite = request.command, request.suite
    defaults = DEFAULTS[command]
    base = dict(defaults)
    tables: list[dict[str, Any]] = []
    top: dict[str, Any] = {}
    if suite is not None:
        suite = find_suite(suite)
        top, tables = load_suite(suite, command)
    given = request.settings()
    # A preset fills its axes over the defaults; the suite and the command line override it. A
    # hybrid's two layer kinds are the sweep's blocks where no suite gives any.
    filled, blocks = preset_settings(given.get("preset", top.get("preset")), command, given.get("tp", top.get("tp")))
    base |= filled | top
    if not tables:  # a hybrid preset's blocks: --v-heads for its linear layers, --kv-heads for softmax's
        tables, given = place_groupings(blocks, given)
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise SpecError(f"unknown setting(s): {', '.join(unknown)}")
    if given.get("no_against") is True and "against" in given:
        raise SpecError("--no-against and --against contradict each other; give one")
    if "against" in given:
        given.setdefault("no_against", False)  # --against overrides a suite's no_against
    if "context" in given and (base | given).get("contexts") is not None:  # one would be dropped
        raise SpecError("--contexts draws each request's context, --context sets one for all: give one")
    if "packing" in given and not any((base | given).get(key) for key in ("pack", "lengths_file")):
        raise SpecError("--packing says how a pack runs; give --pack DIST or --lengths-file FILE with it")
    # Command-line axes override every table; a table's own keys override the suite's top level.
    tables = [{k: v for k, v in table.items() if k not in given} for table in tables]
    if TOKEN_BUDGET[command]:
        base, tables = _token_budget(base, tables, given, top)
    name = run_name(str(base.get("name") or short_name(as_list(given.get("variant", base["variant"])), suite)))
    spec = spec_from_settings(base | given, tables, name=name, suite=str(suite) if suite else None, command=command)
    check_new_serving(spec.serving, [block.tokens_per_step for block in spec.blocks])  # not on resume: the run's
    return spec


def run_name(name: str) -> str:
    """``name`` (a suite's ``name``, or one made from the variants), which names the run's
    folder inside ``--out``; SpecError where it would name another folder."""
    if not name or name in (".", "..") or any(c in name for c in ("/", "\\", "\0")):
        raise SpecError(f"name: {name!r} must be one folder name (no /, \\, . or ..)")
    return name


def spec_from_settings(
    settings: Mapping[str, Any], tables: list[dict[str, Any]], *, name: str, suite: str | None, command: str = "run"
) -> SweepSpec:
    """The spec for fully merged settings (as stored in a run's meta.json, for resume)."""
    defaults = DEFAULTS[command]
    # A run recorded before a key's rename spells it the old way: read it under the new name.
    settings = {RENAMED_KEYS.get(k, k): v for k, v in settings.items()}
    base = dict(defaults) | {k: v for k, v in settings.items() if k in defaults}
    blocks = [_axes(base | table, command) for table in tables or [{}]]
    variants = tuple(name_list("variant", base["variant"]))
    baselines = () if flag("no_against", base["no_against"]) else tuple(name_list("against", base["against"]))
    if not variants:
        raise SpecError("variant: no variant given")
    budget = base.get("budget_s")
    pack, packing = pack_settings(base, blocks[0].tokens if TOKEN_BUDGET[command] else None)
    serving = read_serving(base) if command == "decode" else None
    if serving is None and any(block.tokens_per_step or block.state_dtype or block.state_layout for block in blocks):
        serving = Serving()  # every point of the sweep served, a KV cache's too
    for block in blocks:
        check_serving(serving, block.batch, block.tokens_per_step)
    return SweepSpec(
        name=name,
        variants=variants,
        baselines=baselines,
        blocks=tuple(blocks),
        device=str(base["device"]),
        timeout_s=positive_float("timeout_s", base["timeout_s"]),
        budget_s=None if budget is None else positive_float("budget_s", budget),
        plugins=tuple(str(Path(p).resolve()) for p in as_list(base["plugin"])),
        suite=suite,
        settings={k: base[k] for k in defaults} | {"sweep": tables},
        command=command,
        tokens=None if TOKEN_BUDGET[command] else one_size("tokens", base["tokens"]),
        cuda_graph=flag("cuda_graph", base.get("cuda_graph", False)),
        params=_param_texts(base.get("param") or []),
        gates=None if base.get("gates") in (None, "") else str(base["gates"]),
        threads=optional(positive_int, "threads", base.get("threads")),
        warmup_s=optional(nonnegative_float, "warmup_s", base.get("warmup_s")),
        min_reps=optional(positive_int, "min_reps", base.get("min_reps")),
        processes=optional(positive_int, "processes", base.get("processes")),
        max_processes=optional(positive_int, "max_processes", base.get("max_processes")),
        pack=pack,
        packing=packing,
        serving=serving,
    )


def _token_budget(
    base: dict[str, Any], tables: list[dict[str, Any]], given: Mapping[str, Any], top: Mapping[str, Any]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``tokens`` replaces the batch axis: flags override the suite either way, and one layer
    that sets both is refused."""
    if "tokens" in given and "batch" in given:
        raise SpecError("--tokens sets each point's batch (tokens / seq); drop --batch")
    if "tokens" in given:
        unbatched = [{k: v for k, v in table.items() if k != "batch"} for table in tables]
        return base | {"batch": DEFAULT_SETTINGS["batch"]}, unbatched
    if "batch" in given:
        return base | {"tokens": None}, tables
    if "tokens" in top and ("batch" in top or any("batch" in t for t in tables)):
        raise SpecError("tokens sets each point's batch (tokens / seq); a suite with tokens takes no batch")
    return base, tables


def _param_texts(value: Any) -> tuple[str, ...]:
    """``--param`` settings, each checked for its form TARGET.NAME=VALUE."""
    texts = tuple(str(item) for item in as_list(value))
    for text in texts:
        try:
            parse_param(text)
        except ValueError as exc:
            raise SpecError(str(exc)) from None
    return texts


def with_timeout(spec: SweepSpec, timeout_s: float | None) -> SweepSpec:
    """``spec`` with its per-point time limit replaced (resume may change it)."""
    return spec if timeout_s is None else replace(spec, timeout_s=positive_float("timeout_s", timeout_s))
