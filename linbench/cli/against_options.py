"""``--against`` and ``--no-against``: the impls ``run`` and ``decode`` measure beside the
variants, the reference they are judged against (softmax by default).

These were ``--baseline`` and ``--no-baseline`` until ``linbench ab --baseline REV`` made
"baseline" a git revision too. The old spellings still work on ``run`` and ``decode`` for a
deprecation period, hidden from ``--help``: each given says so in one line on stderr naming
the new one, so a script that used them keeps running and learns what to write instead.
``ab --baseline`` is the revision, and only that (``ab`` never forwards them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import typer

from linbench.cli.errors import CliUsageError

NO_AGAINST_HELP = "Measure the variants alone: nothing beside them."
# The old spellings, hidden from --help, taken as --against and --no-against with a warning.
OldBaseline = Annotated[list[str] | None, typer.Option("--baseline", hidden=True)]
OldNoBaseline = Annotated[bool, typer.Option("--no-baseline", hidden=True)]


def take_old_names(options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` with ``--baseline``'s values as ``--against``'s and ``--no-baseline`` as
    ``--no-against``, each old spelling given warned of in one stderr line naming the new one;
    CliUsageError when the old and the new spelling of one option are both given."""
    taken = dict(options)
    baseline, no_baseline = taken.pop("baseline", None), taken.pop("no_baseline", False)
    if baseline:
        if taken.get("against"):
            raise CliUsageError("--baseline is the old spelling of --against; give --against alone")
        _warn(f"--baseline is deprecated: write --against {','.join(baseline)} (the impls measured beside)")
        taken["against"] = list(baseline)
    if no_baseline:
        _warn("--no-baseline is deprecated: write --no-against (measure the variants alone)")
        taken["no_against"] = True
    return taken


def _warn(message: str) -> None:
    typer.echo(f"linbench: warning: {message}", err=True)
