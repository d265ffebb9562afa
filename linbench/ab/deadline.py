"""The hard end of an A/B's rounds: with ``--max-job-s S``, no process ab starts runs past the
job's start + S, less the time its verdict needs.

The budget (ab/sequential.py) plans the rounds from what the rounds so far cost, and a round
can still overrun its estimate (a compile, a neighbour, a hung worker), round 1 with nothing to
estimate from. So the deadline is enforced too: from ``at`` (the job's start + S less the
closing time, CLOSING_S, at most CLOSING_SHARE of S: when the planned rounds end) the round
still running is stopped as a Ctrl-C stops ``linbench run``, and ``grace_s`` later whatever its
process group still holds is killed; the rest of the closing time is the merge and the verdict
on the rounds that were complete. A round stopped so is never merged (ab/job.py), and the
verdict is at best INCONCLUSIVE (gate/verdict.py's Stopped).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from linbench.ab.round_server import STOP_GRACE_S
from linbench.ab.sequential import CLOSING_S

# The closing time never takes more than this share of a short budget (a test's 2 s).
CLOSING_SHARE = 0.25
# The share of the closing time a stopped round gets to end its workers (STOP_GRACE_S at most).
GRACE_SHARE = 1 / 3


@dataclass(frozen=True)
class Deadline:
    """When the rounds' processes are stopped (``at``, time.monotonic()), how long a stopped
    round gets before its group is killed, and the ``--max-job-s`` it comes from."""

    at: float
    grace_s: float
    budget_s: float

    @classmethod
    def of(cls, started: float, budget_s: float | None) -> Deadline | None:
        """The deadline of a job started at ``started`` with ``budget_s`` (None: none)."""
        if budget_s is None:
            return None
        closing = min(CLOSING_S, CLOSING_SHARE * budget_s)
        return cls(started + budget_s - closing, min(STOP_GRACE_S, GRACE_SHARE * closing), budget_s)

    def left(self) -> float:
        """Seconds until ``at`` (0 once it has passed)."""
        return max(self.at - time.monotonic(), 0.0)

    def passed(self) -> bool:
        return self.left() <= 0.0


class DeadlineError(RuntimeError):
    """The deadline stopped ``what`` (a side's round ``index``, or a probe before round 1);
    ``folders``: each side's rounds that were complete before it, round 1 first."""

    def __init__(self, what: str, index: int, folders: Mapping[str, Sequence[Path]] | None = None) -> None:
        super().__init__(f"the --max-job-s deadline stopped {what}")
        self.what = what
        self.index = index
        self.folders = {side: list(paths) for side, paths in (folders or {}).items()}

    def with_rounds(self, folders: Mapping[str, Sequence[Path]]) -> DeadlineError:
        """The same stop, with the complete rounds before it."""
        return DeadlineError(self.what, self.index, folders)

    @property
    def complete(self) -> int:
        """The rounds both sides completed before the stop."""
        return min((len(paths) for paths in self.folders.values()), default=0)
