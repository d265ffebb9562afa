"""``linbench compare``: the regression gate. Exit 0 when every point was judged and none
regressed, 1 when something regressed, 2 on a usage error, 3 when the control points say the
machine changed (and nothing else failed), 4 when the comparison is inconclusive: some time,
count or memory could not be judged, or the runs did not measure the same things (gate/verdict.py). With
``--changed-since``, a point whose impl runs the same code on both sides (no file it runs
changed, nor any file every point runs) need not be judged: only the machine could move it. An
A/B whose ``--max-job-s`` deadline stopped a round (its merged meta.json says so) is never a
pass."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from linbench.cli.common import output_format, stdout_console, warn_left_out
from linbench.cli.errors import CliUsageError, usage_errors

if TYPE_CHECKING:
    from linbench.gate.compare import Comparison, Thresholds
    from linbench.gate.configs import ConfigChange
    from linbench.gate.verdict import ChangedCode, Stopped

# The exit status of each verdict (gate/verdict.py); 2 is a usage error (cli/errors.py).
EXIT_STATUS = {"pass": 0, "regression": 1, "environment changed": 3, "inconclusive": 4}
BYTE_UNITS = {"": 1, "b": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "kb": 1000, "mb": 10**6, "gb": 10**9}
HELP = {
    "slowdown": "Largest tolerated slowdown, percent ('5%' or '5'); a slowdown must also exceed the noise "
    "measured between each point's worker processes.",
    "noise_z": "Standard errors of the between-process noise a change must pass to count (default 5); an A/B "
    "(linbench ab) is judged instead at its error rates per round, until decided (docs/gate.md).",
    "max_noise": "A point whose noise alone could make a change this large (percent, default 30%) is "
    "'noisy': reported, never a failure; for an A/B, the change a point must be cleared of to pass.",
    "launches": "Largest tolerated growth of GPU kernel launches per call, percent (default 0: any extra launch).",
    "control": "VARIANT:IMPL of control points for the drift check (repeatable; a suite's controls are "
    "read from CURRENT's meta.json): when all of them moved the same way past --max-slowdown, the "
    "machine changed and the exit status is 3, not 1, for time.",
    "memory": "Largest tolerated growth of peak memory, percent.",
    "floor": "Memory growth below this many bytes ('1MiB', '0') is never a regression. Default: 2MiB where a "
    "CPU point is judged on peak RSS, which moves by allocator pages between identical runs; 0 where it is "
    "an allocator's count (GPUs, and a CPU's alloc_peak_bytes).",
    "exponent": "VARIANT=X or VARIANT:IMPL=X: fail when a fitted time-in-length exponent of CURRENT exceeds X "
    "(repeatable).",
    "force": "Compare runs from different devices, or measured with other software (torch, CUDA, a library's "
    "version); what differs is said beside the verdict.",
    "changed_since": "A git revision of this checkout, the one BASELINE was measured at (CURRENT measured at this "
    "checkout): the impls whose code changed since it (git diff, untracked files included, mapped by the import "
    "graph) must be measured by a run, or the comparison is inconclusive (exit 4) and names them.",
}


def compare_command(
    baseline: Annotated[Path, typer.Argument(help="The baseline run folder or its results.csv.")],
    current: Annotated[Path, typer.Argument(help="The current run folder or its results.csv.")],
    max_slowdown: Annotated[str, typer.Option("--max-slowdown", help=HELP["slowdown"])] = "5%",
    max_memory_growth: Annotated[str, typer.Option("--max-memory-growth", help=HELP["memory"])] = "2%",
    memory_floor: Annotated[str | None, typer.Option("--memory-floor", help=HELP["floor"])] = None,
    max_exponent: Annotated[list[str] | None, typer.Option("--max-exponent", help=HELP["exponent"])] = None,
    noise_z: Annotated[str, typer.Option("--noise-z", help=HELP["noise_z"])] = "5",
    max_noise: Annotated[str, typer.Option("--max-noise", help=HELP["max_noise"])] = "30%",
    max_launch_growth: Annotated[str, typer.Option("--max-launch-growth", help=HELP["launches"])] = "0%",
    control: Annotated[list[str] | None, typer.Option("--control", help=HELP["control"])] = None,
    force: Annotated[bool, typer.Option("--force", help=HELP["force"])] = False,
    changed_since: Annotated[
        str | None, typer.Option("--changed-since", metavar="REV", help=HELP["changed_since"], show_default=False)
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON (the same as --format json).")] = False,
    output_format_flag: Annotated[str, typer.Option("--format", help="table (the default), md or json.")] = "table",
) -> None:
    """Compare CURRENT with BASELINE point by point.

    Exit status, the first that applies:
    1 regression: time, memory, launches, a broken point or an exponent bound;
    4 inconclusive: some time was not judged (noisy or unverified points), a count or memory
    was recorded on one side only (not one an older run's schema predates: that is named),
    no point was judged, the runs do not match (a point of the
    baseline missing from the current run included), or (with --changed-since) an impl whose
    code changed was measured by neither run;
    the output names the points and the command that would judge them;
    3 environment changed: the control points all moved, and nothing else failed;
    0 pass: every point with a time on both sides was judged, and none regressed;
    2 usage error.
    """
    from linbench.gate.compare import Thresholds, check_same_device, compare_runs, environment_lines
    from linbench.gate.configs import config_changes
    from linbench.report.load import read_single_run

    with usage_errors():
        chosen = output_format(output_format_flag, as_json)
        thresholds = Thresholds(
            max_slowdown=parse_percent(max_slowdown, "--max-slowdown"),
            max_memory_growth=parse_percent(max_memory_growth, "--max-memory-growth"),
            memory_floor_bytes=None if memory_floor is None else parse_bytes(memory_floor),
            max_exponents=parse_exponents(max_exponent or []),
            noise_z=parse_positive(noise_z, "--noise-z"),
            max_noise=parse_percent(max_noise, "--max-noise"),
            max_launch_growth=parse_percent(max_launch_growth, "--max-launch-growth"),
            controls=tuple(control or []),
        )
        base_run, cur_run = read_single_run(baseline), read_single_run(current)
        warn_left_out([*base_run.warnings, *cur_run.warnings])
        if not force:  # the two sides of one A/B share one environment: no software refusal
            check_same_device(base_run, cur_run, software=not one_ab(base_run.meta, cur_run.meta))
        comparison = compare_runs(base_run, cur_run, thresholds)
        if changed_since is not None:
            comparison.changed = changed_code(changed_since, cur_run.meta, base_run.meta)
        comparison.stopped = stopped_rounds(cur_run.meta)
    configs = config_changes(base_run, cur_run, comparison)  # the autotuner's choices, beside the verdict
    machines = Machines(environment_lines(base_run, cur_run), _load_lines(base_run.meta, cur_run.meta))
    _print(comparison, chosen, machines, thresholds, configs)
    status = EXIT_STATUS[comparison.verdict]
    if status:
        raise typer.Exit(status)


def changed_code(
    revision: str, meta: Mapping[str, Any] | None = None, baseline_meta: Mapping[str, Any] | None = None
) -> ChangedCode:
    """The code of this checkout changed since ``revision`` (ab/changes.py); a ValueError
    (a usage error) when it is no revision of the checkout, or, given the runs' ``meta`` and
    ``baseline_meta``, when they were not measured at ``revision`` and at this checkout
    (measured_at): the diff would then not be the runs' own. An impl the current run's
    ``meta`` (an A/B's merged run) records as traced running none of the changed code of the
    files it is tied to (ab/ran_code.py), all of which are among them still, is not counted as
    changed."""
    from linbench.ab.changes import changes_since
    from linbench.ab.job import NOT_RUN
    from linbench.ab.worktree import WorktreeError, checkout_root, resolve_revision
    from linbench.gate.verdict import ChangedCode

    root = checkout_root()
    try:
        sha = resolve_revision(root, revision)
    except WorktreeError:
        raise ValueError(f"--changed-since {revision!r} is not a commit of {root}") from None
    if baseline_meta is not None:
        check_measured_at(revision, sha, resolve_revision(root, "HEAD"), baseline_meta, meta or {})
    changes = changes_since(root, sha)
    ab = (meta or {}).get("ab")
    traced = ab.get(NOT_RUN) if isinstance(ab, dict) else None
    traced = traced if isinstance(traced, dict) else {}
    not_run = tuple(
        name
        for name in changes.names
        if isinstance(files := traced.get(name), list) and set(changes.impls[name]) <= set(files)
    )
    impls = tuple(name for name in changes.names if name not in not_run)
    return ChangedCode(revision, impls, changes.infrastructure, not_run, changes.unchanged)


def check_measured_at(
    revision: str, sha: str, head: str, baseline_meta: Mapping[str, Any], current_meta: Mapping[str, Any]
) -> None:
    """ValueError unless the baseline was measured at ``sha`` (``revision``) and the current run
    at this checkout's ``head``, as each run's meta.json records (``git_sha``): what changed
    between them is then this checkout's diff from ``revision``, and an impl outside it runs the
    same code on both sides. Else "same code" would excuse points whose code did change."""
    from linbench.machine.facts import DIRTY  # imports torch: here, not at the top

    base, cur = _commit(baseline_meta, "baseline"), _commit(current_meta, "current")
    if base is None or base.endswith(DIRTY):
        how = "records no linbench commit" if base is None else "was measured with local changes"
        raise ValueError(f"--changed-since: the baseline {how} (meta.json git_sha): what changed since it is unknown")
    if base != sha:
        raise ValueError(
            f"--changed-since {revision!r} is {sha[:12]}, but the baseline was measured at {base[:12]}: "
            f"give --changed-since {base[:12]}"
        )
    if cur is None or cur.removesuffix(DIRTY) != head:
        where = cur[:12] if cur else "no recorded commit"
        raise ValueError(
            f"--changed-since: the current run was measured at {where}, not at this checkout's {head[:12]}: "
            "compare from a checkout of the commit it was measured at"
        )


def one_ab(baseline_meta: Mapping[str, Any], current_meta: Mapping[str, Any]) -> bool:
    """Whether the runs are the two sides of one ``linbench ab`` job: the baseline side and the
    current side, recording the same revisions. Two A/Bs' sides of other jobs are not."""
    base, cur = baseline_meta.get("ab"), current_meta.get("ab")
    if not (isinstance(base, Mapping) and isinstance(cur, Mapping)):
        return False
    sides = (base.get("side"), cur.get("side")) == ("baseline", "current")
    return sides and base.get("revisions") is not None and base.get("revisions") == cur.get("revisions")


def _commit(meta: Mapping[str, Any], side: str) -> str | None:
    """The commit a run was measured at: for a side of ``linbench ab``, the one its job records
    for that side (``ab.revisions``: the baseline side ran in a worktree of it, not from the
    checkout git_sha reads); else the run's git_sha."""
    ab = meta.get("ab")
    revisions = ab.get("revisions") if isinstance(ab, Mapping) else None
    recorded = revisions.get(side) if isinstance(revisions, Mapping) else None
    value = recorded.get("sha") if isinstance(recorded, Mapping) else meta.get("git_sha")
    return value if isinstance(value, str) and value else None


@dataclass(frozen=True)
class Machines:
    """What the output says of the machines: how the runs' machines and software differ, and
    which run was measured on a busy machine."""

    environment: list[str]
    load: list[str]


def stopped_rounds(meta: Mapping[str, Any] | None) -> Stopped | None:
    """What the deadline of the A/B whose merged run has ``meta`` stopped (None: nothing)."""
    from linbench.gate.verdict import STOPPED, Stopped

    ab = (meta or {}).get("ab")
    return Stopped.of(ab.get(STOPPED)) if isinstance(ab, dict) else None


def _load_lines(baseline: dict, current: dict) -> list[str]:
    """A warning for each run that was measured on a busy machine: its times may be off."""
    from linbench.results.machine_load import load_warning

    named = (("baseline", baseline), ("current", current))
    return [f"warning: {name}: {busy}" for name, meta in named if (busy := load_warning(meta))]


def _print(
    comparison: Comparison, chosen: str, machines: Machines, thresholds: Thresholds, configs: list[ConfigChange]
) -> None:
    from linbench.gate.advice import judging_lines
    from linbench.gate.configs import config_json, config_lines
    from linbench.gate.render import (
        VERDICT_STYLE,
        advice_lines,
        between_lines,
        drift_lines,
        exponent_table,
        points_table,
        unmatched_lines,
        verdict_line,
    )
    from linbench.report.render import markdown, rich_table

    tables = [points_table(comparison)] + ([exponent_table(comparison.exponents)] if comparison.exponents else [])
    advice = [*advice_lines(comparison, thresholds.max_slowdown), *judging_lines(comparison, thresholds)]
    changed = comparison.changed.lines(comparison.covered()) if comparison.changed is not None else []
    notes = [
        *unmatched_lines(comparison),
        *changed,
        *drift_lines(comparison),
        *between_lines(comparison),
        *config_lines(configs),
        *advice,
        *machines.environment,
        *machines.load,
    ]
    if chosen == "json":
        report = comparison.to_json() | {"exit_status": EXIT_STATUS[comparison.verdict]}
        report["triton_configs_differ"] = config_json(configs)
        said = {"advice": advice, "environment_differs": machines.environment, "load_warnings": machines.load}
        typer.echo(json.dumps(report | said, indent=2))
    elif chosen == "md":
        typer.echo(markdown(tables, "linbench compare"))
        typer.echo("\n".join(f"- {line}" for line in notes))
        typer.echo(f"\n**{verdict_line(comparison)}**")
    else:
        console = stdout_console()
        for table in tables:
            console.print(rich_table(table, VERDICT_STYLE))
        for line in notes:
            console.print(line, soft_wrap=True, markup=False)
        styles = {"regression": "bold red", "environment changed": "bold yellow", "inconclusive": "bold magenta"}
        style = styles.get(comparison.verdict, "bold green")
        console.print(verdict_line(comparison), style=style)


def parse_percent(text: str, flag: str) -> float:
    """'5%' or '5' → 0.05."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*%?\s*", text)
    if not match:
        raise CliUsageError(f"{flag} {text!r} is not a percentage (for example 5%)")
    return float(match.group(1)) / 100


def parse_positive(text: str, flag: str, example: str = "5") -> float:
    """'5' or '4.5' → a number above 0."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0 or value == float("inf"):
        raise CliUsageError(f"{flag} {text!r} must be a number above 0 (for example {example})")
    return value


def parse_bytes(text: str) -> int:
    """'1MiB', '512 KiB', '0' → bytes."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    if not match or match.group(2).lower() not in BYTE_UNITS:
        raise CliUsageError(f"--memory-floor {text!r} is not a size (for example 1MiB, 512KiB or 0)")
    return int(float(match.group(1)) * BYTE_UNITS[match.group(2).lower()])


def parse_exponents(items: list[str]) -> dict[str, float]:
    bounds: dict[str, float] = {}
    for item in items:
        name, sep, value = item.partition("=")
        try:
            bound = float(value)
        except ValueError:
            bound = -1.0
        if not sep or not name.strip() or not 0 < bound < math.inf:  # nan passed "<= 0": no bound at all
            raise CliUsageError(
                f"--max-exponent {item!r} must be VARIANT=X or VARIANT:IMPL=X with X a finite number > 0"
            )
        bounds[name.strip()] = bound
    return bounds
