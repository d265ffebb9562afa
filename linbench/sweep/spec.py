"""A sweep as data: which impls, which axes, where, and how long a point may take.

Settings come from three layers, later over earlier: the defaults, a TOML suite, and the
command line. A suite may hold several ``[[sweep]]`` tables (say, one over sequence length
at a fixed head dimension and one over head dimension at a fixed length); their points
are united. A flag given on the command line overrides the key in every table.

Two commands read sweeps: ``run`` (forward and backward over sequence lengths) and
``decode`` (generation after a context). A suite says which with ``command``; a decode
sweep's points are ordinary points of mode "decode" whose length is the context.
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
DECODE_MODE = "decode"
COMMANDS = ("run", "decode")
SIZE_AXES = ("seq", "batch", "heads", "dim", "dim_v")
AXIS_KEYS = (*SIZE_AXES, "dtype", "mode", "causal")
RUN_KEYS = ("name", "variant", "baseline", "no_baseline", "device", "timeout_s", "budget_s", "plugin")
DECODE_AXIS_KEYS = ("context", "batch", "heads", "dim", "dim_v", "dtype")
DECODE_KEYS = ("name", "variant", "baseline", "no_baseline", "device", "timeout_s", "tokens", "cuda_graph", "plugin")
# Keys a suite's top level takes beside its command's own.
SUITE_KEYS = ("description", "command")
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
DECODE_SETTINGS: dict[str, Any] = {
    "context": "1k..64k",
    "tokens": 32,  # timed steps (generated tokens) per point
    "cuda_graph": False,  # also time each step as a CUDA-graph replay (GPU only)
    "batch": 1,
    "heads": 8,
    "dim": 64,
    "dim_v": None,
    "dtype": "fp32",
    "variant": ["all"],
    "baseline": ["softmax"],
    "no_baseline": False,
    "device": "auto",
    "timeout_s": 120.0,
    "plugin": [],
}
DEFAULTS = {"run": DEFAULT_SETTINGS, "decode": DECODE_SETTINGS}
TABLE_KEYS = {"run": AXIS_KEYS, "decode": DECODE_AXIS_KEYS}
TOP_KEYS = {"run": (*AXIS_KEYS, *RUN_KEYS), "decode": (*DECODE_AXIS_KEYS, *DECODE_KEYS)}


# Where a suite named without a path (``--suite ci-cpu``) is looked for: ./suites, then the
# suites of the checkout linbench runs from. ``linbench suites`` lists the same folders.
CHECKOUT_SUITES = Path(__file__).resolve().parents[2] / "suites"
SUITE_DIRS = (Path("suites"), CHECKOUT_SUITES)


class SpecError(ValueError):
    """A sweep setting that makes no sense; the message names the setting."""


def find_suite(path: Path) -> Path:
    """The suite file ``path`` names: the file itself, or, for a bare name such as ``ci-cpu``
    (as ``linbench suites`` lists it), ``NAME.toml`` in ./suites or linbench's own suites/.
    SpecError naming the known suites when there is none."""
    if path.is_file() or len(path.parts) != 1:
        return path
    name = path.name if path.suffix == ".toml" else f"{path.name}.toml"
    for folder in SUITE_DIRS:
        if (folder / name).is_file():
            return folder / name
    known = sorted({p.stem for folder in SUITE_DIRS if folder.is_dir() for p in folder.glob("*.toml")})
    listed = f"; suites: {', '.join(known)}" if known else ""
    raise SpecError(f"suite file {str(path)!r} does not exist and names no suite of linbench suites{listed}")


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
    command: str = "run"
    tokens: int | None = None  # decode: timed steps per point
    cuda_graph: bool = False  # decode: also time each step as a CUDA-graph replay


def _sizes(key: str, value: Any) -> tuple[int, ...]:
    items = value if isinstance(value, list | tuple) else [value]
    try:
        return tuple(sorted({v for item in items for v in parse_range(item)}))
    except RangeError as exc:
        raise SpecError(f"{key}: {exc}") from None


def _names(key: str, value: Any) -> list[str]:
    """The names of a comma-list setting; SpecError naming ``key`` for an empty item."""
    try:
        return split_list(_as_list(value))
    except ValueError as exc:
        if all(not str(item).strip() for item in _as_list(value)):
            raise SpecError(f"{key}: no {key} given (an empty value)") from None
        raise SpecError(f"{key}: {exc}") from None


def _modes(value: Any) -> tuple[str, ...]:
    modes = _names("mode", value)
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
    decode = command == "decode"
    return Axes(
        seq=_sizes("context", settings["context"]) if decode else _sizes("seq", settings["seq"]),
        batch=_sizes("batch", settings["batch"]),
        heads=_sizes("heads", settings["heads"]),
        dim=_sizes("dim", settings["dim"]),
        dim_v=None if dim_v is None else _sizes("dim_v", dim_v),
        dtype=dtypes,
        mode=(DECODE_MODE,) if decode else _modes(settings["mode"]),
        causal=(True,) if decode else _causal(settings["causal"]),
    )


def suite_command(path: Path, data: Mapping[str, Any]) -> str:
    """The command a suite is for (``command = "decode"``; "run" when it does not say)."""
    command = data.get("command", "run")
    if command not in COMMANDS:
        raise SpecError(f"suite file {str(path)!r}: command {command!r} is not one of {', '.join(COMMANDS)}")
    return str(command)


def read_suite(path: Path) -> dict[str, Any]:
    """A suite file's TOML as a dict; SpecError naming the file when it is missing or malformed."""
    if not path.is_file():
        raise SpecError(f"suite file {str(path)!r} does not exist")
    try:
        return tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SpecError(f"suite file {str(path)!r} is not valid TOML: {exc}") from None


def load_suite(path: Path, command: str = "run") -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The top-level settings and the ``[[sweep]]`` tables of a suite file for ``command``."""
    data = read_suite(path)
    written_for = suite_command(path, data)
    if written_for != command:
        raise SpecError(
            f"suite file {str(path)!r} is a {written_for} suite; run it with linbench {written_for} --suite {path}"
        )
    data.pop("command", None)
    tables = data.pop("sweep", [])
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise SpecError(f"suite file {str(path)!r}: 'sweep' must be an array of tables ([[sweep]])")
    _check_keys(path, data, (*TOP_KEYS[command], *SUITE_KEYS))
    if data.get("no_baseline") is True and "baseline" in data:
        raise SpecError(f"suite file {str(path)!r}: baseline and no_baseline = true contradict each other; keep one")
    for table in tables:
        _check_keys(path, table, TABLE_KEYS[command])
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


def build_spec(flags: Mapping[str, Any], suite: Path | None = None, command: str = "run") -> SweepSpec:
    """The sweep of ``command`` described by its defaults, then ``suite``, then the non-None ``flags``."""
    defaults = DEFAULTS[command]
    base = dict(defaults)
    tables: list[dict[str, Any]] = []
    if suite is not None:
        suite = find_suite(suite)
        top, tables = load_suite(suite, command)
        base |= top
    given = {key: value for key, value in flags.items() if value is not None}
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise SpecError(f"unknown setting(s): {', '.join(unknown)}")
    if given.get("no_baseline") is True and "baseline" in given:
        raise SpecError("--no-baseline and --baseline contradict each other; give one")
    if "baseline" in given:
        given.setdefault("no_baseline", False)  # --baseline overrides a suite's no_baseline
    # Command-line axes override every table; a table's own keys override the suite's top level.
    tables = [{k: v for k, v in table.items() if k not in given} for table in tables]
    name = str(base.get("name") or short_name(_as_list(given.get("variant", base["variant"])), suite))
    return spec_from_settings(base | given, tables, name=name, suite=str(suite) if suite else None, command=command)


def spec_from_settings(
    settings: Mapping[str, Any], tables: list[dict[str, Any]], *, name: str, suite: str | None, command: str = "run"
) -> SweepSpec:
    """The spec for fully merged settings (as stored in a run's meta.json, for resume)."""
    defaults = DEFAULTS[command]
    base = dict(defaults) | {k: v for k, v in settings.items() if k in defaults}
    blocks = [_axes(base | table, command) for table in tables or [{}]]
    variants = tuple(_names("variant", base["variant"]))
    baselines = () if base["no_baseline"] else tuple(_names("baseline", base["baseline"]))
    if not variants:
        raise SpecError("variant: no variant given")
    budget = base.get("budget_s")
    return SweepSpec(
        name=name,
        variants=variants,
        baselines=baselines,
        blocks=tuple(blocks),
        device=str(base["device"]),
        timeout_s=_positive_float("timeout_s", base["timeout_s"]),
        budget_s=None if budget is None else _positive_float("budget_s", budget),
        plugins=tuple(str(Path(p).resolve()) for p in _as_list(base["plugin"])),
        suite=suite,
        settings={k: base[k] for k in defaults} | {"sweep": tables},
        command=command,
        tokens=_one_size("tokens", base["tokens"]) if command == "decode" else None,
        cuda_graph=_flag("cuda_graph", base.get("cuda_graph", False)),
    )


def _flag(key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise SpecError(f"{key}: {value!r} is not true or false")
    return value


def _one_size(key: str, value: Any) -> int:
    """A single positive size (``32``, ``1k``); SpecError naming ``key`` otherwise."""
    sizes = _sizes(key, value)
    if len(sizes) != 1:
        raise SpecError(f"{key}: give one number, not {value!r}")
    return sizes[0]


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
