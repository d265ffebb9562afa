"""``linbench ab``: the baseline revision and the current code measured on this machine in
alternating rounds, then judged by ``linbench compare``.

Its run options are ``linbench run``'s and its threshold options ``linbench compare``'s, taken
from those commands' signatures, so the three never drift apart: a run option given here is
passed on to each round's ``linbench run`` (and only the options given, so a baseline from
before a newer option still runs), and the compare options go to ``linbench compare``
unchanged. ``--baseline`` is the revision, and only that: the impls run measures beside the
variants are ``--against``, as in run. Progress and the folders go to stderr; stdout carries the
comparison exactly as ``linbench compare`` prints it, so ``--format md > compare.md`` works.
The job itself (the worktree, the rounds, the merge) is linbench/ab/job.py: this command
parses, calls it and prints.
"""

from __future__ import annotations

import copy
import inspect
import math
import shlex
import sys
import time
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NamedTuple

import typer

from linbench.cli.ab_outcome import Measure, measured, note, nothing_judged
from linbench.cli.compare_cmd import compare_command
from linbench.cli.errors import CliUsageError, exit_usage_error, usage_errors
from linbench.cli.run_cmd import run_command
from linbench.results.protocol import MIN_TO_JUDGE

if TYPE_CHECKING:
    pass

DEFAULT_ROUNDS = MIN_TO_JUDGE  # every point's; the others go to the points not yet decided
DEFAULT_MAX_ROUNDS = 100
# run's options that ab sets itself (--out, --quiet, --yes), or that make no sense for a round:
# each round is one process per point, a new run, measured to the end.
RUN_OPTIONS_NOT_FORWARDED = (
    *("out", "quiet", "yes"),
    *("resume", "dry_run", "processes", "max_processes", "mix", "allow_failures", "no_check"),
    *("baseline", "no_baseline"),  # run's refused old spellings of --against: ab's --baseline is the revision
)
# ab gives compare --changed-since itself: the baseline revision.
COMPARE_ARGUMENTS = ("baseline", "current", "changed_since")
HELP = {
    "baseline": "The git revision to measure against (a sha, a branch, HEAD~1, origin/main).",
    "rounds": f"Rounds of every point: each runs every point once per side, in ABBA order. Default: {DEFAULT_ROUNDS} "
    f"(compare needs {MIN_TO_JUDGE} processes per point to judge time).",
    "max_rounds": "The most rounds: after --rounds, more run, each of the points whose verdict is not yet decided "
    "(the interval of their ratio at the gate's error rates reaches both past --max-slowdown and to +--max-noise; "
    "docs/gate.md), the changed impls' first (those that look slower ahead), then the cheapest to decide, a "
    "round of a few points in several processes each (their median the round's). "
    f"Default: {DEFAULT_MAX_ROUNDS} when --rounds > 1.",
    "max_job_s": "The most seconds the A/B may take, from its start to its verdict: rounds are given to the open "
    "points, the changed impls' first (those that look slower ahead), then the cheapest to decide, only while "
    "the rounds they need fit; a point left out is not judged, and the verdict is inconclusive (exit 4), naming "
    "the rounds it would need. A round still running when the time left is the verdict's (30 s, at most a "
    "quarter of it) is stopped, its rows not merged, and the verdict is never a pass: inconclusive (exit 4), "
    "or a regression found in the rounds complete before it. Give it in CI, below the job's own timeout. "
    "Default: no limit.",
    "no_widen": "Measure the sweep as given: an impl whose code changed since the baseline (git diff, mapped by "
    "the import graph, then traced at the sweep's shapes) and that the sweep does not measure is not added, and "
    "the verdict is inconclusive (exit 4), naming it.",
    "max_widen_s": "The most seconds the impls added for changed code may take over the rounds, both sides, by "
    "the estimate (each added impl's is shown before the rounds): the ones past it are not measured, and the "
    "verdict is inconclusive (exit 4), naming them. Default: no cap.",
    "out": "The A/B folder: baseline/ and current/ run folders, each with its rounds. Default: results/ab/<UTC time>.",
}


@dataclass(frozen=True)
class Forwarded:
    """An option of another command that ab takes and passes on."""

    name: str  # its parameter name in ab_command
    original: str  # its parameter name in the other command
    flag: str  # how the other command spells it
    parameter: inspect.Parameter


def forwarded_options(command: Callable[..., Any], skip: tuple[str, ...], panel: str) -> list[Forwarded]:
    """The Typer options of ``command`` but ``skip``, as keyword parameters shown under
    ``panel`` in ``--help``."""
    hints = typing.get_type_hints(command, include_extras=True)
    options = []
    for param in inspect.signature(command).parameters.values():
        if param.name in skip:
            continue
        base, info = typing.get_args(hints[param.name])[:2]
        info = copy.copy(info)
        flag = str(info.default)  # Typer keeps an Annotated option's first name in ``default``
        info.rich_help_panel = panel
        annotated = Annotated[base, info]  # type: ignore[valid-type]
        keyword = inspect.Parameter.KEYWORD_ONLY
        parameter = inspect.Parameter(param.name, keyword, default=param.default, annotation=annotated)
        options.append(Forwarded(param.name, param.name, flag, parameter))
    return options


RUN_OPTIONS = forwarded_options(run_command, RUN_OPTIONS_NOT_FORWARDED, "Run options (each round)")
COMPARE_OPTIONS = forwarded_options(compare_command, COMPARE_ARGUMENTS, "Compare options")


def run_arguments(values: dict[str, Any]) -> list[str]:
    """The words of each round's ``linbench run`` for the run options given a value other
    than their default; paths made absolute, since a round runs in its own tree."""
    words: list[str] = []
    for option in RUN_OPTIONS:
        value = values[option.name]
        if value == option.parameter.default:
            continue
        items = value if isinstance(value, list) else [value]
        for item in items:
            words += [option.flag] if item is True else [option.flag, _word(item)]
    return words


def _word(value: Any) -> str:
    return str(value.absolute()) if isinstance(value, Path) else str(value)


def ab_command(**values: Any) -> None:
    """Measure the baseline revision and the current code in alternating rounds here, then
    compare them as linbench compare does (same table, same exit status).

    After --rounds rounds of every point, each point gets more only until its verdict is
    decided either way at the gate's error rates, the changed impls' first, then the cheapest, within --max-rounds and
    --max-job-s. Before the rounds, each impl whose code changed since the baseline (git diff,
    mapped by the import graph, then traced: one whose calls at the sweep's shapes run none of
    the changed files is not counted; docs/gate.md) is added to the points where the sweep does not
    measure it; one that cannot be (it cannot run on the device, or --no-widen) makes the
    verdict inconclusive.

    Exit status, the first that applies:
    1 regression;
    4 inconclusive: some time was not judged (a point not decided within --max-rounds or
    --max-job-s, or unverified), a changed impl was not measured, or the --max-job-s deadline
    stopped a round (round 1 included: then nothing was judged); the output names the points
    and the --rounds and --max-rounds (or --max-job-s) that would judge them, and the impls;
    3 environment changed: only with --control, when the control points all moved;
    0 pass: every point whose code may differ was judged, none regressed, and every changed impl
    was measured (a point whose impl runs the same code on both sides, no file it runs changed
    nor any file every point runs, gets the --rounds every point gets and no more, and left
    undecided it does not hold the verdict open: only the machine could move it);
    2 usage error (also a revision that refuses the sweep, or whose `linbench run --help` does
    not answer within 120 s); 130 interrupted (Ctrl-C, SIGTERM, SIGHUP: the rounds are stopped
    and the worktree removed).
    """
    from linbench.ab.job import AbJob, one_process_per_round, rounds_command, suite_file

    revision, rounds, out = values.pop("baseline"), values.pop("rounds"), values.pop("out")
    started = time.monotonic()
    max_rounds, no_widen, max_widen_s = values.pop("max_rounds"), values.pop("no_widen"), values.pop("max_widen_s")
    max_job_s = values.pop("max_job_s")
    if values.pop("baseline_impl"):
        exit_usage_error("--baseline-impl is now --against, as in linbench run (the impls measured beside)")
    compare_flags = {option.original: values[option.name] for option in COMPARE_OPTIONS}
    with usage_errors():
        _check_compare_flags(compare_flags)
        if max_widen_s is not None and not 0 <= max_widen_s < math.inf:
            raise CliUsageError(f"--max-widen-s must be a finite number, 0 or more, not {max_widen_s:g}")
        if max_job_s is not None and not 0 < max_job_s < math.inf:  # nan passed "<= 0" and stopped at once
            raise CliUsageError(f"--max-job-s must be a finite number above 0, not {max_job_s:g}")
        if max_rounds is None and rounds > 1:
            max_rounds = max(rounds, DEFAULT_MAX_ROUNDS)
        job = AbJob.prepare(revision, rounds, out, max_rounds)  # AbError, WorktreeError: one line and exit 2
        if values.get("suite") is not None:
            values["suite"] = suite_file(values["suite"])
        widened = _widen(job, values, not no_widen, max_widen_s)
        run_args = run_arguments(values) + one_process_per_round(values.get("suite"))
        command = rounds_command(values.get("suite"))
    rule = _time_rule(compare_flags, job)
    measure = Measure(
        run_args, note, command, rule, max_job_s, widened.only, started, widened.changed, widened.same_code
    )
    folders, stopped = measured(job, measure)
    line = shlex.join(["linbench", *sys.argv[1:]])
    if stopped is not None and not stopped.complete:
        nothing_judged(stopped, max_job_s, line, compare_flags)
    merged = job.merge(folders, line, widened.not_run, stopped, max_job_s)
    try:
        compare_command(baseline=merged["baseline"], current=merged["current"], changed_since=job.sha, **compare_flags)
    finally:
        note(
            f"linbench ab: baseline {revision} ({job.sha[:12]}) -> {merged['baseline']}; current -> {merged['current']}"
        )


def _time_rule(flags: dict[str, Any], job: Any) -> Any:
    """The gate's time rule as compare will apply it to the A/B (its --max-slowdown and
    --max-noise), which decides when a point needs no more rounds."""
    from linbench.cli.compare_cmd import parse_percent
    from linbench.gate.rule import TimeRule

    slowdown = parse_percent(flags.get("max_slowdown") or "5%", "--max-slowdown")
    noise = parse_percent(flags.get("max_noise") or "30%", "--max-noise")
    return TimeRule(max_slowdown=slowdown, max_noise=noise, protocol=job.protocol)


class Widened(NamedTuple):
    """What the widening leaves the rounds: the points they measure (None: all), the changed
    impls they measure ("variant:impl"), and the impls traced running none of their changed
    files (each with those files), which the merged runs record for the comparison."""

    only: set[tuple[str, ...]] | None
    changed: set[str]
    not_run: Mapping[str, tuple[str, ...]]
    # Whether an impl runs the same code on both sides: the verdict's rule, ChangedCode.same_code.
    same_code: Callable[[str], bool]


def _widen(job: Any, values: dict[str, Any], enabled: bool, max_s: float | None) -> Widened:
    """Add to the rounds' ``--variant`` each impl whose code changed since the baseline and
    that the sweep (the suite's, or the flags') does not measure, unless it cannot run on the
    sweep's device, ``enabled`` is False, or the added impls' predicted time passes ``max_s``
    (``--max-widen-s``), or, traced at the sweep's shapes, runs none of its changed code
    (ab/ran_code.py); say what was done, with each added impl's predicted time. The points
    the rounds measure are the added impls' at the sweep's shortest length only; the changed
    impls' open points go first."""
    from linbench.ab.changes import changes_since, sweep_widening, traced_widening, widened_variants
    from linbench.ab.widen_cost import added_seconds, first_points
    from linbench.cli.run_flow import sweep_request
    from linbench.gate.verdict import ChangedCode
    from linbench.sweep.suites import read_suite

    suite = read_suite(values["suite"]) if values.get("suite") is not None else {}
    variants = values.get("variant") or _as_list(suite.get("variant")) or ["all"]
    baselines = values.get("against") or _as_list(suite.get("against"))
    device = values.get("device") or str(suite.get("device", "auto"))
    widening = sweep_widening(changes_since(job.root, job.sha), variants, baselines, device, enabled)
    request = sweep_request("run", {option.name: values[option.name] for option in RUN_OPTIONS})
    if widening.measured or widening.added:
        # The changed impls' calls at the sweep's shapes, traced: one tied to the changed
        # files only by imports (a gated form the shared module dispatches to), or that enters
        # none of a changed file's changed functions, is not added.
        widening = traced_widening(widening, request, job.root, job.sha)
    if widening.added:
        widening = widening.priced({impl: added_seconds(request, impl, job.rounds) for impl in widening.added}, max_s)
    for line in widening.lines():
        note(line)
    changed = {*widening.measured, *widening.added}
    # The rule the verdict will apply: the scheduler gives no late rounds to what it will not need.
    same_code = ChangedCode(job.sha, tuple(changed), widening.changes.infrastructure).same_code
    if not widening.added:
        return Widened(None, changed, widening.not_run, same_code)
    values["variant"] = widened_variants(variants, widening.added)
    only = first_points(
        sweep_request("run", {option.name: values[option.name] for option in RUN_OPTIONS}), widening.added
    )
    if only is not None:
        note("changed code: the added impls are measured at the sweep's shortest length, where they cost least")
    return Widened(only, changed, widening.not_run, same_code)


def _as_list(value: Any) -> list[str]:
    """A suite key that takes a name or a list of names, as a list."""
    if value is None:
        return []
    return [str(item) for item in value] if isinstance(value, list) else [str(value)]


def _check_compare_flags(flags: dict[str, Any]) -> None:
    """The compare options linbench compare checks with public parsers, checked before any
    round runs (a typo found after an hour of rounds would waste it); compare checks them
    all again, and any others, when it runs."""
    from linbench.cli.common import output_format
    from linbench.cli.compare_cmd import parse_bytes, parse_exponents, parse_percent, parse_positive
    from linbench.gate.drift import check_control_names

    for name in ("max_slowdown", "max_memory_growth", "max_noise", "max_launch_growth"):
        if flags.get(name) is not None:
            parse_percent(flags[name], "--" + name.replace("_", "-"))
    if flags.get("noise_z") is not None:
        parse_positive(flags["noise_z"], "--noise-z")
    check_control_names(flags.get("control") or [])
    if flags.get("memory_floor") is not None:
        parse_bytes(flags["memory_floor"])
    parse_exponents(flags.get("max_exponent") or [])
    output_format(flags.get("output_format_flag") or "table", bool(flags.get("as_json")))


_OWN = [
    inspect.Parameter(
        "baseline",
        inspect.Parameter.KEYWORD_ONLY,
        annotation=Annotated[str, typer.Option("--baseline", help=HELP["baseline"], show_default=False)],
    ),
    inspect.Parameter(
        "rounds",
        inspect.Parameter.KEYWORD_ONLY,
        default=DEFAULT_ROUNDS,
        annotation=Annotated[int, typer.Option("--rounds", help=HELP["rounds"])],
    ),
    inspect.Parameter(
        "max_rounds",
        inspect.Parameter.KEYWORD_ONLY,
        default=None,
        annotation=Annotated[int | None, typer.Option("--max-rounds", help=HELP["max_rounds"], show_default=False)],
    ),
    inspect.Parameter(
        "no_widen",
        inspect.Parameter.KEYWORD_ONLY,
        default=False,
        annotation=Annotated[bool, typer.Option("--no-widen", help=HELP["no_widen"])],
    ),
    inspect.Parameter(
        "max_widen_s",
        inspect.Parameter.KEYWORD_ONLY,
        default=None,
        annotation=Annotated[float | None, typer.Option("--max-widen-s", help=HELP["max_widen_s"], show_default=False)],
    ),
    inspect.Parameter(
        "max_job_s",
        inspect.Parameter.KEYWORD_ONLY,
        default=None,
        annotation=Annotated[float | None, typer.Option("--max-job-s", help=HELP["max_job_s"], show_default=False)],
    ),
    inspect.Parameter(
        "out",
        inspect.Parameter.KEYWORD_ONLY,
        default=None,
        annotation=Annotated[Path | None, typer.Option("--out", help=HELP["out"])],
    ),
    # ab's old spelling of run's --against, hidden, refused naming it.
    inspect.Parameter(
        "baseline_impl",
        inspect.Parameter.KEYWORD_ONLY,
        default=None,
        annotation=Annotated[list[str] | None, typer.Option("--baseline-impl", hidden=True)],
    ),
]
_PARAMETERS = [*_OWN, *(o.parameter for o in RUN_OPTIONS), *(o.parameter for o in COMPARE_OPTIONS)]
# Typer reads a command's options from its signature and type hints: ab's are its own, run's and compare's.
ab_command.__signature__ = inspect.Signature(_PARAMETERS)  # type: ignore[attr-defined]
ab_command.__annotations__ = {p.name: p.annotation for p in _PARAMETERS} | {"return": None}
