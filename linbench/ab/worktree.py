"""The baseline revision, checked out in a detached git worktree for the length of an A/B.

The worktree is made from the git checkout linbench itself runs from, in a temporary folder,
and removed when the A/B ends in any way (an error, Ctrl-C). Removal is forced: the baseline's
run leaves files in its tree (``__pycache__``), and git refuses to remove a worktree with
untracked files otherwise.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import linbench

GIT_TIMEOUT_S = 120


class WorktreeError(ValueError):
    """No baseline tree can be made (not a checkout, unknown revision, git refused); the
    message is one line."""


def checkout_root() -> Path:
    """The git checkout whose ``linbench/`` package is running; WorktreeError when linbench
    runs from elsewhere (an installed wheel, a copy)."""
    root = Path(linbench.__file__).resolve().parents[1]
    try:
        top = _git(root, "rev-parse", "--show-toplevel")
    except WorktreeError:
        top = None
    if top is None or Path(top).resolve() != root:
        raise WorktreeError(
            f"linbench runs from {root}, which is not a git checkout; linbench ab needs one to check the "
            "baseline out (install with pip install -e from a clone)"
        )
    return root


def resolve_revision(root: Path, revision: str) -> str:
    """The full commit sha of ``revision`` in the checkout at ``root``."""
    if not revision.strip() or revision.startswith("-"):
        raise WorktreeError(f"--baseline {revision!r} is not a git revision")
    try:
        return _git(root, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{revision}^{{commit}}")
    except WorktreeError:
        raise WorktreeError(f"--baseline {revision!r} is not a commit of {root}") from None


@contextmanager
def detached_worktree(root: Path, sha: str) -> Iterator[Path]:
    """A detached worktree of ``sha`` in a temporary folder, removed (with its git record)
    when the block ends, however it ends."""
    parent = Path(tempfile.mkdtemp(prefix="linbench-ab-"))
    tree = parent / "baseline"
    try:
        _git(root, "worktree", "add", "--detach", "--quiet", str(tree), sha)
    except WorktreeError as exc:
        shutil.rmtree(parent, ignore_errors=True)
        raise WorktreeError(f"cannot check out {sha[:12]} in a worktree: {exc}") from None
    try:
        yield tree
    finally:
        remove_worktree(root, tree)
        shutil.rmtree(parent, ignore_errors=True)


def remove_worktree(root: Path, tree: Path) -> None:
    """Remove ``tree`` and git's record of it; a failed ``git worktree remove`` falls back to
    deleting the folder and pruning the record, so nothing is left either way."""
    try:
        _git(root, "worktree", "remove", "--force", str(tree))
    except WorktreeError:
        shutil.rmtree(tree, ignore_errors=True)
        with suppress(WorktreeError):
            _git(root, "worktree", "prune")


def registered_worktrees(root: Path) -> list[Path]:
    """The worktrees git knows for the checkout at ``root`` (the main one included)."""
    listing = _git(root, "worktree", "list", "--porcelain")
    return [Path(line.split(" ", 1)[1]) for line in listing.splitlines() if line.startswith("worktree ")]


def git_lines(root: Path, *args: str) -> list[str]:
    """The lines ``git -C root ARGS`` prints; WorktreeError with git's first error line."""
    return _git(root, *args).splitlines()


@functools.cache
def git_file(root: Path, sha: str, path: str) -> str | None:
    """The text of ``path`` (from the repository's root) at commit ``sha``; None where that
    commit has no such file (or git cannot say). Read once a process: a commit's files never
    change, and ``ab`` reads the changed ones both to map the change and to trace it."""
    try:
        return _git(root, "show", f"{sha}:{path}")
    except WorktreeError:
        return None


def _git(root: Path, *args: str) -> str:
    """``git -C root ARGS``'s stdout, stripped; WorktreeError with git's first error line."""
    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=GIT_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise WorktreeError(f"git could not run: {exc}") from None
    if done.returncode != 0:
        first = next((line.strip() for line in done.stderr.splitlines() if line.strip()), f"exit {done.returncode}")
        raise WorktreeError(first.removeprefix("fatal: ").removeprefix("error: "))
    return done.stdout.strip()
