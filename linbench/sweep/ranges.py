"""The range grammar of the sweep axes.

    1k..64k        powers of two from 1024 to 65536 (each value doubles the last); the
                   end must be reached: 1k..3k is refused (it would stop at 2k)
    1k..8k:x2      a geometric step (any factor > 1)
    64..256:+64    an arithmetic step
    512,1k,3000    a list; items may themselves be ranges
    4096           a plain number

``k`` is 1024 and ``m`` is 1048576. Values are positive integers; a list comes back
sorted and without repeats, so sweeps always grow. With an explicit step the range stops
at the last value that does not pass the end (64..250:+64 is 64, 128, 192).
"""

from __future__ import annotations

from linbench.units import SizeError, format_size, parse_size

# A sweep of more values than this along one axis is a typo, not a plan.
MAX_VALUES = 4096


class RangeError(SizeError):
    """A range that does not parse; the message names the offending text."""


def _size(text: str) -> int:
    """``parse_size``, its errors reported as this grammar's own."""
    try:
        return parse_size(text)
    except SizeError as exc:
        raise RangeError(str(exc)) from None


def _parse_step(text: str) -> tuple[str, float]:
    """``x2`` → ("x", 2.0), ``+64`` → ("+", 64.0)."""
    kind, amount = text[:1], text[1:]
    if kind not in ("x", "+"):
        raise RangeError(f"step {text!r} must be xFACTOR (geometric, e.g. x2) or +STEP (arithmetic, e.g. +64)")
    try:
        value = float(amount) if kind == "x" else float(_size(amount))
    except (ValueError, RangeError) as exc:
        # parse_size says which: not a positive size (+0, +-64), not a whole one (+1.5), not a number.
        for problem, words in (("positive", "positive"), ("whole number", "a whole number")):
            if problem in str(exc):
                raise RangeError(f"arithmetic step {text!r} must be {words}, as in +64") from None
        raise RangeError(f"step {text!r} has no valid number after {kind!r}") from None
    if kind == "x" and value <= 1:
        raise RangeError(f"geometric step {text!r} must be larger than x1")
    return kind, value


def _expand(start: int, stop: int, kind: str, step: float, text: str) -> list[int]:
    values: list[int] = []
    current = float(start)
    while current <= stop:
        values.append(round(current))
        if len(values) > MAX_VALUES:
            raise RangeError(f"range {text!r} has more than {MAX_VALUES} values")
        current = current * step if kind == "x" else current + step
    return values


def _parse_item(text: str) -> list[int]:
    if ".." not in text:
        return [_size(text)]
    bounds, _, step_text = text.partition(":")
    start_text, _, stop_text = bounds.partition("..")
    if not start_text.strip() or not stop_text.strip():
        raise RangeError(f"range {text!r} needs a start and an end, as in 1k..64k")
    start, stop = _size(start_text), _size(stop_text)
    if start > stop:
        raise RangeError(f"range {text!r} is reversed: start {start} is larger than end {stop}")
    if step_text.strip():
        kind, step = _parse_step(step_text.strip())
        return _expand(start, stop, kind, step, text)
    values = _expand(start, stop, "x", 2.0, text)
    if values[-1] != stop:
        # Doubling from the start misses the end: say so rather than drop the end unseen.
        short = f"{start_text.strip()}..{format_size(values[-1])}" if len(values) > 1 else start_text.strip()
        other = (
            f"{start_text.strip()}..{stop_text.strip()}:+{format_size(start)}"
            if (stop - start) % start == 0
            else ",".join([*(format_size(v) for v in values), stop_text.strip()])
        )
        raise RangeError(
            f"the range {text.strip()} in powers of two ends at {format_size(values[-1])}, not "
            f"{stop_text.strip()}; write {short} or {other}"
        )
    return values


def parse_range(text: str | int) -> list[int]:
    """The sorted, distinct values of a range expression; RangeError when it is not one."""
    if isinstance(text, bool):
        raise RangeError(f"{text!r} is not a size")
    if isinstance(text, int):
        return [_size(str(text))]
    items = [item.strip() for item in str(text).split(",")]
    if not any(items):
        raise RangeError("empty range: give a size, a list (512,1k) or a range (1k..64k)")
    if not all(items):
        raise RangeError(f"{text!r} has an empty item between commas")
    values = sorted({value for item in items for value in _parse_item(item)})
    if len(values) > MAX_VALUES:
        raise RangeError(f"{text!r} has more than {MAX_VALUES} values")
    return values
