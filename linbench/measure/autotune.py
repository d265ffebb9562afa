"""Triton's autotuner in a measuring process: each point's configs chosen at its own shape,
recorded, and kept for the point's later processes.

``@triton.autotune`` picks a kernel's config the first time it meets an autotune key, and
remembers it for that key in the autotuner (``Autotuner.cache``) for the life of the process.
fla-core 0.6.0's keys leave the sequence length out (``key=['H', 'HV', 'K', 'V', 'BT',
'STATE_V_FIRST']`` in ``fla/ops/common/chunk_delta_h.py``), so a process whose first call of a
kernel was a correctness check or a warm-up at another length would time every later length with
the config chosen there; and fla turns Triton's on-disk cache of those choices on by default
(``FLA_CACHE_RESULTS``, ``fla/utils/env.py``), which carries them into every later process too.

Here, while a process is watched (``enter``), every autotuner's memo is the memo of the current
*scope* (the point being run, as the runner spells it): a choice made at one point is never seen
at another. Triton's own disk cache is turned off on each autotuner that runs; the choices are
kept instead in measure/autotune_store.py's store under the scope, so a point's later processes
read them back (``cache``) rather than tuning again (``tuned``). ``quiet`` gives each autotuner that ran
Triton's own ``run`` back before the timed calls (a watched launch costs microseconds of Python,
and fla's calls are host-bound), its memo staying bound to the scope; an autotuner first met in
a timed call is still watched, and recorded as tuned there; ``reading`` then says which
config each autotuned kernel ran, where it came from, and the seconds spent tuning (benchmarking
configs) and compiling (Triton's compiler, where this Triton has a compile listener).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import inspect
import json
import time
import weakref
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

from linbench.measure.autotune_store import ConfigStore, Entries

TUNED = "tuned"  # chosen in this process, at the scope's shape
CACHED = "cache"  # read back from the store, chosen by an earlier process at the same scope


@dataclass(frozen=True)
class AutotuneReading:
    """What a watched scope's autotuned kernels ran: ``configs`` (``kernel: config`` entries,
    ``;``-separated, sorted), where they came from (``source``: ``tuned``, ``cache`` or both),
    and the seconds spent tuning and in Triton's compiler; empty configs where none ran."""

    configs: str | None = None
    source: str | None = None
    tune_s: float | None = None
    compile_s: float = 0.0


@dataclass
class _Watch:
    """The process's one watch: its scope, its store and what ran in the scope."""

    scope: str = ""
    store: ConfigStore | None = None
    stored: Entries = field(default_factory=dict)  # the store's entries for the scope
    used: dict[tuple[str, str], tuple[str, str, str]] = field(default_factory=dict)  # (id, key) → name, config, source
    tuned: Entries = field(default_factory=dict)  # chosen here in this scope, for the store
    tune_s: float = 0.0
    compile_s: float = 0.0  # Triton's compiler, since the scope was entered
    lock: ExitStack = field(default_factory=ExitStack)
    # Each autotuner's keys when the timed calls began (``quiet``): a key past them was tuned in one.
    before_timing: dict[int, set[Any]] = field(default_factory=dict)


_WATCH = _Watch()
_TUNERS: weakref.WeakSet[Any] = weakref.WeakSet()  # every autotuner that ran while watched
_ORIGINAL: dict[str, Any] = {}  # Triton's own Autotuner.run, once installed
_TUNED_S: dict[str, float] = {}  # seconds of tuning in this process not yet read, by scope


def install() -> bool:
    """Watch Triton's autotuners in this process (once); False where Triton is not installed."""
    try:
        from triton.runtime.autotuner import Autotuner
    except ImportError:
        return False
    if "run" not in _ORIGINAL:
        _ORIGINAL["run"] = Autotuner.run
        _listen_to_compiles()
    Autotuner.run = _watched_run
    return True


def installed() -> bool:
    return "run" in _ORIGINAL


def enter(scope: str, store: ConfigStore | None = None, lock: bool = False) -> None:
    """From now on, autotuners hold ``scope``'s choices (the store's, where it has them), and a
    reading counts from here. ``lock``: hold the store's lock for the scope until ``quiet``
    (the first process to compile and tune it; the others wait here)."""
    _flush()
    for tuner in _TUNERS:
        tuner.__dict__.pop("run", None)  # watched again after an earlier quiet
    scope = full_scope(scope)
    _WATCH.scope, _WATCH.store = scope, store
    if store is not None and lock and not store.has(scope):
        _WATCH.lock.enter_context(store.first_tuning(scope))
    _WATCH.stored = store.load(scope) if store is not None else {}
    _WATCH.used, _WATCH.tuned, _WATCH.before_timing = {}, {}, {}
    _WATCH.tune_s = _WATCH.compile_s = 0.0
    for tuner in _TUNERS:
        _bind(tuner)


def quiet() -> None:
    """Before the timed calls: each autotuner that ran is given Triton's own ``run`` (no watched
    launch in a timed call), its memo left bound to the scope; this scope's new choices are
    written to the store and its lock let go."""
    if not installed():
        return
    run = _ORIGINAL["run"]
    for tuner in _TUNERS:
        tuner.run = functools.partial(run, tuner)  # an instance's own run, found before the class's
    _WATCH.before_timing = {id(tuner): set(_bind(tuner)) for tuner in _TUNERS}
    _flush()


def _flush() -> None:
    """The scope's new choices written to the store, and its lock let go."""
    if _WATCH.store is not None and _WATCH.tuned:
        _WATCH.store.save(_WATCH.scope, _WATCH.tuned, _WATCH.tune_s, _WATCH.compile_s)
    _WATCH.tuned = {}
    _WATCH.lock.close()


def reading() -> AutotuneReading:
    """The scope's configs as they ran, with any chosen after ``quiet`` (inside a timed call:
    a kernel the warm-up did not run) counted as tuned here."""
    used = dict(_WATCH.used)
    for tuner in _TUNERS:
        known = _WATCH.before_timing.get(id(tuner))
        if known is None:
            continue
        for key, config in _memo(tuner).items():
            if key not in known:
                used[(_kernel_id(tuner), _key_text(key))] = (_name(tuner), _config_text(config), TUNED)
    if not used:
        return AutotuneReading(compile_s=round(_WATCH.compile_s, 3))
    configs = sorted({f"{name}: {config}" for name, config, _ in used.values()})
    sources = sorted({source for _, _, source in used.values()})
    # The scope's tuning in this process, an earlier task's at the same scope included (a warm
    # worker's correctness check at the point's own shape), each second counted once.
    tune = round(_TUNED_S.pop(_WATCH.scope, 0.0), 3) if TUNED in sources else 0.0
    return AutotuneReading(";".join(configs), ";".join(sources), tune, round(_WATCH.compile_s, 3))


def _watched_run(self: Any, *args: Any, **kwargs: Any) -> Any:
    """Triton's ``Autotuner.run`` with the memo of the current scope, its disk cache off, and
    what it chose and ran noted."""
    run = _ORIGINAL["run"]
    if len(self.configs) <= 1:  # nothing to choose between
        return run(self, *args, **kwargs)
    _TUNERS.add(self)
    self.cache_results = False  # Triton's disk cache keys a choice without the point
    memo = _bind(self)
    known = set(memo)
    self.__dict__.pop("bench_time", None)  # Triton sets it anew when it benchmarks the configs
    started, compiled = time.perf_counter(), _WATCH.compile_s
    result = run(self, *args, **kwargs)
    new = [key for key in memo if key not in known]
    kernel = _kernel_id(self)
    if new:
        in_compiler = _WATCH.compile_s - compiled
        # Triton's own clock of its benchmark loop where it kept one (the call's launch of the
        # chosen config aside), else the whole call's; the compiles inside it are compile_s's.
        benchmarked = self.__dict__.get("bench_time")
        spent = benchmarked if isinstance(benchmarked, float) else time.perf_counter() - started
        tuning_s = max(spent - in_compiler, 0.0)
        _WATCH.tune_s += tuning_s
        _TUNED_S[_WATCH.scope] = _TUNED_S.get(_WATCH.scope, 0.0) + tuning_s
        tuned_here = self.__dict__.setdefault("_linbench_tuned", set())
        for key in new:
            _WATCH.tuned.setdefault(kernel, {})[_key_text(key)] = _config_record(memo[key])
            tuned_here.add((_WATCH.scope, key))
    key = new[0] if new else next((k for k, c in memo.items() if c is self.best_config), None)
    if key is not None:
        source = TUNED if (_WATCH.scope, key) in self.__dict__.get("_linbench_tuned", ()) else CACHED
        _WATCH.used[(kernel, _key_text(key))] = (_name(self), _config_text(memo[key]), source)
    return result


def _bind(tuner: Any) -> dict[Any, Any]:
    """``tuner``'s memo for the current scope (made from the store's choices the first time),
    set as the memo Triton reads."""
    memos = tuner.__dict__.setdefault("_linbench_memos", {})
    memo = memos.get(_WATCH.scope)
    if memo is None:
        memo = memos[_WATCH.scope] = _from_store(tuner)
    tuner.cache = memo
    return memo


def _memo(tuner: Any) -> dict[Any, Any]:
    return tuner.__dict__.get("_linbench_memos", {}).get(_WATCH.scope, {})


def _from_store(tuner: Any) -> dict[Any, Any]:
    """The store's choices for ``tuner`` in this scope, as its own Config objects (a choice the
    kernel no longer offers is dropped: it is tuned again)."""
    memo: dict[Any, Any] = {}
    offered = {_config_text(config): config for config in tuner.configs}
    for key, record in _WATCH.stored.get(_kernel_id(tuner), {}).items():
        config = offered.get(str(record.get("text")))
        if config is not None:
            memo[tuple(json.loads(key))] = config
    return memo


def _kernel_id(tuner: Any) -> str:
    """The kernel's name and a digest of its source: a kernel edited since a choice was kept
    is tuned again."""
    cached = tuner.__dict__.get("_linbench_id")
    if cached is None:
        base = tuner.base_fn
        try:
            source = inspect.getsource(base)
        except (OSError, TypeError):
            source = ""
        digest = hashlib.sha256(source.encode()).hexdigest()[:16]
        cached = tuner.__dict__["_linbench_id"] = f"{base.__module__}.{base.__qualname__}:{digest}"
    return str(cached)


def _name(tuner: Any) -> str:
    return str(tuner.base_fn.__name__)


def _key_text(key: Any) -> str:
    """An autotune key (a tuple of sizes and dtype names) as JSON, a store's key."""
    return json.dumps(list(key) if isinstance(key, tuple) else [key], default=str)


def _config_text(config: Any) -> str:
    """A config as results say it: its block sizes, then warps and stages (and CTAs, registers
    where set): ``BT=64 BV=32 warps=4 stages=2``."""
    parts = [f"{name}={value}" for name, value in sorted(config.kwargs.items())]
    parts += [f"warps={config.num_warps}", f"stages={config.num_stages}"]
    if getattr(config, "num_ctas", 1) not in (None, 1):
        parts.append(f"ctas={config.num_ctas}")
    if getattr(config, "maxnreg", None) is not None:
        parts.append(f"maxnreg={config.maxnreg}")
    return " ".join(parts)


def _config_record(config: Any) -> dict[str, Any]:
    return {"text": _config_text(config)}


def _listen_to_compiles() -> None:
    """Count Triton's compiler seconds, where this Triton says them (``knobs.compilation.listener``,
    Triton 3.4 on) and no other listener is set."""
    try:
        from triton import knobs
    except ImportError:
        return
    compilation = getattr(knobs, "compilation", None)
    if compilation is None or getattr(compilation, "listener", "absent") is not None:
        return

    def listener(*, times: Any, cache_hit: bool, **_: Any) -> None:
        if not cache_hit:
            _WATCH.compile_s += float(getattr(times, "total", 0)) / 1e6

    compilation.listener = listener


def full_scope(scope: str) -> str:
    """``scope`` as the store keys it: with Triton's version (its compiler makes the kernels)."""
    try:
        version = importlib.metadata.version("triton")
    except importlib.metadata.PackageNotFoundError:
        version = "?"
    return f"{scope} | triton {version}"
