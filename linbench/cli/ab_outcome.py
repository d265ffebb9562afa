"""How ``linbench ab``'s rounds ended, for the command: measured (each side's round folders),
stopped by the ``--max-job-s`` deadline (the complete rounds, or, with none complete, an
INCONCLUSIVE verdict in compare's format), refused (exit 2) or interrupted (exit 130)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import typer

from linbench.cli.errors import INTERRUPTED_EXIT, exit_usage_error

if TYPE_CHECKING:
    from linbench.ab.deadline import DeadlineError
    from linbench.ab.job import AbJob


class Measure(NamedTuple):
    """AbJob.measure's arguments, in its order: what each round runs and how the rounds go on."""

    run_args: list[str]
    on_progress: Callable[[str], None]
    command: str
    rule: Any  # gate/rule.py's TimeRule
    budget_s: float | None
    only: set[tuple[str, ...]] | None
    started: float
    changed: set[str]
    same_code: Callable[[str], bool]


def measured(job: AbJob, measure: Measure) -> tuple[Mapping[str, Sequence[Path]], DeadlineError | None]:
    """``job``'s rounds (AbJob.measure's arguments ``measure``), each side's round folders, and
    what the ``--max-job-s`` deadline stopped (DeadlineError; None: nothing), whose complete
    rounds they are; a one-line error (exit 2) for rounds that cannot run, exit 130 once
    interrupted."""
    from linbench.ab.deadline import DeadlineError
    from linbench.ab.rounds import RoundError, stopping_on_signals
    from linbench.ab.worktree import WorktreeError

    try:
        with stopping_on_signals():
            return job.measure(*measure), None
    except (WorktreeError, RoundError) as exc:
        exit_usage_error(str(exc))
    except DeadlineError as stop:
        note(f"linbench ab: {stop} (the rounds so far are in {job.out_dir}): the verdict is never a pass")
        return stop.folders, stop
    except KeyboardInterrupt as exc:
        why = f" ({exc})" if str(exc) else ""
        note(
            f"interrupted{why}: its rounds are stopped and the baseline's worktree is removed; "
            f"the rounds so far are in {job.out_dir}"
        )
        raise typer.Exit(INTERRUPTED_EXIT) from None


def nothing_judged(stop: DeadlineError, max_job_s: float | None, command: str, flags: dict[str, Any]) -> None:
    """No round was complete when the deadline stopped ``stop``: INCONCLUSIVE (exit 4) on stdout,
    in compare's format, with the command that would judge the sweep."""
    from dataclasses import asdict

    from linbench.ab.job import stopped_section
    from linbench.cli.common import output_format
    from linbench.gate.advice import stopped_line
    from linbench.gate.compare import Comparison
    from linbench.gate.verdict import Stopped

    stopped = Stopped.of(stopped_section(stop, max_job_s))
    assert stopped is not None
    advice = stopped_line(stopped, command)
    verdict = "INCONCLUSIVE: 0 points compared; the --max-job-s deadline stopped the rounds before one was complete"
    chosen = output_format(flags.get("output_format_flag") or "table", bool(flags.get("as_json")))
    if chosen == "json":  # compare's keys, every one, so that a script reading them finds them
        empty = Comparison("", "", points=[], baseline_only=[], current_only=[], exponents=[], stopped=stopped)
        report = empty.to_json() | {"exit_status": 4, "stopped": asdict(stopped), "advice": [advice]}
        typer.echo(json.dumps(report, indent=2))
    elif chosen == "md":
        typer.echo(f"- {advice}\n\n**{verdict}**")
    else:
        typer.echo(f"{advice}\n{verdict}")
    raise typer.Exit(4)


def note(line: str) -> None:
    """A line about the rounds, on stderr (stdout is the verdict's)."""
    typer.echo(line, err=True)
