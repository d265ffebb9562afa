"""The job of ``linbench ab``: the baseline revision checked out beside the current code, both
measured in alternating rounds, and each side's rounds merged into one run folder.

The command (cli/ab_cmd.py) parses the options, calls this job and prints; the job decides and
measures. It reports progress as lines through a callback and stops with a library error whose
message is one line: AbError or WorktreeError (ValueErrors) for an A/B that cannot start,
RoundError for a round that did not measure (or a side whose ``--help`` does not answer).
DeadlineError, once the baseline's worktree is removed, for rounds the ``--max-job-s``
deadline stopped (ab/deadline.py): it carries the rounds that were complete, which ``merge``
merges with the stop recorded, so the verdict on them is never a pass. A Ctrl-C reaches the
caller once the baseline's worktree is removed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from linbench.ab.deadline import Deadline, DeadlineError
from linbench.ab.merge import merge_rounds
from linbench.ab.round_lines import deferred_line, open_lines
from linbench.ab.rounds import (
    ONLY_POINTS,
    PROCESS_FLAGS,
    SIDES,
    Folders,
    RoundResult,
    Side,
    run_help,
    run_rounds,
    side_env,
)
from linbench.ab.sequential import Scheduler, checks_seconds, points_seconds
from linbench.ab.spelling import knows_against, old_spelling
from linbench.ab.worktree import checkout_root, detached_worktree, resolve_revision
from linbench.gate.rule import TimeRule
from linbench.gate.verdict import STOPPED  # what the --max-job-s deadline stopped (Stopped)
from linbench.machine.facts import git_sha
from linbench.results.point_list import Key
from linbench.results.protocol import ProcessProtocol
from linbench.results.store import utc_stamp
from linbench.sweep.suites import find_suite, read_suite, suite_command

Progress = Callable[[str], None]
# meta.json's ab section: the impls traced running none of their changed code (ab/ran_code.py).
NOT_RUN = "not_run"
NO_CHECK = "--no-check"  # run's: measure without the correctness check (round 1 checked every point)


class AbError(ValueError):
    """An A/B that cannot start as asked (no rounds, an --out folder that holds an A/B)."""


@dataclass(frozen=True)
class AbJob:
    """One A/B: the revision against the code in ``root``, ``rounds`` rounds (more, up to
    ``max_rounds``, while a point's rounds disagree), into ``out_dir``."""

    root: Path  # the checkout linbench runs from: the current side
    revision: str  # as the user named it
    sha: str  # what it resolved to
    rounds: int
    out_dir: Path  # absolute: the rounds run elsewhere
    max_rounds: int | None = None  # None: rounds, no more

    @classmethod
    def prepare(cls, revision: str, rounds: int, out: Path | None, max_rounds: int | None = None) -> AbJob:
        """The A/B of ``revision`` in ``rounds`` rounds (up to ``max_rounds``), into ``out``
        (None: results/ab/<UTC time>); AbError or WorktreeError for one that cannot be done,
        before anything is made."""
        if rounds < 1:
            raise AbError(f"--rounds {rounds}: give at least 1")
        if max_rounds is not None and max_rounds < rounds:
            raise AbError(f"--max-rounds {max_rounds} is fewer than --rounds {rounds}")
        most = ProcessProtocol.of(rounds, max_rounds).most  # as run's --max-processes: 20 for several
        out_dir = ab_folder(out)
        root = checkout_root()
        return cls(root, revision, resolve_revision(root, revision), rounds, out_dir, most)

    @property
    def protocol(self) -> ProcessProtocol:
        """The repeated-process protocol of the rounds: a round is a process of every point."""
        return ProcessProtocol.rounds(self.rounds, self.max_rounds)

    def measure(
        self,
        run_args: Sequence[str],
        on_progress: Progress,
        command: str = "run",
        rule: TimeRule | None = None,
        budget_s: float | None = None,
        only: set[Key] | None = None,
        started: float | None = None,
        changed: Collection[str] = (),
        same_code: Callable[[str], bool] | None = None,
    ) -> Folders:
        """Every round, the baseline in a worktree of ``sha`` that is gone when this returns;
        each side's round run folders, in round order. After ``rounds`` rounds, another while a
        point's verdict is still open by ``rule`` (the gate's; gate/sequential.py), up to
        ``max_rounds``, each of the open points only (where the baseline's ``linbench run``
        takes ``--only-points``), in several processes each where a round of them would be
        mostly start-up (and the baseline takes ``--processes``), cheapest to decide first while
        the job's projected end stays
        within ``budget_s`` seconds from ``started`` (time.monotonic(); None: now; ab/sequential.py),
        and no round (nor the baseline's ``--help``) running past its deadline (ab/deadline.py:
        DeadlineError).
        ``command``: what each round runs, ``run`` or ``decode`` (a decode suite's rounds);
        ``only``: the points of the sweep its rounds measure (widen_cost.first_points; None: all);
        ``changed``: the impls whose code changed ("variant:impl"), whose open points go first;
        ``same_code``: whether an impl runs the same code on both sides (gate/verdict.py's
        ChangedCode.same_code; None: any may differ), whose points get no rounds past ``rounds``."""
        protocol = self.protocol
        rule = rule if rule is not None else TimeRule(protocol=protocol)
        since = time.monotonic() if started is None else started
        scheduler = Scheduler(rule, budget_s, since, first=frozenset(changed), same_code=same_code)
        deadline = Deadline.of(since, budget_s)
        what = f"{self.revision} ({self.sha[:12]}) against the code in {self.root}"
        more = f" (more, up to {protocol.most}, for points not yet decided)" if protocol.most > protocol.wanted else ""
        on_progress(f"linbench ab: {what}, {protocol.wanted} rounds{more} -> {self.out_dir}")

        deferred: set[Key] = set()

        def each_round(index: int, results: list[RoundResult]) -> None:
            scheduler.round_done(
                [r.seconds for r in results],
                [points_seconds(r.folder) for r in results],
                [checks_seconds(r.folder) for r in results],
            )
            line = f"round {index}/{protocol.wanted if index <= protocol.wanted else protocol.most}: "
            on_progress(line + "; ".join(result.summary() for result in results))
            if index == 1 and protocol.wanted > 1 and narrow:
                deferred.update(scheduler.outsized({r.side: [r.folder] for r in results}))
                if deferred:
                    on_progress(deferred_line(deferred, protocol.min_to_judge, budget_s))

        with detached_worktree(self.root, self.sha) as tree:
            # A revision from before run's --baseline became --against is given the old words.
            knows = knows_against(tree, side_env(tree), deadline)
            spelt = None if knows else partial(old_spelling, out_dir=self.out_dir)
            sides = {"baseline": Side("baseline", tree, command, spelt), "current": Side("current", self.root, command)}
            # The current side is this code, whose run takes --only-points and --no-check; only
            # the baseline is asked. decode takes neither: its rounds measure and check every point.
            helped = run_help(sides["baseline"], deadline) if command == "run" else ""
            narrow = ONLY_POINTS in helped
            later = [NO_CHECK] if NO_CHECK in helped else []
            # Several processes a point in a late round need the baseline to take both flags.
            scheduler.several = narrow and all(flag in helped for flag in PROCESS_FLAGS)

            def affordable() -> bool:
                fits = scheduler.round_fits()
                if not fits:
                    last = scheduler.rounds_s[-1]
                    on_progress(
                        f"another round of every point (about {last:.0f} s) would pass --max-job-s {budget_s:g}: "
                        f"the rounds stop here, and a point with fewer than {protocol.min_to_judge} is not judged"
                    )
                return fits

            def another(folders: Folders) -> set[Key]:
                needed = scheduler.next_points(folders)
                for line in open_lines(scheduler, needed, narrow, budget_s):
                    on_progress(line)
                return needed

            return run_rounds(
                sides, protocol.wanted, run_args, self.out_dir, each_round, protocol.most, another, narrow, later, only,
                affordable, lambda: scheduler.per_round, lambda: deferred, deadline,
            )  # fmt: skip

    def merge(
        self,
        folders: Mapping[str, Sequence[Path]],
        command: str,
        not_run: Mapping[str, Sequence[str]] | None = None,
        stopped: DeadlineError | None = None,
        budget_s: float | None = None,
    ) -> dict[str, Path]:
        """Each side's rounds as one run folder, out_dir/<side>, whose meta.json records the
        rounds as the repeated-process protocol, both revisions and ``command``, and
        ``not_run``: the impls the import graph ties to changed files that, traced at the
        sweep's shapes, ran none of their changed code (each with those files; ab/ran_code.py), which the
        comparison does not count as changed (gate/verdict.py's ChangedCode), and ``stopped``:
        what the ``budget_s`` deadline stopped, whose rounds ``folders`` leaves out (the
        comparison is then never a pass: gate/verdict.py's Stopped)."""
        revisions = {"baseline": {"revision": self.revision, "sha": self.sha}, "current": {"sha": git_sha()}}
        protocol = self.protocol.meta()
        traced = {impl: list(files) for impl, files in (not_run or {}).items()}
        merged = {}
        for side, paths in folders.items():
            ab = {"side": side, "rounds": len(paths), "order": "ABBA", "revisions": revisions, NOT_RUN: traced}
            if stopped is not None:
                ab[STOPPED] = stopped_section(stopped, budget_s)
            sections = {"timing_protocol": protocol, "ab": ab, "command": command}
            merged[side] = merge_rounds(paths, self.out_dir / side, sections).path
        return merged


def stopped_section(stopped: DeadlineError, budget_s: float | None) -> dict[str, object]:
    """meta.json's record of what the deadline stopped (gate/verdict.py's Stopped reads it)."""
    return {"what": stopped.what, "round": stopped.index, "rounds": stopped.complete, "max_job_s": budget_s}


def ab_folder(out: Path | None) -> Path:
    """The A/B folder (absolute: the rounds run elsewhere); AbError when it holds an A/B."""
    path = (out if out is not None else Path("results") / "ab" / utc_stamp()).absolute()
    taken = [side for side in SIDES if (path / side).exists()]
    if taken:
        raise AbError(f"--out {path} already holds {' and '.join(taken)}/; give another folder")
    return path


def rounds_command(suite: Path | None) -> str:
    """What each round runs: the suite's command (``decode`` for a decode suite), else ``run``."""
    return "run" if suite is None else suite_command(suite, read_suite(suite))


def suite_file(suite: Path) -> Path:
    """The suite file ``--suite`` names, found from here as ``linbench run`` finds it (a path,
    or a bare name such as ci-gpu): both sides then run this one file, the same workload."""
    return find_suite(suite).absolute()


def one_process_per_round(suite: Path | None) -> list[str]:
    """``--processes 1 --max-processes 1`` when ``suite`` asks for several processes per
    point (a gate suite does): a round measures each point once, the rounds are its processes.
    Given only then, so a revision from before those flags never sees them: it could not have
    read such a suite either."""
    if suite is None or not {"processes", "max_processes"} & read_suite(suite).keys():
        return []
    return ["--processes", "1", "--max-processes", "1"]
