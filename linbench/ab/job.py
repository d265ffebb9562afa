"""The job of ``linbench ab``: the baseline revision checked out beside the current code, both
measured in alternating rounds, and each side's rounds merged into one run folder.

The command (cli/ab_cmd.py) parses the options, calls this job and prints; the job decides and
measures. It reports progress as lines through a callback and stops with a library error whose
message is one line: AbError or WorktreeError (ValueErrors) for an A/B that cannot start,
RoundError for a round that did not measure. A Ctrl-C reaches the caller once the baseline's
worktree is removed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from linbench.ab.merge import merge_rounds
from linbench.ab.rounds import SIDES, RoundResult, Side, run_rounds
from linbench.ab.worktree import checkout_root, detached_worktree, resolve_revision
from linbench.machine.facts import git_sha
from linbench.results.protocol import ProcessProtocol
from linbench.results.store import utc_stamp
from linbench.sweep.spec import find_suite, read_suite

Progress = Callable[[str], None]


class AbError(ValueError):
    """An A/B that cannot start as asked (no rounds, an --out folder that holds an A/B)."""


@dataclass(frozen=True)
class AbJob:
    """One A/B: the revision against the code in ``root``, ``rounds`` rounds, into ``out_dir``."""

    root: Path  # the checkout linbench runs from: the current side
    revision: str  # as the user named it
    sha: str  # what it resolved to
    rounds: int
    out_dir: Path  # absolute: the rounds run elsewhere

    @classmethod
    def prepare(cls, revision: str, rounds: int, out: Path | None) -> AbJob:
        """The A/B of ``revision`` in ``rounds`` rounds, into ``out`` (None: results/ab/<UTC
        time>); AbError or WorktreeError for one that cannot be done, before anything is made."""
        if rounds < 1:
            raise AbError(f"--rounds {rounds}: give at least 1")
        out_dir = ab_folder(out)
        root = checkout_root()
        return cls(root, revision, resolve_revision(root, revision), rounds, out_dir)

    def measure(self, run_args: Sequence[str], on_progress: Progress) -> dict[str, list[Path]]:
        """Every round, the baseline in a worktree of ``sha`` that is gone when this returns;
        each side's round run folders, in round order."""
        rounds = self.rounds
        what = f"{self.revision} ({self.sha[:12]}) against the code in {self.root}"
        on_progress(f"linbench ab: {what}, {rounds} rounds -> {self.out_dir}")

        def each_round(index: int, results: list[RoundResult]) -> None:
            on_progress(f"round {index}/{rounds}: " + "; ".join(result.summary() for result in results))

        with detached_worktree(self.root, self.sha) as tree:
            sides = {"baseline": Side("baseline", tree), "current": Side("current", self.root)}
            return run_rounds(sides, rounds, run_args, self.out_dir, each_round)

    def merge(self, folders: Mapping[str, Sequence[Path]], command: str) -> dict[str, Path]:
        """Each side's rounds as one run folder, out_dir/<side>, whose meta.json records the
        rounds as the repeated-process protocol, both revisions and ``command``."""
        revisions = {"baseline": {"revision": self.revision, "sha": self.sha}, "current": {"sha": git_sha()}}
        protocol = ProcessProtocol.rounds(self.rounds).meta()
        merged = {}
        for side, paths in folders.items():
            ab = {"side": side, "rounds": self.rounds, "order": "ABBA", "revisions": revisions}
            sections = {"timing_protocol": protocol, "ab": ab, "command": command}
            merged[side] = merge_rounds(paths, self.out_dir / side, sections).path
        return merged


def ab_folder(out: Path | None) -> Path:
    """The A/B folder (absolute: the rounds run elsewhere); AbError when it holds an A/B."""
    path = (out if out is not None else Path("results") / "ab" / utc_stamp()).absolute()
    taken = [side for side in SIDES if (path / side).exists()]
    if taken:
        raise AbError(f"--out {path} already holds {' and '.join(taken)}/; give another folder")
    return path


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
