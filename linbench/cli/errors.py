"""Bad input ends a command with one line on stderr and exit status 2, never a traceback.

A traceback says "linbench is broken"; a typo in ``--variant`` is not that. Typer's own
usage errors (unknown option, missing value) already exit 2, so ours match them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

import typer

USAGE_EXIT = 2
INTERRUPTED_EXIT = 130  # the shell's status for a Ctrl-C: a run, an A/B job or a fleet run stopped by it


class CliUsageError(Exception):
    """The user asked for something that cannot be done (unknown dtype, no CUDA, ...)."""


def exit_usage_error(message: str) -> NoReturn:
    """Print ``linbench: error: <message>`` on one line to stderr and exit 2."""
    one_line = " ".join(str(message).split())
    typer.echo(f"linbench: error: {one_line}", err=True)
    raise typer.Exit(USAGE_EXIT)


@contextmanager
def usage_errors() -> Iterator[None]:
    """Report CliUsageError and ValueError raised in the block as usage errors.

    Wrap only the parsing of input (names, devices, dtypes), where a ValueError means the
    user's input is wrong; a ValueError from deep inside a run is a bug and should show.
    """
    try:
        yield
    except (CliUsageError, ValueError) as exc:
        exit_usage_error(str(exc))
