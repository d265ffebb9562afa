"""``linbench plot``: figures of finished runs, beside their data or under --out."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from linbench.cli.common import warn_left_out
from linbench.cli.errors import CliUsageError, exit_usage_error, usage_errors


def plot_command(
    runs: Annotated[list[Path], typer.Argument(help="Run folders, results.csv files, or folders of runs.")],
    out: Annotated[
        Path | None, typer.Option("--out", help="Write figures here (a folder per run) instead of into each run.")
    ] = None,
    formats: Annotated[str, typer.Option("--format", help="Comma list of png, svg, pdf.")] = "png",
) -> None:
    """Plot time, peak memory, throughput and the speedup over softmax against length (time and
    memory against head dim, batch and heads when swept; decode runs: the decode figure; pack
    runs: tokens/s packed against padded)."""
    from linbench.dtypes import split_list
    from linbench.report.load import load_runs
    from linbench.report.plot import FORMATS, plot_run

    with usage_errors():
        try:
            chosen = [f.lower() for f in split_list([formats])]
        except ValueError as exc:  # '' is empty: name the option it came from
            raise CliUsageError(f"--format {exc}") from None
        unknown = [f for f in chosen if f not in FORMATS]
        if unknown or not chosen:
            raise CliUsageError(f"unknown --format {', '.join(unknown) or formats!r}; use {', '.join(FORMATS)}")
        loaded = load_runs(runs)
    warn_left_out(line for run in loaded for line in run.warnings)
    targets = _targets([run.path for run in loaded], out)
    for run, target in zip(loaded, targets, strict=True):
        blocker = next((p for p in (target, *target.parents) if p.exists() and not p.is_dir()), None)
        if blocker is not None:
            exit_usage_error(f"cannot write figures to {str(target)!r}: {str(blocker)!r} is a file, not a folder")
        try:
            written = plot_run(run, target, chosen)
        except OSError as exc:  # a read-only or full file system: the figures written so far stay
            exit_usage_error(f"cannot write figures to {str(target)!r}: {exc.strerror or exc}")
        except (ValueError, OverflowError) as exc:  # values no axis can take (1e308 ms): the run, not linbench
            exit_usage_error(f"cannot plot {str(run.path)!r}: {exc}; the figures written so far are in {target}")
        if written:
            typer.echo(f"{run.path}: {len(written)} figure(s) in {target}")
        else:
            typer.echo(f"{run.path}: nothing to plot (no impl has two lengths, head dims, batch sizes or heads)")


def _targets(paths: list[Path], out: Path | None) -> list[Path]:
    """Each run's figure folder: its plots/, or under --out a folder of its name, made distinct
    (``NAME-2``, ...) where two runs share a name (shard runs are named by their sweep), since
    the second run's figures would replace the first's."""
    if out is None:
        return [path / "plots" for path in paths]
    taken: set[str] = set()
    targets = []
    for path in paths:
        name, n = path.name, 1
        while name in taken:
            n += 1
            name = f"{path.name}-{n}"
        taken.add(name)
        targets.append(out / name)
    return targets
