"""What a comparison says as a whole: pass, regression, inconclusive or environment changed.

A gate that passes must have judged what it was given. A point whose time could not be judged
(``noisy``: its processes disagree too much; ``unverified``: too few of them) did not pass, and
neither did a pair of runs that measured different things (a cosine run against a plugin run), a
current run without a point the baseline measured, a count or memory reading recorded on one side
only, or a comparison whose every point failed on both sides (nothing judged): each makes the
comparison *inconclusive*, which is not a pass. A regression still wins (it was
found on what could be judged); the environment check (drift.py) comes after inconclusive,
since control points that could not all be judged cannot clear the machine either. The exit
status each verdict maps to is the command's (cli/compare_cmd.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

PASS = "pass"
REGRESSION = "regression"
INCONCLUSIVE = "inconclusive"
ENVIRONMENT_CHANGED = "environment changed"
# First that applies.
VERDICTS = (REGRESSION, INCONCLUSIVE, ENVIRONMENT_CHANGED, PASS)


@dataclass(frozen=True)
class Coverage:
    """How far two runs measured the same things: their points, and their impls
    (``variant:impl``) as each run's results list them."""

    matched: int
    baseline_only: int
    current_only: int
    baseline_impls: frozenset[str]
    current_impls: frozenset[str]

    @classmethod
    def of(
        cls, matched: int, baseline_only: int, current_only: int, base_impls: Iterable[str], cur_impls: Iterable[str]
    ) -> Coverage:
        return cls(matched, baseline_only, current_only, frozenset(base_impls), frozenset(cur_impls))

    @property
    def unmatched(self) -> int:
        return self.baseline_only + self.current_only

    @property
    def mostly_unmatched(self) -> bool:
        """More points in one run only than in both: not two runs of one sweep."""
        return self.unmatched > self.matched

    @property
    def impls_differ(self) -> bool:
        return self.baseline_impls != self.current_impls

    @property
    def mismatched(self) -> bool:
        """The runs did not measure the same things, or the current run left out points the
        baseline measured (an interrupted run, a torn row): their comparison cannot pass."""
        return self.mostly_unmatched or self.impls_differ or self.baseline_only > 0

    def reasons(self) -> list[str]:
        """Why the runs do not match, one line each (none when they do)."""
        lines = []
        if self.impls_differ:
            only_base = ", ".join(sorted(self.baseline_impls - self.current_impls)) or "none"
            only_cur = ", ".join(sorted(self.current_impls - self.baseline_impls)) or "none"
            lines.append(
                f"the runs measured different impls (only in the baseline: {only_base}; only in current: {only_cur})"
            )
        if self.mostly_unmatched:
            total = self.matched + self.unmatched
            lines.append(f"{self.unmatched} of {total} points are in one run only: the runs are not of one sweep")
        elif self.baseline_only and not self.impls_differ:  # else the impls' line says it
            lines.append(
                f"{self.baseline_only} point(s) of the baseline have no row in the current run, so they were not "
                "judged (an interrupted run: finish it with linbench run --resume; a sweep that no longer measures "
                "them: record the baseline again)"
            )
        return lines


# The key of an A/B's merged meta.json ``ab`` section that records what its deadline stopped
# (ab/job.py writes it, Stopped.of reads it): here, so that compare reads it without ab's imports.
STOPPED = "stopped"


@dataclass(frozen=True)
class Stopped:
    """An A/B whose ``--max-job-s`` deadline stopped ``what`` (a side's round ``round``, or its
    baseline's ``--help`` before round 1) before it ended (ab/deadline.py): the runs hold the
    ``rounds`` rounds complete before it, none of the stopped one. Such a comparison is never a
    pass: the points that round was to measure were still undecided."""

    what: str
    round: int
    rounds: int
    max_job_s: float | None

    @classmethod
    def of(cls, section: Any) -> Stopped | None:
        """The record an A/B's merged meta.json keeps (ab/job.py's stopped_section); None for none."""
        if not isinstance(section, Mapping):
            return None
        budget = section.get("max_job_s")
        budget = float(budget) if isinstance(budget, (int, float)) else None
        return cls(str(section.get("what")), int(section.get("round") or 0), int(section.get("rounds") or 0), budget)

    def line(self) -> str:
        """What the deadline stopped and what was judged, one line."""
        budget = f"--max-job-s {self.max_job_s:g}" if self.max_job_s is not None else "--max-job-s"
        if not self.rounds:
            return f"the {budget} deadline stopped {self.what}: no round was complete, so nothing was judged"
        return (
            f"the {budget} deadline stopped {self.what}: judged on the {self.rounds} round(s) complete before it "
            "(the stopped round's rows are not merged); the points it was to measure are not judged"
        )


@dataclass(frozen=True)
class ChangedCode:
    """The code that changed since ``revision`` (ab/changes.py): ``impls`` whose own code
    changed, and ``infrastructure``, changed files that widen nothing (no impl runs them, or
    most variants' impls do), which every measured point runs."""

    revision: str
    impls: tuple[str, ...]
    infrastructure: tuple[str, ...] = ()
    # Impls the import graph ties to changed files that, traced at the measured shapes, ran
    # none of their changed code (ab/ran_code.py): not counted as changed.
    not_run: tuple[str, ...] = ()
    # Changed files whose code is the same (comments, docstrings, layout; ab/code_diff.py).
    unchanged: tuple[str, ...] = ()

    def same_code(self, impl: str) -> bool:
        """Whether ``impl`` ("variant:impl") runs the same code on both sides: it is not among
        the changed impls, and no changed file is one every point runs (``infrastructure``).
        Its points can only move with the machine: one left undecided does not hold the
        verdict open (a decided regression there still fails)."""
        return not self.infrastructure and impl not in self.impls

    def unmeasured(self, coverage: Coverage) -> tuple[str, ...]:
        """The changed impls neither run measured: a comparison without them cannot pass."""
        measured = coverage.baseline_impls | coverage.current_impls
        return tuple(name for name in self.impls if name not in measured)

    def lines(self, coverage: Coverage) -> list[str]:
        """What the comparison says of the changed code, one line each."""
        lines = []
        missing = self.unmeasured(coverage)
        if missing:
            lines.append(
                f"{len(missing)} changed impl(s) since {self.revision} were measured by neither run: "
                f"{', '.join(missing)} (their code changed; a pass needs them measured)"
            )
        measured = [name for name in self.impls if name not in missing]
        if measured:
            lines.append(f"changed impl(s) since {self.revision} measured: {', '.join(measured)}")
        if self.not_run:
            lines.append(
                f"{len(self.not_run)} impl(s) tied to the changed files by imports ran none of their changed "
                "code at the measured shapes (traced by function), and are not counted as changed: "
                f"{', '.join(self.not_run)}"
            )
        if self.unchanged:
            lines.append(
                f"{len(self.unchanged)} changed file(s) hold the same code (comments, docstrings or layout only) "
                f"and change no impl: {', '.join(self.unchanged)}"
            )
        if self.infrastructure:
            files = ", ".join(self.infrastructure)
            lines.append(
                f"{len(self.infrastructure)} changed file(s) that no impl runs, or that most variants' impls run, "
                f"widen nothing (the points measured are what measure them): {files}"
            )
        return lines

    def to_json(self, coverage: Coverage) -> dict[str, object]:
        return {
            "revision": self.revision,
            "impls": list(self.impls),
            "unmeasured": list(self.unmeasured(coverage)),
            "not_run": list(self.not_run),
            "unchanged": list(self.unchanged),
            "infrastructure": list(self.infrastructure),
        }
