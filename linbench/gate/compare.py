"""Two runs point by point: is the current one slower, larger or launching more, beyond its
thresholds and its noise?

Time is judged by the spread between each point's worker processes (rule.py): a
change must pass both the noise those processes show and ``max_slowdown``; a point too noisy
to judge is ``noisy`` and a run without process data ``unverified``, and neither fails.
Where a point was timed as CUDA-graph replays on both sides, that is the time judged, and
the eager time is judged beside it by the same rule. Memory readings and kernel launches per
call are exact and compared against their thresholds alone (a CPU's memory is torch's count of
what a call allocated, alloc_peak_bytes; peak RSS, where a run lacks it, only above a floor, for
it moves by allocator pages between identical runs). A point that was ok and
now is not (oom, mismatch, crash...) is a regression too. Control points that all moved the
same way say the machine changed, not the code (drift.py).

How many processes a side needs to be judged, and when its spread is trusted, are the numbers of
the repeated-process protocol each run recorded in meta.json (``timing_protocol``; the defaults
for a run made before the record), so a run is judged by the protocol it was measured under.
Where the two runs recorded different numbers, each is taken at the stricter of the two (see
``judging_protocol``); runs that name different protocols are not compared.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd

from linbench.gate.between import BetweenRuns, between_runs
from linbench.gate.drift import DriftCheck, check_drift
from linbench.gate.exponents import ExponentCheck, ExponentError, check_exponents
from linbench.gate.point_diff import HOST_SYNCS, NOT_COMPARED, PointDiff
from linbench.gate.points import Side, Thresholds, diff_point
from linbench.gate.rule import UNJUDGED, gross_bar
from linbench.gate.verdict import ENVIRONMENT_CHANGED, INCONCLUSIVE, PASS, REGRESSION, ChangedCode, Coverage, Stopped
from linbench.report.load import Run
from linbench.report.series import plain
from linbench.results.meta import machine_differences, software_differences, timing_protocol
from linbench.results.protocol import ProcessProtocol, ProtocolError
from linbench.results.schema import DECODE_MODE, HOST_SYNCS_SCHEMA, KEY_COLUMNS, MEASURED_SCHEMA, SCHEMA_VERSION

__all__ = [
    *("CPU_MEMORY_FLOOR_BYTES", "CompareError", "Comparison", "ExponentCheck", "PointDiff", "Thresholds"),
    "compare_runs",
]

# Points match on their axes; cuda:0 and cuda:1 match, so device is compared by type.
MATCH_COLUMNS = tuple(c if c != "device" else "device_type" for c in KEY_COLUMNS)


class CompareError(ValueError):
    """The two runs cannot be compared (no common points, different devices...)."""


@dataclass
class Comparison:
    baseline: str
    current: str
    points: list[PointDiff]
    baseline_only: list[dict[str, Any]]
    current_only: list[dict[str, Any]]
    exponents: list[ExponentCheck]
    drift: DriftCheck | None = None
    protocol: ProcessProtocol = field(default_factory=ProcessProtocol)  # the one the points were judged by
    coverage: Coverage | None = None  # None: taken from the points and the unmatched lists
    commands: tuple[str | None, str | None] = (None, None)  # each run's recorded command line
    ab: bool = False  # the two sides of one linbench ab
    between: BetweenRuns | None = None  # runs measured apart: what the whole run moved (between.py)
    run_moved: bool = False  # every point moved past the floor, and no control says it was the machine
    changed: ChangedCode | None = None  # the code changed since a revision (compare --changed-since, ab)
    # Measures a run's schema predates (host syncs before schema 16): not judged, and said so,
    # but no count that failed; the older run cannot be measured again by its own linbench.
    predated: dict[str, int] = field(default_factory=dict)  # measure -> the older run's schema
    stopped: Stopped | None = None  # an A/B whose --max-job-s deadline stopped a round: never a pass

    def covered(self) -> Coverage:
        """How far the two runs measured the same things."""
        if self.coverage is not None:
            return self.coverage
        impls = {f"{p.key['variant']}:{p.key['impl']}" for p in self.points}
        return Coverage.of(len(self.points), len(self.baseline_only), len(self.current_only), impls, impls)

    @property
    def environment_changed(self) -> bool:
        return self.drift is not None and self.drift.changed

    @property
    def regressions(self) -> list[PointDiff]:
        """The points that fail the gate: time regressions are excused when the environment changed."""
        if self.environment_changed:
            return [p for p in self.points if p.hard_regressed]
        return [p for p in self.points if p.regressed]

    @property
    def failed(self) -> bool:
        return bool(self.regressions) or any(check.regressed for check in self.exponents)

    @property
    def unjudged(self) -> list[PointDiff]:
        """The points whose time, present on both sides, could not be judged (noisy, unverified,
        oversubscribed), but for those whose impl runs the same code on both sides (``same_code``)."""
        return [p for p in self.points if p.time_verdict in UNJUDGED and not self.same_code(p)]

    @property
    def unjudged_same_code(self) -> list[PointDiff]:
        """The points not judged whose impl runs the same code on both sides: they do not make
        the comparison inconclusive, since no count of processes could show the change there."""
        return [p for p in self.points if p.time_verdict in UNJUDGED and self.same_code(p)]

    def same_code(self, point: PointDiff) -> bool:
        """Whether ``point``'s impl runs the same code on both sides (ChangedCode.same_code);
        never without ``changed``."""
        return self.changed is not None and self.changed.same_code(f"{point.key['variant']}:{point.key['impl']}")

    @property
    def one_sided(self) -> list[PointDiff]:
        """The points with memory, launches or host syncs recorded on one side only, where both
        runs' schemas record them (a count that failed, a reading lost)."""
        return [p for p in self.points if set(p.one_sided) - set(self.predated)]

    @property
    def judged_nothing(self) -> bool:
        """No point's time was judged (each failed on both sides, or could not be judged) and
        none was excused as the same code: there is nothing to pass."""
        judged = [p for p in self.points if p.time_verdict not in (*UNJUDGED, NOT_COMPARED)]
        # compare_runs refuses runs with no point in common; a comparison made here without
        # points is a test's, its coverage given
        return bool(self.points) and not judged and not self.unjudged_same_code

    @property
    def inconclusive(self) -> bool:
        """Some time, count or memory could not be judged, nothing was, the runs did not
        measure the same things, the whole run moved and nothing says whether the machine or the
        code did, an impl whose code changed was not measured, or the A/B's deadline stopped a
        round (``stopped``)."""
        unjudged = bool(self.unjudged) or bool(self.one_sided) or self.judged_nothing
        unmatched = self.covered().mismatched or self.run_moved or bool(self.unmeasured)
        return unjudged or unmatched or self.stopped is not None

    @property
    def unmeasured(self) -> tuple[str, ...]:
        """The impls whose code changed (``changed``) that neither run measured."""
        return self.changed.unmeasured(self.covered()) if self.changed is not None else ()

    @property
    def verdict(self) -> str:
        """regression, inconclusive, environment changed or pass: the first that applies."""
        if self.failed:
            return REGRESSION
        if self.inconclusive:
            return INCONCLUSIVE
        return ENVIRONMENT_CHANGED if self.environment_changed else PASS

    def count(self, verdict: str) -> int:
        return sum(p.time_verdict == verdict for p in self.points)

    def to_json(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline,
            "current": self.current,
            "verdict": self.verdict,
            "noisy": self.count("noisy"),
            "unverified": self.count("unverified"),
            "oversubscribed": self.count("oversubscribed"),
            "other_threads": self.count("other threads"),
            "unjudged": [p.key for p in self.unjudged],
            "unjudged_same_code": [p.key for p in self.unjudged_same_code],
            "one_sided": [{**p.key, "measures": list(p.one_sided)} for p in self.one_sided],
            "predated": self.predated,
            "judged_nothing": self.judged_nothing,
            "mismatched": self.covered().reasons(),
            "between_runs": self.between.to_json() if self.between is not None else None,
            "run_moved": self.run_moved,
            "changed_code": self.changed.to_json(self.covered()) if self.changed is not None else None,
            "stopped": asdict(self.stopped) if self.stopped is not None else None,
            "points": [{**p.key, **{k: v for k, v in asdict(p).items() if k != "key"}} for p in self.points],
            "baseline_only": self.baseline_only,
            "current_only": self.current_only,
            "exponents": [{**asdict(c), "regressed": c.regressed} for c in self.exponents],
            "drift": self.drift.to_json() if self.drift is not None else None,
        }


def device_names(run: Run) -> set[str]:
    return set(run.results["device_name"].astype(str))


def check_same_device(baseline: Run, current: Run, software: bool = True) -> None:
    """CompareError when the runs come from different device models, or (``software``) were
    measured with other software (torch, CUDA, a library's version): either side's times are then
    of other code than the change under test."""
    base, cur = device_names(baseline), device_names(current)
    if base != cur:
        raise CompareError(
            f"the runs come from different devices ({', '.join(sorted(base))} against {', '.join(sorted(cur))}); "
            "pass --force to compare them anyway"
        )
    differences = software_differences(baseline.meta, current.meta) if software else []
    if differences:
        raise CompareError(
            f"the runs were measured with other software ({'; '.join(differences)}): record the baseline again with "
            "this software, or pass --force to compare them anyway"
        )


def environment_lines(baseline: Run, current: Run) -> list[str]:
    """What differs between the runs' machines and software, in one line (none when nothing
    does): said beside every verdict, forced or not."""
    differences = [
        *software_differences(baseline.meta, current.meta),
        *machine_differences(baseline.meta, current.meta),
    ]
    if not differences:
        return []
    return [f"the runs were measured on other machines or software: {'; '.join(differences)}"]


def _with_device_type(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.copy()
    frame["device_type"] = frame["device"].astype(str).str.split(":").str[0]
    frame["causal"] = frame["causal"].astype(bool)
    return frame


def _keyed(results: pd.DataFrame) -> pd.DataFrame:
    frame = _with_device_type(results)
    return frame.drop_duplicates(list(MATCH_COLUMNS), keep="last").set_index(list(MATCH_COLUMNS))


def _process_groups(run: Run) -> dict[tuple, pd.DataFrame]:
    """Each point's ok processes with a time (a resumed process counted once), by match key."""
    if run.processes is None or run.processes.empty:
        return {}
    frame = _with_device_type(run.processes)
    frame = frame.drop_duplicates([*MATCH_COLUMNS, "process"], keep="last")
    frame = frame[(frame["status"] == "ok") & (frame["time_ms"] > 0)]
    return {key: rows for key, rows in frame.groupby(list(MATCH_COLUMNS), sort=False)}


def compare_runs(baseline: Run, current: Run, thresholds: Thresholds) -> Comparison:
    base, cur = _keyed(baseline.results), _keyed(current.results)
    common = base.index.intersection(cur.index, sort=False)
    if common.empty:
        kinds = _command_kind(baseline), _command_kind(current)
        why = f": the baseline is a {kinds[0]} run, current a {kinds[1]} run" if kinds[0] != kinds[1] else ""
        raise CompareError(
            f"{baseline.path} and {current.path} have no point in common (same variant, impl, shape...){why}"
        )
    protocol = judging_protocol(baseline, current)
    sides = _sides(base, cur, common, _process_groups(baseline), _process_groups(current))
    points = _diffs(sides, thresholds, protocol)
    controls = (*thresholds.controls, *declared_controls(current))
    ab = "ab" in baseline.meta and "ab" in current.meta
    # Judged again with what the points as a whole say: how far a gross regression must stand
    # out (rule.py), and, for runs measured apart, what the whole run moved (between.py).
    bar = gross_bar([p.ratio for p in points if p.ratio is not None], thresholds.noise_z)
    between = None if ab else between_runs(points, controls)
    if bar is not None or between is not None:
        points = _diffs(sides, thresholds, protocol, bar, between)
    drift = check_drift(points, controls, thresholds.max_slowdown, required=thresholds.controls) if controls else None
    baseline_only = _keys(base.index.difference(cur.index, sort=False))
    current_only = _keys(cur.index.difference(base.index, sort=False))
    return Comparison(
        baseline=str(baseline.path),
        current=str(current.path),
        points=points,
        baseline_only=baseline_only,
        current_only=current_only,
        exponents=_exponents(current, thresholds.max_exponents),
        drift=drift,
        protocol=protocol,
        coverage=Coverage.of(len(points), len(baseline_only), len(current_only), _impls(base), _impls(cur)),
        commands=(_command(baseline), _command(current)),
        ab=ab,
        between=between,
        run_moved=between is not None and between.unexplained(thresholds.max_slowdown),
        predated=_predated(baseline, current),
    )


def _predated(baseline: Run, current: Run) -> dict[str, int]:
    """The counts the older run's schema predates (host syncs before HOST_SYNCS_SCHEMA), with
    that schema: the one its figures were measured under (an A/B's merged side records it)."""
    schemas = [meta.get(MEASURED_SCHEMA, meta.get("schema_version")) for meta in (baseline.meta, current.meta)]
    oldest = min((s for s in schemas if isinstance(s, int)), default=SCHEMA_VERSION)
    return {HOST_SYNCS: oldest} if oldest < HOST_SYNCS_SCHEMA else {}


def _command_kind(run: Run) -> str:
    """Which command measured ``run``: decode (its rows' mode) or run."""
    return "decode" if (run.results["mode"].astype(str) == DECODE_MODE).any() else "run"


def _impls(frame: pd.DataFrame) -> set[str]:
    """The run's impls, ``variant:impl``, from its keyed results."""
    index = frame.index
    return {f"{v}:{i}" for v, i in zip(index.get_level_values("variant"), index.get_level_values("impl"), strict=True)}


def _command(run: Run) -> str | None:
    command = run.meta.get("command")
    return command if isinstance(command, str) else None


def _sides(
    base: pd.DataFrame, cur: pd.DataFrame, common: pd.Index, base_procs: dict, cur_procs: dict
) -> list[tuple[dict[str, Any], Side, Side]]:
    """Each common point: its key, and each run's view of it."""
    return [
        (
            dict(zip(MATCH_COLUMNS, key, strict=True)),
            Side.of(base.loc[key], base_procs.get(key)),
            Side.of(cur.loc[key], cur_procs.get(key)),
        )
        for key in common
    ]


def _diffs(
    sides: list[tuple[dict[str, Any], Side, Side]],
    thresholds: Thresholds,
    protocol: ProcessProtocol,
    bar: float | None = None,
    between: BetweenRuns | None = None,
) -> list[PointDiff]:
    return [diff_point(key, b, c, thresholds, protocol, bar, between) for key, b, c in sides]


def recorded_protocol(run: Run) -> ProcessProtocol:
    """The repeated-process protocol ``run`` recorded in its meta.json (the defaults where it
    recorded none); CompareError for a record that cannot be read."""
    try:
        return timing_protocol(run.meta)
    except ProtocolError as exc:
        raise CompareError(f"{run.path}: {exc}") from None


def judging_protocol(baseline: Run, current: Run) -> ProcessProtocol:
    """The protocol the two runs' processes are judged by together. Where their records differ
    in a number, the stricter one holds (the larger ``min_to_judge`` and ``trust_processes``,
    the smaller ``extend_above``): each side's processes then meet both runs' protocols, and a
    difference can make a point noisy or unverified, never a regression. Runs that name
    different protocols measured by different rules: CompareError."""
    base, cur = recorded_protocol(baseline), recorded_protocol(current)
    if base.name != cur.name:
        raise CompareError(
            f"the runs were measured under different timing protocols ({base.name} against {cur.name}); "
            "measure one again with the linbench that measured the other"
        )
    return base.stricter(cur)


def declared_controls(run: Run) -> tuple[str, ...]:
    """The control impls the run's suite declares (``controls = [...]``), from its meta.json;
    none for a side of a linbench ab, whose two sides shared the machine and the job."""
    if "ab" in run.meta:
        return ()
    sweep = run.meta.get("sweep")
    settings = sweep.get("settings") if isinstance(sweep, dict) else None
    listed = settings.get("controls") if isinstance(settings, dict) else None
    return tuple(str(c) for c in listed) if isinstance(listed, list) else ()


def _keys(index: pd.Index) -> list[dict[str, Any]]:
    return [{c: plain(v) for c, v in zip(MATCH_COLUMNS, key, strict=True)} for key in index]


def _exponents(run: Run, bounds: dict[str, float]) -> list[ExponentCheck]:
    try:
        return check_exponents(run, bounds)
    except ExponentError as exc:
        raise CompareError(str(exc)) from None
