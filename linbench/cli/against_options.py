"""``--against`` and ``--no-against``: the impls ``run`` and ``decode`` measure beside the
variants, the reference they are judged against (softmax by default).

These were ``--baseline`` and ``--no-baseline`` until ``linbench ab --baseline REV`` made
"baseline" a git revision too. One flag name keeps one meaning: the old spellings stay as
hidden options only to be refused with a line naming the new one (a silent alias would keep
both alive, and ``ab --baseline`` would still read two ways).
"""

from __future__ import annotations

from typing import Annotated

import typer

from linbench.cli.errors import CliUsageError

NO_AGAINST_HELP = "Measure the variants alone: nothing beside them."
# The old spellings, hidden from --help, refused when given.
OldBaseline = Annotated[list[str] | None, typer.Option("--baseline", hidden=True)]
OldNoBaseline = Annotated[bool, typer.Option("--no-baseline", hidden=True)]


def refuse_old_names(baseline: list[str] | None, no_baseline: bool) -> None:
    """CliUsageError naming ``--against`` (``--no-against``) when the old flag was given."""
    if baseline:
        raise CliUsageError(
            f"--baseline is now --against (--against {','.join(baseline)}): the impls measured beside "
            "the variants; --baseline is linbench ab's git revision"
        )
    if no_baseline:
        raise CliUsageError("--no-baseline is now --no-against (measure the variants alone)")
