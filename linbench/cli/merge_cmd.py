"""``linbench merge RUN``: the shard attempts of a run spread over several GPUs, as one run folder.

``linbench run --devices``, ``--executor`` and ``--resume`` merge by themselves; after ``--shard
K/N`` parts (any launcher), this merges once they are done. Deterministic and idempotent:
run again, it writes the same files (linbench/fleet/merge.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from linbench.cli.errors import usage_errors

HELP = {
    "run": "The run folder the --shard parts shared, OUT/<sweep name> (it holds fleet.json).",
    "allow_mixed": "Merge although a scenario was measured on two GPU models or cards, or the shards ran "
    "different software (its comparisons then mix them; a column this linbench does not write is left out).",
    "allow_partial": "Merge although some points have no row yet (meta.json then says partial).",
}


def merge_command(
    run: Annotated[Path, typer.Argument(help=HELP["run"])],
    allow_mixed: Annotated[bool, typer.Option("--allow-mixed", help=HELP["allow_mixed"])] = False,
    allow_partial: Annotated[bool, typer.Option("--allow-partial", help=HELP["allow_partial"])] = False,
) -> None:
    """Merge the shards of a run spread over several GPUs into its results.csv and meta.json."""
    from linbench.fleet.merge import merge_run

    with usage_errors():
        summary = merge_run(run, allow_mixed=allow_mixed, allow_partial=allow_partial)
    attempts = sum(len(used) for used in summary.shards.values())
    line = (
        f"linbench merge: {summary.rows} rows from {len(summary.shards)} shards ({attempts} attempts"
        f"{f', {summary.superseded} rows superseded' if summary.superseded else ''}) -> {run / 'results.csv'}"
    )
    if summary.missing:
        line += f"; {len(summary.missing)} points have no row yet (partial)"
    typer.echo(line)
