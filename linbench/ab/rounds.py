"""Rounds of an A/B: ``linbench run`` in the baseline's tree and in the current one, alternated.

Each side runs as its own ``python -m linbench run`` with its tree as working folder and first
on PYTHONPATH, so the baseline measures with its own code (and builds its kernel library from
its own sources). Rounds go in ABBA order, baseline first in odd rounds and current first in
even ones, so a drift of the machine over the job (warming up, a neighbour starting) falls on
both sides alike instead of on whichever side always runs second. Each round measures every
point in one fresh process; the merge (merge.py) makes the rounds a point's processes. After
the rounds asked for, more follow while the caller says a point needs them (job.py asks the
repeated-process protocol, as the runner does for a run's processes), up to a most. Such a
round measures only the points that need it (``linbench run --only-points``) where the
baseline revision can be told so (the current one is this code): on a busy CPU one spread
point would otherwise keep every point going, and a round of one point costs a fraction of a
round of all of them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from linbench.results.point_list import write_point_list
from linbench.results.record import Key
from linbench.results.store import RunStore, RunStoreError

SIDES = ("baseline", "current")
# `linbench run` exits 1 when a point failed (mismatch, error, crashed): the round measured,
# and the failure goes into the merge. Exit 2 is a refusal (an unknown flag, a bad suite).
MEASURED_EXITS = (0, 1)
USAGE_EXIT = 2
ERROR_PREFIX = "linbench: error: "


class RoundError(RuntimeError):
    """A round that did not measure; the message is one line naming the side and round."""


@dataclass(frozen=True)
class Side:
    """One side of the A/B: its name, the tree its code runs from, the command its rounds run
    (``run``, or ``decode`` for a decode suite), and the flags as its code spells them where that
    differs (``words``: a revision from before a rename)."""

    name: str
    tree: Path
    command: str = "run"
    words: Callable[[Sequence[str]], list[str]] | None = None


@dataclass(frozen=True)
class RoundResult:
    """One side's run in one round."""

    side: str
    round: int  # 1-based
    folder: Path
    seconds: float
    statuses: dict[str, int]

    def summary(self) -> str:
        counts = ", ".join(f"{n} {status}" for status, n in sorted(self.statuses.items()))
        return f"{self.side} {counts or 'no points'} in {self.seconds:.0f} s"


def round_order(round_index: int) -> tuple[str, str]:
    """The sides of round ``round_index`` (1-based) in the order they run: ABBA."""
    return SIDES if round_index % 2 else SIDES[::-1]


def rounds_dir(out_dir: Path, side: str) -> Path:
    """Where ``side``'s round run folders go."""
    return out_dir / side / "rounds"


Folders = dict[str, list[Path]]
ONLY_POINTS = "--only-points"


def run_rounds(
    sides: dict[str, Side],
    rounds: int,
    run_args: Sequence[str],
    out_dir: Path,
    on_round: Callable[[int, list[RoundResult]], None] = lambda index, results: None,
    most: int | None = None,
    another: Callable[[Folders], Collection[Key]] = lambda folders: (),
    narrow: bool = False,
) -> Folders:
    """Run ``rounds`` rounds, then more, up to ``most`` (default: ``rounds``), while
    ``another`` names points (record.row_key's) that the round folders so far leave needing
    one; each side's round run folders, in round order. With ``narrow``, those rounds measure
    only the points named. ``on_round`` hears each finished round. RoundError stops at the
    first round that did not measure."""
    folders: Folders = {name: [] for name in sides}
    index = 0
    while index < rounds or (index < (most or rounds) and (needed := another(folders))):
        index += 1
        args = list(run_args)
        if index > rounds and narrow:
            args += [ONLY_POINTS, str(write_point_list(out_dir / f"round-{index}-points.csv", needed))]
        results = [run_one(sides[name], index, args, out_dir) for name in round_order(index)]
        for result in results:
            folders[result.side].append(result.folder)
        on_round(index, results)
    return folders


def run_one(side: Side, index: int, run_args: Sequence[str], out_dir: Path) -> RoundResult:
    """``linbench run RUN_ARGS --quiet --yes --out <side>/rounds`` in ``side``'s tree; its
    output goes to ``round-<index>.log`` beside the run folders."""
    where = rounds_dir(out_dir, side.name)
    where.mkdir(parents=True, exist_ok=True)
    before = set(where.iterdir())
    log = where / f"round-{index}.log"
    args = side.words(run_args) if side.words is not None else list(run_args)
    argv = [sys.executable, "-m", "linbench", side.command, *args, "--quiet", "--yes", "--out", str(where)]
    started = time.perf_counter()
    with log.open("w") as handle:
        code = subprocess.run(
            argv, cwd=side.tree, env=side_env(side.tree), stdout=handle, stderr=subprocess.STDOUT
        ).returncode
    seconds = time.perf_counter() - started
    made = sorted(p for p in where.iterdir() if p not in before and p.is_dir())
    folder = _measured_folder(side, index, code, made, log)
    statuses = Counter(row["status"] for row in RunStore(folder).rows())
    return RoundResult(side.name, index, folder, seconds, dict(statuses))


def can_narrow(side: Side) -> bool:
    """Whether ``side``'s ``linbench run`` takes ``--only-points`` (a revision from before it
    does not): its help, asked once, names the flag."""
    env = side_env(side.tree) | {"COLUMNS": "200", "NO_COLOR": "1"}
    argv = [sys.executable, "-m", "linbench", side.command, "--help"]
    found = subprocess.run(argv, cwd=side.tree, env=env, capture_output=True, text=True)
    return found.returncode == 0 and ONLY_POINTS in found.stdout


def side_env(tree: Path) -> dict[str, str]:
    """This process's environment with ``tree`` first on PYTHONPATH, so ``import linbench``
    finds that tree's package before any other (an editable install included)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(tree), env.get("PYTHONPATH", "")) if p)
    return env


def _measured_folder(side: Side, index: int, code: int, made: list[Path], log: Path) -> Path:
    """The run folder the round made; RoundError when the round refused, crashed or made none."""
    where = f"the {side.name} side's round {index}"
    if code == USAGE_EXIT:
        raise RoundError(f"{where} refused the run: {_error_line(log)} (its log: {log})")
    if code not in MEASURED_EXITS or len(made) != 1:
        raise RoundError(f"{where} failed (exit {code}): {_last_line(log)} (its log: {log})")
    store = RunStore(made[0])
    try:
        status = store.read_meta().get("status") if store.results_path.is_file() else None
    except RunStoreError as exc:
        raise RoundError(f"{where} left no readable run: {exc} (its log: {log})") from None
    if status != "complete":
        raise RoundError(f"{where} did not finish its run (status {status!r}; its log: {log})")
    return store.path


def _error_line(log: Path) -> str:
    """The child's ``linbench: error:`` message, without the prefix (else its last line)."""
    lines = _lines(log)
    errors = [line.removeprefix(ERROR_PREFIX) for line in lines if line.startswith(ERROR_PREFIX)]
    return errors[-1] if errors else _last_line(log)


def _last_line(log: Path) -> str:
    lines = _lines(log)
    return lines[-1] if lines else "no output"


def _lines(log: Path) -> list[str]:
    try:
        return [line.strip() for line in log.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return []
