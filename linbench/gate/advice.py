"""What an inconclusive comparison needs: the points it could not judge, and the command that
would judge them.

A point is ``unverified`` when a side has fewer processes than the protocol judges with, and
``noisy`` when its processes disagree more than the protocol trusts from so few, or so much
that the change asked about drowns in them. Both need more processes per point: at least
the gate's 5, and, for a noisy point, as many as its measured spread needs for the noise
threshold to fall to ``--max-noise`` (rule.processes_to_judge). The command is the one the run
recorded in meta.json with those counts put in: ``--processes``/``--max-processes`` for
``linbench run`` (both runs must be measured again: the baseline at its own commit), and
``--rounds``/``--max-rounds`` for ``linbench ab``. A run made in ``--shard K/N`` parts is
measured again in every part, into a new ``--out`` folder, then merged (``rerun_commands``).
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass
from pathlib import Path

from linbench.gate.compare import Comparison
from linbench.gate.points import Thresholds
from linbench.gate.render import point_label
from linbench.gate.rule import OTHER_THREADS, OVERSUBSCRIBED, processes_to_judge
from linbench.gate.verdict import Stopped
from linbench.results.protocol import GATE_PROCESSES

# Flags that take a value and are replaced (or dropped) in a command given again.
RUN_COUNTS = ("--processes", "--max-processes")
AB_COUNTS = ("--rounds", "--max-rounds")
DROPPED = {"run": ("--resume",), "ab": ("--out",)}
DROPPED_SWITCHES = ("--dry-run",)
SHOWN_POINTS = 12
# Past this many processes per point (or the most the runs already allowed, where that is more:
# suites/gate-cpu.toml allows 100), more will not settle a point in reasonable time: the
# machine must get quieter (a dedicated runner, one thread per worker) instead.
MOST_WORTH_ASKING = 60


@dataclass(frozen=True)
class Rerun:
    """How many processes (or rounds) per point would judge what could not be."""

    first: int  # --processes / --rounds
    most: int  # --max-processes / --max-rounds
    beyond: int = 0  # points that would need more than ``worth``
    worth: int = MOST_WORTH_ASKING  # the most worth asking for here

    def flags(self, ab: bool) -> list[str]:
        first, most = AB_COUNTS if ab else RUN_COUNTS
        return [first, str(self.first), most, str(self.most)]


def rerun_of(comparison: Comparison, thresholds: Thresholds) -> Rerun:
    """The processes per point that would judge every unjudged point of ``comparison``."""
    rule = thresholds.time_rule(comparison.protocol)
    protocol = comparison.protocol
    needed = [processes_to_judge(p.spread, rule, p.ratio) for p in comparison.unjudged]
    if protocol.sequential:  # measured until decided: the rounds each point's spread and ratio need
        first = protocol.min_to_judge
        most = max([first, protocol.wanted, *needed])
    else:
        first = max(GATE_PROCESSES, protocol.min_to_judge)
        most = max([first, protocol.trust_processes, *needed])
    worth = max(MOST_WORTH_ASKING, protocol.trust_processes, protocol.most)
    return Rerun(first, min(most, worth), sum(n > worth for n in needed), worth)


def rerun_command(command: str | None, rerun: Rerun) -> str | None:
    """``command`` (a linbench run or ab command line) with the counts of ``rerun`` in place of
    its own; None for a command that is neither (a run made by the Python API)."""
    try:
        words = shlex.split(command or "")
    except ValueError:
        return None
    if len(words) < 2 or words[0] != "linbench" or words[1] not in DROPPED:
        return None
    ab = words[1] == "ab"
    dropped = (*(AB_COUNTS if ab else RUN_COUNTS), *DROPPED[words[1]])
    kept: list[str] = []
    skip = False
    for word in words:
        flag = word.split("=", 1)[0]
        if skip:
            skip = False
        elif flag in dropped:
            skip = "=" not in word  # --flag VALUE: drop the value too
        elif word not in DROPPED_SWITCHES:
            kept.append(word)
    return shlex.join([*kept, *rerun.flags(ab)])


def rerun_commands(command: str | None, rerun: Rerun, run_dir: str, again: str = "again") -> list[str]:
    """The commands that measure the run at ``run_dir`` again with ``rerun``'s counts: its own
    command (``rerun_command``), or, for one made in ``--shard K/N`` parts, every part into a new
    ``--out`` folder (``<out>-<again>``) and the merge of their run folder; [] when unknown."""
    again_cmd = rerun_command(command, rerun)
    if again_cmd is None:
        return []
    words = shlex.split(again_cmd)
    parts = _parts_of(words)
    if parts is None:
        return [again_cmd]
    out = _value(words, "--out") or "."
    fresh = _fresh_folder(f"{out.rstrip('/')}-{again}")
    base = _without(words, ("--shard", "--out"))
    shards = [shlex.join([*base, "--shard", f"{k}/{parts}", "--out", fresh]) for k in range(parts)]
    return [*shards, shlex.join(["linbench", "merge", str(Path(fresh) / Path(run_dir).name)])]


def _parts_of(words: list[str]) -> int | None:
    """N of ``--shard K/N`` in ``words``; None for a command without it."""
    spec = _value(words, "--shard")
    if spec is None:
        return None
    _part, _sep, parts = spec.partition("/")
    return int(parts) if parts.isdigit() else None


def _value(words: list[str], flag: str) -> str | None:
    for i, word in enumerate(words):
        if word == flag and i + 1 < len(words):
            return words[i + 1]
        if word.startswith(f"{flag}="):
            return word.split("=", 1)[1]
    return None


def _without(words: list[str], flags: tuple[str, ...]) -> list[str]:
    kept: list[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word.split("=", 1)[0] in flags:
            skip = "=" not in word
        else:
            kept.append(word)
    return kept


def _fresh_folder(stem: str) -> str:
    """``stem``, or ``stem-2``, ... : a folder that does not exist yet (the parts of the run
    measured again must not go on with the old run's folder)."""
    path, n = stem, 1
    while Path(path).exists():
        n += 1
        path = f"{stem}-{n}"
    return path


def _not_judged_lines(comparison: Comparison) -> list[str]:
    """The counts and memory recorded on one side only, and a comparison that judged nothing."""
    counted = {measure for p in comparison.points for measure in p.one_sided}  # by the newer run
    lines = [
        f"{measure} not judged: one run's schema ({schema}) predates them; record that run again to gate them"
        for measure, schema in comparison.predated.items()
        if measure in counted
    ]
    one_sided = comparison.one_sided
    if one_sided:
        shown = "; ".join(f"{point_label(p.key)} ({', '.join(p.one_sided)})" for p in one_sided[:SHOWN_POINTS])
        more = f"; and {len(one_sided) - SHOWN_POINTS} more" if len(one_sided) > SHOWN_POINTS else ""
        lines.append(
            f"{len(one_sided)} point(s) recorded a count or memory on one side only (a count or a reading that "
            f"failed on the other), so it was not judged: {shown}{more}"
        )
    if comparison.judged_nothing and not comparison.unjudged:  # else the unjudged points are named below
        lines.append(
            f"no point was judged: each of the {len(comparison.points)} points in both runs failed on both sides, "
            "and a comparison that judged nothing does not pass"
        )
    return lines


def judging_lines(comparison: Comparison, thresholds: Thresholds) -> list[str]:
    """For an inconclusive comparison: what was not judged, and the command that would judge it."""
    lines = [f"the runs do not match: {reason}" for reason in comparison.covered().reasons()]
    between = comparison.between
    if comparison.run_moved and between is not None:
        lines.append(
            f"every point moved together by {math.expm1(between.shift):+.1%} (the median of {between.points} points) "
            "and no control says it was the machine: the machine or a change to every impl, which runs measured "
            "apart cannot tell apart; name impls the change does not touch as controls (--control, a suite's "
            "controls), or gate in one job with linbench ab (docs/ci.md)"
        )
    lines += _not_judged_lines(comparison)
    if comparison.stopped is not None:
        lines.append(stopped_line(comparison.stopped, comparison.commands[1]))
    same = comparison.unjudged_same_code
    if same:
        shown = "; ".join(point_label(p.key) for p in same[:SHOWN_POINTS])
        more = f"; and {len(same) - SHOWN_POINTS} more" if len(same) > SHOWN_POINTS else ""
        lines.append(
            f"{len(same)} point(s) not judged run the same code on both sides (no file they run changed, nor any "
            f"file every point runs), so only the machine could move them; they do not hold the verdict: {shown}{more}"
        )
    unjudged = comparison.unjudged
    if not unjudged:
        return lines
    shown = "; ".join(f"{point_label(p.key)} ({p.time_verdict})" for p in unjudged[:SHOWN_POINTS])
    more = f"; and {len(unjudged) - SHOWN_POINTS} more" if len(unjudged) > SHOWN_POINTS else ""
    lines.append(f"{len(unjudged)} point(s) whose time was not judged: {shown}{more}")
    if comparison.protocol.sequential and any(p.time_verdict == "noisy" for p in unjudged):
        lines.append(
            "noisy here: not decided within the rounds run: the interval of the ratio still reaches both past "
            f"--max-slowdown {thresholds.max_slowdown:.0%} and to +{thresholds.max_noise:.0%} at the gate's error "
            "rates (docs/gate.md, judged in time)"
        )
    rerun = rerun_of(comparison, thresholds)
    base_cmd, cur_cmd = comparison.commands
    if comparison.ab:
        again = rerun_command(cur_cmd, rerun) or f"linbench ab ... {shlex.join(rerun.flags(True))}"
        lines.append(f"to judge them, run the A/B again with more rounds: {again}")
    else:
        lines += _both_sides(comparison, rerun, base_cmd, cur_cmd)
    crowded = sum(p.time_verdict == OVERSUBSCRIBED for p in unjudged)
    if crowded:
        lines.append(
            f"{crowded} of them were measured while other processes took their worker's cores (oversubscribed): "
            "more processes will not settle them; measure again with the cores free, or with fewer threads "
            "(--threads 1)"
        )
    threads = sum(p.time_verdict == OTHER_THREADS for p in unjudged)
    if threads:
        lines.append(
            f"{threads} of them were measured with other torch thread counts on the two sides: more processes will "
            "not settle them; give both runs the same --threads"
        )
    if rerun.beyond:
        lines.append(
            f"{rerun.beyond} of them spread so widely that more than {rerun.worth} processes per point "
            "would be needed: more processes will not settle them; measure on a quieter machine (a runner of its "
            "own, no other jobs; on a CPU, one torch thread per worker, --threads 1, as suites/gate-cpu.toml sets)"
        )
    return lines


def stopped_line(stopped: Stopped, command: str | None) -> str:
    """What the A/B's deadline stopped, and the A/B again with twice the time, which would
    judge the rest (its own command line where it is known)."""
    more = f"{2 * stopped.max_job_s:g}" if stopped.max_job_s is not None else "S"
    try:
        words = shlex.split(command or "")
    except ValueError:
        words = []
    if len(words) > 1 and words[:2] == ["linbench", "ab"]:
        again = shlex.join([*_without(words, ("--max-job-s", *DROPPED["ab"])), "--max-job-s", more])
    else:
        again = f"linbench ab ... --max-job-s {more}"
    return f"{stopped.line()}; to judge the rest, run the A/B again with more time: {again}"


def _both_sides(comparison: Comparison, rerun: Rerun, base_cmd: str | None, cur_cmd: str | None) -> list[str]:
    """The commands that measure each run again with more processes, one line each side."""
    current = rerun_commands(cur_cmd, rerun, comparison.current, "again")
    baseline = rerun_commands(base_cmd, rerun, comparison.baseline, "baseline-again")
    if not current and not baseline:
        again = f"linbench run ... {shlex.join(rerun.flags(False))}"
        return [
            f"to judge them, measure both runs again (the baseline at its own commit) with more processes: {again}; "
            "or gate in one job with linbench ab (docs/ci.md)"
        ]
    lines = [
        "to judge them, measure both runs again with more processes (or gate in one job with linbench ab, docs/ci.md):"
    ]
    if baseline:
        lines.append(f"  the baseline, at its own commit: {' && '.join(baseline)}")
    if current:
        lines.append(f"  the current run: {' && '.join(current)}")
    return lines
