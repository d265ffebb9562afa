"""``linbench history``: many runs of one suite at once, one series per point, and the changes
across them found by Apache Otava (linbench/history/, docs/history.md). Exit 1 when a series'
newest runs are a regression the evidence supports or a point ok before is broken in the newest
run, 4 when they cannot be judged (too few runs, past the floor without the evidence yet, or a
point the newest run skipped or left out), 0 otherwise, 2 on bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from linbench.cli.common import stdout_console
from linbench.cli.compare_cmd import parse_percent, parse_positive
from linbench.cli.errors import CliUsageError, usage_errors
from linbench.cli.outputs import write_output

if TYPE_CHECKING:
    from linbench.history.observations import Observation
    from linbench.history.verdict import History

HELP = {
    "paths": "Run folders, folders of run folders, and history files (.csv, .csv.gz), in any mix.",
    "store": "The history file to keep (one row per point per run); --add appends to it, and it is read "
    "with the PATHS.",
    "add": "A run folder (or a folder of runs) to append to --store before judging (repeatable); a run "
    "the file already holds is skipped.",
    "recent": "The newest runs judged: exit 1 for a regression among each series' last N runs, 4 while they sit "
    "past --min-magnitude without the evidence.",
    "pvalue": "The suite's false-alarm level a night (default 0.01): each series is tested at its share, this over "
    "the number of series.",
    "magnitude": "The smallest change named, percent (default 5%, the gate's floor; Otava's min_magnitude).",
    "min_runs": "A segment (a series since its start or its last split) with fewer runs is insufficient data.",
    "html": "Write an HTML page with one figure per changed or split series.",
}


def history_command(
    paths: Annotated[list[Path] | None, typer.Argument(help=HELP["paths"], show_default=False)] = None,
    store: Annotated[Path | None, typer.Option("--store", metavar="FILE", help=HELP["store"])] = None,
    add: Annotated[list[Path] | None, typer.Option("--add", metavar="RUN", help=HELP["add"])] = None,
    recent: Annotated[int, typer.Option("--recent", min=1, help=HELP["recent"])] = 3,
    max_pvalue: Annotated[str, typer.Option("--max-pvalue", help=HELP["pvalue"])] = "0.01",
    min_magnitude: Annotated[str, typer.Option("--min-magnitude", help=HELP["magnitude"])] = "5%",
    min_runs: Annotated[int, typer.Option("--min-runs", min=3, help=HELP["min_runs"])] = 5,
    html_path: Annotated[Path | None, typer.Option("--html", metavar="FILE", help=HELP["html"])] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Find where points changed across many runs (Apache Otava), for nightly jobs.

    One series per point (variant, impl, shape, mode, dtype, device model), in the order of each
    run's commit time (else its start), judged on the time the gate judges; a series is split
    where the device, driver, torch, cores, memory, measured ceilings, torch threads, CUDA-graph
    timing or timing protocol changed. Exit status:
    1 a series' newest runs are a regression past --min-magnitude that the evidence supports (a
    change newly standing with 3 runs after it, or its last --recent runs past the floor at its
    share of the suite's --max-pvalue), or a point ok before is oom, timeout, mismatch, error or
    crashed in the newest run;
    4 the newest runs cannot be judged (insufficient data, a split just before them, past the
    floor without the evidence yet, or a point measured in the run before that the newest run
    skipped or has no row for: never a pass);
    0 otherwise; 2 bad input.
    """
    from linbench.history import detect, verdict
    from linbench.history.series import build
    from linbench.history.store import HistoryFileError
    from linbench.report.load import ReportInputError

    with usage_errors():
        options = verdict.Options(
            max_pvalue=_pvalue(max_pvalue),
            min_magnitude=parse_percent(min_magnitude, "--min-magnitude"),
            recent=recent,
            min_runs=min_runs,
        )
        if add and store is None:
            raise CliUsageError("--add needs --store FILE: the history file to append to")
        if not paths and store is None:
            raise CliUsageError("give run folders or history files to read, or --store FILE")
        if store is not None and not add and not paths and not store.exists():  # runs given: a store to come
            raise CliUsageError(f"--store {str(store)!r} does not exist; make it with --store FILE --add RUN")
        try:
            if add and store is not None:
                _add(store, add)
            seen = list(paths or [])
            if store is not None and store not in seen and store.exists():
                seen.append(store)
            read = _observations(seen)
        except (HistoryFileError, ReportInputError) as exc:
            raise CliUsageError(str(exc)) from None
        if not any(o.ok for o in read):
            raise CliUsageError("the runs given hold no point with a time")
        try:
            history = verdict.judge(build(read), options)
        except detect.OtavaMissingError as exc:
            raise CliUsageError(str(exc)) from None
    _show(history, as_json, html_path)
    if history.status:
        raise typer.Exit(history.status)


def _pvalue(text: str) -> float:
    value = parse_positive(text, "--max-pvalue", example="0.01")
    if value >= 1:
        raise CliUsageError(f"--max-pvalue {text!r} is not below 1")
    return value


def _add(store: Path, runs: list[Path]) -> None:
    from linbench.history.observations import of_folders
    from linbench.history.store import add

    added, skipped = add(store, of_folders(runs))
    console = stdout_console()
    console.print(f"added {added} point(s) to {store}", highlight=False)
    for run in skipped:
        console.print(f"{run}: already in {store}, skipped", highlight=False)


def _observations(paths: list[Path]) -> list[Observation]:
    """Every point of every run the paths hold, each run once: a run given twice (its folder
    twice, or its folder and a history file that holds it) would count as two nights, and a
    verdict on three nights would be drawn from six."""
    from linbench.history.observations import of_folders
    from linbench.history.store import is_history_file, read

    found: dict[tuple[tuple[str, ...], str, str], Observation] = {}
    repeated: set[str] = set()
    for path in paths:
        for observation in read(path) if is_history_file(path) else of_folders([path]):
            identity = (observation.key, observation.run, observation.started_at)
            if identity in found:
                repeated.add(observation.run)
            found.setdefault(identity, observation)
    if repeated:
        names = ", ".join(sorted(repeated))
        typer.echo(f"warning: {len(repeated)} run(s) given more than once, each counted once: {names}", err=True)
    return list(found.values())


def _show(history: History, as_json: bool, html_path: Path | None) -> None:
    from linbench.history.page import html
    from linbench.history.render import as_json as to_json
    from linbench.history.render import lines

    if html_path is not None:
        page = html(history)
        with usage_errors():
            write_output(html_path, lambda path: path.write_text(page), "the history page")
    if as_json:
        print(json.dumps(to_json(history), indent=2))
        return
    console = stdout_console()
    for line in lines(history):
        console.print(line, highlight=False)
    if html_path is not None:
        console.print(f"wrote {html_path}", highlight=False)
