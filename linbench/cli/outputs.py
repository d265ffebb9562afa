"""A command's output file (a report, a budget, a history page, check's error table and figure),
written so that bad input is one line and exit 2 and nothing is lost: never over a run folder's
own files, never as a folder's name, and a write that fails names the file and why; and a run's
--out that --resume would ignore."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from linbench.cli.errors import CliUsageError
from linbench.results.store import run_file_problem


def check_output(path: Path, what: str) -> None:
    """CliUsageError when ``path`` can be seen, before any work, to be no place for ``what``:
    a run folder's own file, or a folder."""
    problem = run_file_problem(path)
    if problem is not None:
        raise CliUsageError(f"cannot write {what} to {str(path)!r}: {problem}")
    if path.is_dir():
        raise CliUsageError(f"cannot write {what} to {str(path)!r}: it is a folder; give a file name")


def write_output(path: Path, write: Callable[[Path], object], what: str) -> None:
    """``write(path)``, which writes ``what`` there (its folder made); CliUsageError when the
    path is a run's own file or a folder (check_output), or the write fails (a read-only place,
    a format the writer does not know)."""
    check_output(path, what)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write(path)
    except OSError as exc:
        raise CliUsageError(f"cannot write {what} to {str(path)!r}: {exc.strerror or exc}") from None
    except ValueError as exc:  # matplotlib: "Format 'txt' is not supported"
        raise CliUsageError(f"cannot write {what} to {str(path)!r}: {' '.join(str(exc).split())}") from None


def run_out(resume: Path | None, out: Path | None) -> Path:
    """Where ``run`` or ``decode`` makes its folder: ``--out``, by default results/. CliUsageError
    for an ``--out`` beside ``--resume`` that names another folder than the resumed run's: the
    run finishes where it is, and that --out would be ignored in silence."""
    if resume is not None and out is not None and out.resolve() != resume.resolve().parent:
        raise CliUsageError(
            f"--resume finishes the run in {str(resume)!r}, not under --out {str(out)!r}: drop --out "
            "(or copy the run folder there first)"
        )
    if out is not None:
        return out
    from linbench.runner.pipeline import DEFAULT_OUT  # imports torch: here, not at the top

    return DEFAULT_OUT
