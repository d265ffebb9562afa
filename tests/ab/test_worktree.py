"""The baseline's worktree, on a small git repository made for the test (fast, and the
repository linbench runs from keeps no trace of it)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import linbench
from linbench.ab.worktree import (
    WorktreeError,
    checkout_root,
    detached_worktree,
    registered_worktrees,
    resolve_revision,
)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with two commits; the second changes file.txt."""
    path = tmp_path / "repo"
    path.mkdir()
    _git(path, "init", "-q")
    for text in ("first", "second"):
        (path / "file.txt").write_text(text)
        _git(path, "add", "file.txt")
        _git(path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", text)
    return path


def test_the_worktree_holds_the_revision_and_is_gone_afterwards(repo: Path) -> None:
    sha = resolve_revision(repo, "HEAD~1")
    with detached_worktree(repo, sha) as tree:
        assert (tree / "file.txt").read_text() == "first"
        assert len(registered_worktrees(repo)) == 2
        (tree / "untracked.pyc").write_text("a run leaves files behind")  # removal is forced
    assert not tree.exists() and not tree.parent.exists()
    assert registered_worktrees(repo) == [repo]


def test_the_worktree_is_removed_when_the_block_fails(repo: Path) -> None:
    with pytest.raises(KeyboardInterrupt), detached_worktree(repo, resolve_revision(repo, "HEAD")) as tree:
        raise KeyboardInterrupt
    assert not tree.exists() and registered_worktrees(repo) == [repo]


@pytest.mark.parametrize("revision", ["no-such-branch", "-x", "", "HEAD~9"])
def test_an_unknown_revision_is_one_line(repo: Path, revision: str) -> None:
    with pytest.raises(WorktreeError, match=r"is not a (commit|git revision)"):
        resolve_revision(repo, revision)


def test_linbench_runs_from_a_checkout_here() -> None:
    assert checkout_root() == Path(linbench.__file__).resolve().parents[1]


def test_a_copy_outside_git_is_not_a_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = tmp_path / "copy" / "linbench"
    copy.mkdir(parents=True)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    monkeypatch.setattr(linbench, "__file__", str(copy / "__init__.py"))
    with pytest.raises(WorktreeError, match="not a git checkout"):
        checkout_root()
