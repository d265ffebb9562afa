"""How one sweep setting's value is read: sizes, names, numbers and flags.

Every reader raises ``SpecError`` naming the setting, which the commands print as a one-line
error (exit 2). A setting's value comes from the defaults, a suite's TOML or the request
(linbench/sweep/spec.py layers them), so each reader takes text or a number alike.
"""

from __future__ import annotations

from typing import Any

from linbench.dtypes import split_list
from linbench.sweep.ranges import RangeError, parse_range


class SpecError(ValueError):
    """A sweep setting that makes no sense; the message names the setting."""


def parse_sizes(key: str, value: Any) -> tuple[int, ...]:
    """Every size ``value`` names (range text, a number, or a list of them), sorted, each once;
    SpecError naming ``key`` for a bad range."""
    items = value if isinstance(value, list | tuple) else [value]
    try:
        return tuple(sorted({v for item in items for v in parse_range(item)}))
    except RangeError as exc:
        raise SpecError(f"{key}: {exc}") from None


def name_list(key: str, value: Any) -> list[str]:
    """The names of a comma-list setting; SpecError naming ``key`` for an empty item."""
    try:
        return split_list(as_list(value))
    except ValueError as exc:
        if all(not str(item).strip() for item in as_list(value)):
            raise SpecError(f"{key}: no {key} given (an empty value)") from None
        raise SpecError(f"{key}: {exc}") from None


def optional(parse: Any, key: str, value: Any) -> Any:
    return None if value is None else parse(key, value)


def positive_int(key: str, value: Any) -> int:
    """``value`` (a number or its text) as a whole number of at least 1; SpecError naming ``key``."""
    text = str(value).strip()
    if isinstance(value, bool) or not text.isdigit() or int(text) < 1:
        raise SpecError(f"{key}: {value!r} is not a positive whole number")
    return int(text)


def nonnegative_float(key: str, value: Any) -> float:
    """``value`` (a number or its text) as a finite number of at least 0; SpecError naming ``key``."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise SpecError(f"{key}: {value!r} is not a number") from None
    if not number >= 0 or number == float("inf"):
        raise SpecError(f"{key}: {value!r} must be zero or more")
    return number


def flag(key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise SpecError(f"{key}: {value!r} is not true or false")
    return value


def one_size(key: str, value: Any) -> int:
    """A single positive size (``32``, ``1k``); SpecError naming ``key`` otherwise."""
    sizes = parse_sizes(key, value)
    if len(sizes) != 1:
        raise SpecError(f"{key}: give one number, not {value!r}")
    return sizes[0]


def as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else [value]


# The longest wait a worker's reply takes (multiprocessing's poll counts whole milliseconds in a
# C int: about 24.8 days), well inside it: a limit past it could not be waited for.
MAX_SECONDS = 1e6


def positive_float(key: str, value: Any) -> float:
    """A number of seconds above 0 and at most MAX_SECONDS; SpecError naming ``key`` otherwise
    (nan and inf included: inf crashed a run mid-way, and meta.json cannot hold it)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise SpecError(f"{key}: {value!r} is not a number") from None
    if not number > 0:
        raise SpecError(f"{key}: {value!r} must be positive")
    if not number <= MAX_SECONDS:
        raise SpecError(f"{key}: {value!r} must be at most {MAX_SECONDS:g} seconds (about 11 days)")
    return number
