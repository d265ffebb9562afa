"""A sweep as data: which impls, which axes, where, and how long a point may take.

Settings come from three layers, later over earlier: the defaults, a TOML suite, and the
command line. A suite may hold several ``[[sweep]]`` tables (say, one over sequence length
at a fixed head dimension and one over head dimension at a fixed length); their points
are united. A flag given on the command line overrides the key in every table.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from linbench.dtypes import parse_dtypes, split_list
from linbench.sweep.ranges import RangeError, parse_range

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

MODES = ("fwd", "bwd", "fwdbwd")
SIZE_AXES = ("seq", "batch", "heads", "dim", "dim_v")
AXIS_KEYS = (*SIZE_AXES, "dtype", "mode", "causal")
RUN_KEYS = ("name", "variant", "baseline", "no_baseline", "device", "timeout_s", "budget_s", "plugin")
DEFAULT_SETTINGS: dict[str, Any] = {
    "seq": "1k..16k",
    "batch": 1,
    "heads": 8,
    "dim": 64,
    "dim_v": None,  # None: dim_v = dim_k, paired rather than crossed
    "dtype": "fp32",
    "mode": "fwd",
    "causal": True,
    "variant": ["all"],
    "baseline": ["softmax"],
    "no_baseline": False,
    "device": "auto",
    "timeout_s": 120.0,
    "budget_s": None,  # None: the device's default (runner/task.py)
    "plugin": [],
}


class SpecError(ValueError):
    """A sweep setting that makes no sense; the message names the setting."""


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


def _sizes(key: str, value: Any) -> tuple[int, ...]:
    items = value if isinstance(value, list | tuple) else [value]
    try:
        return tuple(sorted({v for item in items for v in parse_range(item)}))
    except RangeError as exc:
        raise SpecError(f"{key}: {exc}") from None


def _modes(value: Any) -> tuple[str, ...]:
    modes = split_list(value if isinstance(value, list | tuple) else [value])
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


def _axes(settings: Mapping[str, Any]) -> Axes:
    try:
        dtypes = tuple(parse_dtypes(settings["dtype"] if isinstance(settings["dtype"], list) else [settings["dtype"]]))
    except ValueError as exc:
        raise SpecError(f"dtype: {exc}") from None
    dim_v = settings.get("dim_v")
    return Axes(
        seq=_sizes("seq", settings["seq"]),
        batch=_sizes("batch", settings["batch"]),
        heads=_sizes("heads", settings["heads"]),
        dim=_sizes("dim", settings["dim"]),
        dim_v=None if dim_v is None else _sizes("dim_v", dim_v),
        dtype=dtypes,
        mode=_modes(settings["mode"]),
        causal=_causal(settings["causal"]),
    )


def load_suite(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The top-level settings and the ``[[sweep]]`` tables of a suite file."""
    if not path.is_file():
        raise SpecError(f"suite file {str(path)!r} does not exist")
    try:
        data = tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SpecError(f"suite file {str(path)!r} is not valid TOML: {exc}") from None
    tables = data.pop("sweep", [])
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise SpecError(f"suite file {str(path)!r}: 'sweep' must be an array of tables ([[sweep]])")
    _check_keys(path, data, (*AXIS_KEYS, *RUN_KEYS, "description"))
    for table in tables:
        _check_keys(path, table, AXIS_KEYS)
    # Plugin paths in a suite are relative to the suite file, not to where linbench runs.
    plugins = data.get("plugin", [])
    data["plugin"] = [str((path.parent / p).resolve()) for p in ([plugins] if isinstance(plugins, str) else plugins)]
    return data, tables


def _check_keys(path: Path, table: Mapping[str, Any], allowed: Iterable[str]) -> None:
    unknown = sorted(set(table) - set(allowed))
    if unknown:
        raise SpecError(f"suite file {str(path)!r}: unknown key(s) {', '.join(unknown)}; keys: {', '.join(allowed)}")


def short_name(variants: Iterable[str], suite: Path | None) -> str:
    """The folder suffix: the suite's name, else the variants asked for."""
    if suite is not None:
        return suite.stem
    names = [v.replace(":", "-") for v in variants]
    joined = "+".join(names) or "run"
    return joined if len(joined) <= 40 else joined[:40].rstrip("+-")


def build_spec(flags: Mapping[str, Any], suite: Path | None = None) -> SweepSpec:
    """The sweep described by the defaults, then ``suite``, then the non-None ``flags``."""
    base = dict(DEFAULT_SETTINGS)
    tables: list[dict[str, Any]] = []
    if suite is not None:
        top, tables = load_suite(suite)
        base |= top
    given = {key: value for key, value in flags.items() if value is not None}
    unknown = sorted(set(given) - set(DEFAULT_SETTINGS))
    if unknown:
        raise SpecError(f"unknown setting(s): {', '.join(unknown)}")
    # Command-line axes override every table; a table's own keys override the suite's top level.
    tables = [{k: v for k, v in table.items() if k not in given} for table in tables]
    name = str(base.get("name") or short_name(_as_list(given.get("variant", base["variant"])), suite))
    return spec_from_settings(base | given, tables, name=name, suite=str(suite) if suite else None)


def spec_from_settings(
    settings: Mapping[str, Any], tables: list[dict[str, Any]], *, name: str, suite: str | None
) -> SweepSpec:
    """The spec for fully merged settings (as stored in a run's meta.json, for resume)."""
    base = dict(DEFAULT_SETTINGS) | {k: v for k, v in settings.items() if k in DEFAULT_SETTINGS}
    blocks = [_axes(base | table) for table in tables or [{}]]
    variants = tuple(split_list(_as_list(base["variant"])))
    baselines = () if base["no_baseline"] else tuple(split_list(_as_list(base["baseline"])))
    if not variants:
        raise SpecError("variant: no variant given")
    return SweepSpec(
        name=name,
        variants=variants,
        baselines=baselines,
        blocks=tuple(blocks),
        device=str(base["device"]),
        timeout_s=_positive_float("timeout_s", base["timeout_s"]),
        budget_s=None if base["budget_s"] is None else _positive_float("budget_s", base["budget_s"]),
        plugins=tuple(str(Path(p).resolve()) for p in _as_list(base["plugin"])),
        suite=suite,
        settings={k: base[k] for k in DEFAULT_SETTINGS} | {"sweep": tables},
    )


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else [value]


def _positive_float(key: str, value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise SpecError(f"{key}: {value!r} is not a number") from None
    if not number > 0:
        raise SpecError(f"{key}: {value!r} must be positive")
    return number


def with_timeout(spec: SweepSpec, timeout_s: float | None) -> SweepSpec:
    """``spec`` with its per-point time limit replaced (resume may change it)."""
    return spec if timeout_s is None else replace(spec, timeout_s=_positive_float("timeout_s", timeout_s))
