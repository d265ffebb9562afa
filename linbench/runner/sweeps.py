"""A whole sweep run from Python, as ``linbench run`` and ``linbench decode`` run it:
plan_sweep() and run_sweep(), exported as ``linbench.plan_sweep`` and ``linbench.run_sweep``
(docs/python-api.md)."""

from __future__ import annotations

import re
import shlex
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import fields
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from linbench.runner.pipeline import Outcome, Prepared
    from linbench.runner.recorder import Listener
    from linbench.sweep.request import SweepRequest

__all__ = ["plan_sweep", "run_sweep"]

# The sweep's checks speak the command line's words (``--kv-heads``), which a script does not
# use: each option a message names is said as the request's field, or this call's argument.
ARGUMENTS = {"--resume": "resume", "--mix": "mix=True", "--out": "out", "--yes": "yes=True"}
_FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*[a-z0-9]")


def plan_sweep(
    request: SweepRequest | None = None,
    out: str | Path = "results",
    *,
    resume: str | Path | None = None,
    mix: bool = False,
) -> Prepared:
    """The sweep ``request`` asks for (or the run folder ``resume`` holds), checked and planned
    as ``--dry-run`` plans it: its points, the ones still to run (``pending``) and about how
    long they take (``estimate_s``). Nothing runs and nothing is made. Bad input raises a
    ValueError saying what to change (SpecError, DeviceError, RunSetupError, ...), in the
    request's words (python_words)."""
    from linbench.runner.pipeline import prepare

    with python_words():
        return prepare(request, Path(out), resume=_path(resume), mix=mix, repair=False)


def run_sweep(
    request: SweepRequest | None = None,
    out: str | Path = "results",
    *,
    resume: str | Path | None = None,
    mix: bool = False,
    listener: Listener | None = None,
    yes: bool = False,
) -> Outcome:
    """Run the sweep ``request`` asks for in a new folder under ``out`` (or finish the run in
    the folder ``resume``), as ``linbench run`` or ``linbench decode`` does, and return how it
    ended: ``status`` ("complete", "interrupted" by Ctrl-C, "failed" when a write failed),
    the folder ``path``, its ``rows`` and ``meta``. A failed point is a row, not an exception.

    A sweep past 2000 points or 2 hours by the estimate raises RunSetupError unless ``yes``;
    ``listener(event, point, row)`` hears "start" before each process and "row" when a
    point's row is written. Bad input raises a ValueError before any folder is made, naming the
    request's fields (``kv_heads``) where the command line's message names its options."""
    from linbench.runner.lifecycle import RunSetupError
    from linbench.runner.pipeline import prepare, run, start

    with python_words():
        prepared = prepare(request, Path(out), resume=_path(resume), mix=mix)
    why = prepared.too_large
    if why is not None and not yes:
        raise RunSetupError(f"this sweep is {why}; narrow the axes, or pass yes=True to run it anyway")
    # meta.json names what made the run: this call, in the process the script runs as.
    store = start(prepared, command=f"linbench.run_sweep() in {shlex.join(sys.argv)}")
    return run(prepared, store, listener)


def _path(value: str | Path | None) -> Path | None:
    return None if value is None else Path(value)


@cache
def field_words() -> dict[str, str]:
    """Each option of run and decode that is a SweepRequest field (``--variant``: ``variants``,
    ``--kv-heads``: ``kv_heads``), and this module's arguments (ARGUMENTS), by its flag."""
    from linbench.sweep.request import SETTING_KEYS, SweepRequest

    words = {"--bidirectional": "causal=False"} | ARGUMENTS
    for field in fields(SweepRequest):
        words[f"--{SETTING_KEYS.get(field.name, field.name).replace('_', '-')}"] = field.name
    return words


def in_python_words(message: str) -> str:
    """``message`` with each option of the command line it names said as the field (or the
    argument) a script gives instead; a flag that is neither stays as it is."""
    words = field_words()
    return _FLAG.sub(lambda flag: words.get(flag.group(0), flag.group(0)), message)


@contextmanager
def python_words() -> Iterator[None]:
    """A ValueError raised in the block (bad input) re-raised as itself, its message in the
    request's words (in_python_words)."""
    try:
        yield
    except ValueError as exc:
        if exc.args and isinstance(exc.args[0], str):
            exc.args = (in_python_words(exc.args[0]), *exc.args[1:])
        raise
