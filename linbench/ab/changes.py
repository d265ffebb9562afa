"""What changed since the baseline revision, and which impls ``linbench ab`` adds for it.

A gate that passes must have measured the code that changed. ``changes_since`` reads the diff
between a revision and the checkout (tracked changes, staged or not, and untracked files git
does not ignore) and maps the changed files to the impls that run them (linbench/impl_code.py);
a Python file whose code is the same, its comments, docstrings or layout changed only
(code_diff.py), changes no impl.
``widen`` then decides, for a sweep's impls: each changed impl the sweep does not measure is
added to its points, at the sweep's shapes, unless it cannot run on the sweep's device or
widening is off (``--no-widen``); those are left out, and the comparison names them and is
inconclusive (exit 4), never a pass. ``Widening.running`` then drops the measured and added
impls whose calls, traced at the sweep's shapes (ran_code.py), run none of the changed code
the import graph ties them to: the graph is by module, and one module builds every gated form.
Within a changed file, what counts is its changed functions (code_diff.py): an impl runs the
change where its calls enter one of them or where one runs while the variants are built, and
wherever the file's import-time code changed.

Changed files that no impl runs (the runner, the measurement code, the reports) or that the
impls of most variants run (the variant machinery) widen nothing: every point the suite
measures runs them, so the suite's points are what measure them, and the verdict says so.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from linbench.ab.code_diff import WHOLE, CodeChange, code_change
from linbench.ab.worktree import git_file, git_lines
from linbench.impl_code import Touched, impl_code, touched
from linbench.sweep.estimate import format_duration

if TYPE_CHECKING:
    from linbench.ab.ran_code import Function, Ran
    from linbench.sweep.request import SweepRequest


def changed_files(root: Path, sha: str) -> list[str]:
    """The files of the checkout at ``root`` that differ from ``sha``: tracked ones changed
    (committed since, staged or not, deleted included) and untracked ones git does not ignore,
    relative to ``root``."""
    tracked = git_lines(root, "diff", "--name-only", "--no-renames", sha, "--")
    untracked = git_lines(root, "ls-files", "--others", "--exclude-standard")
    return sorted({path for path in (*tracked, *untracked) if path})


def changes_since(root: Path, sha: str) -> Touched:
    """The impls, shared files and other files the changes since ``sha`` touch; a Python
    file whose code did not change (comments, docstrings, layout) is set apart as unchanged."""
    files = changed_files(root, sha)
    code = code_changes(root, sha, files)
    unchanged = tuple(path for path in files if path in code and code[path].none)
    return replace(touched([path for path in files if path not in unchanged], impl_code()), unchanged=unchanged)


def code_changes(root: Path, sha: str, paths: Iterable[str]) -> dict[str, CodeChange]:
    """What the change since ``sha`` does to each Python file of ``paths`` (code_diff.py)."""
    changes = {}
    for path in paths:
        if path.endswith(".py"):
            current = root / path
            after = current.read_text() if current.is_file() else None
            changes[path] = code_change(git_file(root, sha, path), after)
    return changes


@dataclass(frozen=True)
class Widening:
    """What ``ab`` does about the changed impls: ``measured`` the sweep measures already,
    ``added`` it adds to the sweep, ``left_out`` (impl: why) it cannot measure."""

    changes: Touched
    measured: tuple[str, ...] = ()
    added: tuple[str, ...] = ()
    left_out: Mapping[str, str] = field(default_factory=dict)
    # Seconds each added impl's points take over the rounds by the estimate (None: unknown).
    costs: Mapping[str, float | None] = field(default_factory=dict)
    # The changed impls that, traced at the sweep's shapes (ran_code.py), run none of their
    # changed files: not added, and not counted as changed; each with those files.
    not_run: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def running(
        self,
        ran: Mapping[str, Ran | None],
        code: Mapping[str, CodeChange],
        at_import: frozenset[Function] | None,
    ) -> Widening:
        """This widening without the measured and added impls that, traced (``ran``: impl ->
        what its calls ran, ran_code.ran_files), run none of their changed code (``code``: each
        changed file's, code_diff.py; ``at_import``: the functions building the variants
        enters, ran_code.run_at_import, None where unknown). An impl not traced (None, or
        absent) keeps the import graph's answer, and so does one tied to a changed file that
        is no Python module of the package (csrc/)."""
        not_run = {
            impl: self.changes.impls[impl]
            for impl in (*self.measured, *self.added)
            if not runs_changed(ran.get(impl), self.changes.impls.get(impl, ()), code, at_import)
        }
        return replace(
            self,
            measured=tuple(impl for impl in self.measured if impl not in not_run),
            added=tuple(impl for impl in self.added if impl not in not_run),
            not_run=not_run,
        )

    def priced(self, costs: Mapping[str, float | None], max_s: float | None) -> Widening:
        """This widening with each added impl's predicted time, and the impls past ``max_s``
        seconds together (``--max-widen-s``) moved to ``left_out``."""
        kept, over = within_cap({impl: costs.get(impl) for impl in self.added}, max_s)
        priced = {impl: costs.get(impl) for impl in kept}
        return replace(self, added=tuple(kept), left_out={**self.left_out, **over}, costs=priced)

    def lines(self) -> list[str]:
        """What the widening did, one line each, for the job's progress."""
        lines = []
        if self.added:
            names = ", ".join(
                f"{impl} ({cost_text(self.costs[impl])})" if impl in self.costs else impl for impl in self.added
            )
            lines.append(f"changed code: added {len(self.added)} impl(s) to the points: {names}")
        if self.measured:
            lines.append(f"changed code: the sweep measures {', '.join(self.measured)}")
        for impl, why in self.left_out.items():
            lines.append(f"changed code: {impl} is not measured: {why}")
        by_files: dict[tuple[str, ...], list[str]] = {}
        for impl, files in self.not_run.items():
            by_files.setdefault(files, []).append(impl)
        for files, impls in by_files.items():
            lines.append(
                f"changed code: {', '.join(impls)} run(s) none of the changed code of {', '.join(files)} at the "
                "sweep's shapes (traced by function; the import graph ties them to it): not counted as changed"
            )
        if self.changes.unchanged:
            lines.append(
                f"changed code: {', '.join(self.changes.unchanged)}: comments, docstrings or layout only, "
                "the same code: no impl counted as changed by it"
            )
        return lines


def runs_changed(
    ran: Ran | None,
    changed: Sequence[str],
    code: Mapping[str, CodeChange] | None = None,
    at_import: frozenset[Function] | None = None,
) -> bool:
    """Whether an impl whose traced calls ran ``ran`` (None: not traced) runs the changed code
    of one of the ``changed`` files it is tied to: it does where it was not traced, where one
    of them is no Python module (csrc/, which no Python frame shows), and where it ran a file
    (its functions, or values it holds) whose import-time code changed (``code``: each file's
    change, WHOLE where absent) or one of whose changed functions it entered or building the
    variants enters (``at_import``; None: unknown, so any)."""
    if ran is None:
        return True
    for path in changed:
        if not path.endswith(".py"):
            return True
        if path not in ran.files:
            continue
        change = (code or {}).get(path, WHOLE)
        if change.whole or at_import is None:
            return True
        if any((path, line) in ran.functions or (path, line) in at_import for line in change.first_lines):
            return True
    return False


def within_cap(costs: Mapping[str, float | None], max_s: float | None) -> tuple[list[str], dict[str, str]]:
    """The impls that fit ``max_s`` seconds together, in order, and why each other one was
    left out; every impl fits without a cap. An impl whose time is unknown is kept: the cap
    is a time limit, and only a predicted time can pass it."""
    kept: list[str] = []
    left_out: dict[str, str] = {}
    spent = 0.0
    for impl, cost in costs.items():
        if max_s is not None and cost is not None and spent + cost > max_s:
            left_out[impl] = (
                f"its points would take about {format_duration(cost)} over the rounds, "
                f"past --max-widen-s {max_s:g} ({format_duration(spent)} already added)"
            )
            continue
        kept.append(impl)
        spent += cost or 0.0
    return kept, left_out


def cost_text(cost: float | None) -> str:
    """``about 3 min`` for an added impl's line, or what is not known."""
    return "time unknown" if cost is None else f"about {format_duration(cost)} over the rounds"


def widen(changes: Touched, swept: Iterable[str], refusals: Mapping[str, str | None], enabled: bool) -> Widening:
    """The widening of a sweep whose impls are ``swept`` (``variant:impl``) for ``changes``;
    ``refusals`` says, for each changed impl, why it cannot run on the sweep's device (None:
    it can). With ``enabled`` False (``--no-widen``) nothing is added."""
    swept = set(swept)
    measured = tuple(name for name in changes.names if name in swept)
    added: list[str] = []
    left_out: dict[str, str] = {}
    for name in changes.names:
        if name in swept:
            continue
        why = refusals.get(name)
        if why is not None:
            left_out[name] = f"it cannot run here ({why})"
        elif not enabled:
            left_out[name] = "--no-widen"
        else:
            added.append(name)
    return Widening(changes, measured, tuple(added), left_out)


def widened_variants(given: Sequence[str], added: Sequence[str]) -> list[str]:
    """The ``--variant`` list of the widened sweep: the sweep's own, then the added impls."""
    return [*given, *(name for name in added if name not in given)]


def sweep_widening(
    changes: Touched, variants: Sequence[str], baselines: Sequence[str], device: str, enabled: bool
) -> Widening:
    """``widen`` for a sweep of the impls ``variants`` and ``baselines`` name (``--variant``'s
    forms) on ``device`` (``--device``'s forms, ``auto`` included)."""
    from linbench.devices import resolve_device
    from linbench.variants.registry import get_variant
    from linbench.variants.selection import select_impls

    specs = [part for spec in (*variants, *baselines) for part in spec.split(",") if part.strip()]
    swept = {f"{chosen.variant.name}:{chosen.impl}" for chosen in select_impls(specs)}
    target = resolve_device(device)
    refusals = {}
    for name in changes.names:
        variant, impl = name.split(":", 1)
        refusals[name] = get_variant(variant).impl(impl).unavailable_reason(target)
    return widen(changes, swept, refusals, enabled)


def traced_widening(widening: Widening, request: SweepRequest, root: Path, sha: str) -> Widening:
    """``widening`` without the measured and added impls that, traced at the points the sweep
    ``request`` measures them at (ran_by_impl), run none of their code changed since ``sha``
    in the checkout at ``root`` (Widening.running). The functions building the
    variants enters are traced in a new process only where a changed function could count."""
    from linbench.ab.ran_code import ran_by_impl, run_at_import

    impls = (*widening.measured, *widening.added)
    ran = ran_by_impl(request, impls)
    code = code_changes(root, sha, {path for impl in impls for path in widening.changes.impls.get(impl, ())})
    by_function = any(not change.whole and change.first_lines for change in code.values())
    return widening.running(ran, code, run_at_import() if by_function else frozenset())
