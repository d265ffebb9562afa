"""What a user asks of a sweep, before the defaults and a suite fill in the rest.

``linbench run`` and ``linbench decode`` turn their options into a SweepRequest, and a script
builds one directly (docs/python-api.md); ``build_spec`` (linbench/sweep/spec.py) layers it
over the command's defaults and the suite's keys. Every field left None (or empty) is "not
given": the suite's value, or the default, stands. Sizes keep the range grammar of the
command line (``"1k..16k"``, ``"64..256:+64"``) or are whole numbers; spec.py parses and
checks them, as it checks a suite's, so a bad value is refused with the same message
whichever way it came.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

# A size axis: range text ("1k..16k", "512,1k"), one size, or a tuple of them.
Sizes = str | int | tuple[int | str, ...]

# The request's field → the suite key it overrides, where the two are spelt differently (a
# field holding several values is plural; the key, like the option, is not).
SETTING_KEYS = {
    "variants": "variant",
    "dtypes": "dtype",
    "modes": "mode",
    "params": "param",
    "plugins": "plugin",
}
# Fields that say which sweep, not how it is set: never a setting.
NOT_SETTINGS = ("command", "suite")


@dataclass(frozen=True)
class SweepRequest:
    """One ``run`` or ``decode`` sweep as asked for; None (or empty) means "not given"."""

    command: str = "run"  # "run" (calls over sequence lengths) or "decode" (tokens after a context)
    suite: Path | None = None  # a suite file, or the name of one of ``linbench suites``
    variants: tuple[str, ...] | None = None  # "cosine", "cosine:chunked", "all"
    against: tuple[str, ...] | None = None  # the impls measured beside the variants: "softmax", "softmax:sdpa"
    no_against: bool | None = None  # measure the variants alone
    seq: Sizes | None = None  # run: sequence lengths
    context: Sizes | None = None  # decode: context lengths
    batch: Sizes | None = None
    heads: Sizes | None = None
    kv_heads: Sizes | None = None  # key/value heads, each dividing every head count (grouped-query)
    v_heads: Sizes | None = None  # value heads, each a multiple of every head count (GVA)
    dim: Sizes | None = None
    dim_v: Sizes | None = None
    chunk: Sizes | None = None  # run: chunk sizes, an axis of the impls that take chunk_size
    dtypes: tuple[str, ...] | None = None  # "fp32", "bf16", "fp16"
    modes: tuple[str, ...] | None = None  # run: "fwd", "bwd", "fwdbwd"
    causal: bool | None = None  # run: True causal masking, False none
    device: str | None = None  # "auto", "cpu", "cuda", "cuda:1"
    timeout_s: float | None = None  # the limit per point
    budget_s: float | None = None  # run: seconds of timed repetitions per point
    cuda_graph: bool | None = None
    params: tuple[str, ...] = ()  # "cosine:chunked.chunk_size=128", "cosine.norm_const=0.3"
    plugins: tuple[Path, ...] = ()  # Python files that register variants
    threads: int | None = None  # torch threads in each worker
    warmup_s: float | None = None  # run
    min_reps: int | None = None  # run
    tokens: Sizes | None = None  # run: a token budget (batch = tokens / seq); decode: tokens timed per point
    processes: int | None = None  # run: fresh worker processes per point
    max_processes: int | None = None  # run
    pack: str | None = None  # run: a length distribution filling --tokens ("lognormal:mean=2k")
    lengths_file: Path | None = None  # run: a file of lengths filling --tokens
    packing: tuple[str, ...] | None = None  # run: "packed", "padded"
    preset: str | None = None  # a model's attention shape (linbench/sweep/presets.py, hybrids.py)
    gates: str | None = None  # every gated variant's gate profile (production, lower-bound, weak, strong)
    tp: int | None = None  # tensor parallelism: a preset's head counts divided as one of tp ranks holds them
    # decode as it is served (linbench/sweep/serving.py)
    tokens_per_step: Sizes | None = None  # decode: tokens each request takes a step
    state_dtype: tuple[str, ...] | None = None  # decode: dtypes a state is kept in between steps
    state_layout: tuple[str, ...] | None = None  # decode: v-last, k-last: the pool's state matrices
    pool: int | None = None  # decode: state pool slots (≥ batch)
    accept: str | None = None  # decode: all, a count or a rate
    contexts: str | None = None  # decode: a length distribution for the requests' contexts
    drift_steps: int | None = None  # decode: steps the state drift is measured after
    memory_budget: str | None = None  # decode: memory the requests must fit in ("80GiB")

    def __post_init__(self) -> None:
        # A script may write variants="cosine" or a list; the request keeps tuples (it is frozen).
        for name in ("variants", "against", "dtypes", "modes", "packing", "state_dtype", "state_layout"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, _strings(value))
        sizes = ("seq", "context", "batch", "heads", "kv_heads", "v_heads", "dim", "dim_v", "chunk", "tokens")
        for name in (*sizes, "tokens_per_step"):
            value = getattr(self, name)
            if isinstance(value, list | tuple):
                object.__setattr__(self, name, tuple(value))
        object.__setattr__(self, "params", _strings(self.params or ()))
        object.__setattr__(self, "plugins", tuple(Path(p) for p in _strings(self.plugins or ())))
        for name in ("suite", "lengths_file"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, Path(getattr(self, name)))

    @classmethod
    def from_settings(
        cls, settings: Mapping[str, Any], *, command: str = "run", suite: Path | None = None
    ) -> SweepRequest:
        """A request from suite keys as a suite spells them (``variant``, ``seq``, ``param``,
        ...); values are taken as they are, to be checked by build_spec. ValueError naming a key
        that is no setting."""
        names = {SETTING_KEYS.get(f.name, f.name): f.name for f in fields(cls) if f.name not in NOT_SETTINGS}
        unknown = sorted(set(settings) - set(names))
        if unknown:
            raise ValueError(f"unknown setting(s): {', '.join(unknown)}")
        given = {names[key]: value for key, value in settings.items() if value is not None}
        return cls(command=command, suite=suite, **given)

    def settings(self) -> dict[str, Any]:
        """The settings this request gives, by suite key (lists where a suite has lists);
        those it leaves unset are absent."""
        given: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in NOT_SETTINGS or value is None or value == ():
                continue
            key = SETTING_KEYS.get(f.name, f.name)
            if isinstance(value, tuple):  # as a suite's list, and as meta.json records it
                value = [str(v) if isinstance(v, Path) else v for v in value]
            elif isinstance(value, Path):
                value = str(value)
            given[key] = value
        return given

    def options(self) -> list[str]:
        """The command-line options this request gives beside ``--timeout-s`` (which a resumed
        run may change), sorted: ``--dtype``, ``--seq``, ``--suite``."""
        given = sorted(f"--{key.replace('_', '-')}" for key in self.settings() if key != "timeout_s")
        return given + (["--suite"] if self.suite is not None else [])


def _strings(value: str | Path | Iterable[Any]) -> tuple[Any, ...]:
    """One name as a 1-tuple, several as a tuple; ValueError for what is neither (a number)."""
    if isinstance(value, str | Path):
        return (value,)
    items = tuple(value) if isinstance(value, Iterable) else None
    if items is None or not all(isinstance(item, str | Path) for item in items):
        raise ValueError(f"a name or a list of names is wanted here; got {value!r}")
    return items


__all__ = ["SETTING_KEYS", "Sizes", "SweepRequest"]
