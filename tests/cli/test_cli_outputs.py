"""A command's output file is never written over a run folder's own files, nor given as a folder;
a write that fails is one line and exit 2; a run whose times no figure can take (an edit) is a
warning or one line, never a traceback (CPU; a copy of a committed run, nothing measured but
check's one tiny length)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
COMMITTED = ROOT / "results" / "cpu-reference" / "20261124T060541Z-gated"


@pytest.fixture
def run(tmp_path: Path) -> Path:
    folder = tmp_path / "run"
    shutil.copytree(COMMITTED, folder, ignore=shutil.ignore_patterns("plots", "error-vs-length"))
    return folder


def _files(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in folder.iterdir() if path.is_file()}


@pytest.mark.parametrize(
    ("command", "target"),
    [
        (("report", "{run}", "--out"), "results.csv"),
        (("report", "{run}", "--format", "json", "--out"), "meta.json"),
        (("budget", "{run}", "--out"), "results.csv"),
        (("history", "{run}", "--html"), "meta.json"),
        (("check", "--variant", "cosine:chunked", "--device", "cpu", "-q", "--seq", "64", "--out"), "samples.csv"),
    ],
)
def test_no_output_is_written_over_a_run_s_own_file(invoke, run: Path, command: tuple[str, ...], target: str) -> None:
    """Defect: each of these wrote over the run's file and exited 0; the run was lost."""
    before = _files(run)
    result = invoke(*(part.format(run=run) for part in command), run / target)
    assert result.exit_code == 2, result.output
    assert f": it is {target} of the run folder" in result.stderr and "never writes over a run's files" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.output
    assert _files(run) == before


@pytest.mark.parametrize(
    "command", [("budget", "{run}", "--out"), ("report", "{run}", "--out"), ("history", "{run}", "--html")]
)
@pytest.mark.parametrize("how", ["dot-dot", "link"])
def test_a_path_that_leads_to_a_run_s_own_file_is_refused_too(
    invoke, run: Path, tmp_path: Path, command: tuple[str, ...], how: str
) -> None:
    """Defect: RUN/new/../results.csv (new not yet made) and a link to RUN/meta.json passed the
    check, then the output was written over the run's file."""
    before = _files(run)
    if how == "link":
        target = tmp_path / "out.txt"
        target.symlink_to(run / "meta.json")
    else:
        target = run / "new" / ".." / "results.csv"
    result = invoke(*(part.format(run=run) for part in command), target)
    assert result.exit_code == 2, result.output
    assert "of the run folder" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert _files(run) == before and not (run / "new").exists()


@pytest.mark.parametrize("option", ["--out", "--plot"])
def test_check_s_output_given_as_a_folder_is_refused_before_measuring(invoke, tmp_path: Path, option: str) -> None:
    result = invoke("check", "--variant", "cosine:chunked", "--device", "cpu", "-q", "--seq", "64", option, tmp_path)
    assert result.exit_code == 2 and "it is a folder; give a file name" in result.stderr
    assert "cosine:chunked" not in result.stdout  # nothing measured


def test_a_figure_in_a_format_matplotlib_lacks_is_one_line(invoke, tmp_path: Path) -> None:
    result = invoke(
        "check", "--variant", "cosine:chunked", "--device", "cpu", "-q", "--seq", "64", "--plot", tmp_path / "x.txt"
    )
    assert result.exit_code == 2 and "cannot write the error figure" in result.stderr and "txt" in result.stderr
    assert "Traceback" not in result.output


def test_history_s_page_in_a_folder_that_cannot_be_made_is_one_line(invoke, run: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    result = invoke("history", run, "--html", blocker / "page.html")
    assert result.exit_code == 2 and "cannot write the history page" in result.stderr
    assert "Traceback" not in result.output


def _set_time(folder: Path, value: str) -> None:
    """Every ok row's time_ms (and its p20/p80) set to ``value``, as an edit would."""
    import csv

    with (folder / "results.csv").open(newline="") as handle:
        reader = csv.DictReader(handle)
        header, rows = reader.fieldnames, list(reader)
    for row in rows:
        if row["status"] == "ok":
            row.update(time_ms=value, time_ms_p20=value, time_ms_p80=value)
    with (folder / "results.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(header or ()))
        writer.writeheader()
        writer.writerows(rows)


def test_a_time_no_axis_can_take_is_one_line_from_plot(invoke, run: Path, tmp_path: Path) -> None:
    """Defect: a time of 1e308 ms (an edit) ended plot in an OverflowError traceback."""
    _set_time(run, "1e308")
    result = invoke("plot", run, "--out", tmp_path / "figures")
    assert result.exit_code == 2 and f"cannot plot {str(run)!r}" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.output


def test_an_infinite_time_is_a_row_left_out_with_a_warning(invoke, run: Path, tmp_path: Path) -> None:
    """Defect: an inf time passed the row check and ended plot in a ValueError traceback."""
    _set_time(run, "inf")
    result = invoke("report", run)
    assert "Traceback" not in result.output and "not a time" in result.stderr
