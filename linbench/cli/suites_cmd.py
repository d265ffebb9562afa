"""``linbench suites``: the suite files of a folder, what each reproduces, and its size."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from linbench.cli.common import load_plugins, stdout_console
from linbench.cli.errors import CliUsageError, usage_errors

# Where suites are looked for without an argument: ./suites, else the checkout's own.
CHECKOUT_SUITES = Path(__file__).resolve().parents[2] / "suites"


@dataclass(frozen=True)
class SuiteInfo:
    name: str
    path: Path
    summary: str
    command: str
    points: int


def first_comment(path: Path) -> str:
    """The suite's first comment line: what it reproduces, in one line."""
    for line in path.read_text().splitlines():
        if line.strip().startswith("#"):
            return line.strip().lstrip("#").strip()
    return ""


def describe_suite(path: Path) -> SuiteInfo:
    """Name, summary, command and point count of one suite; ValueError naming what is wrong."""
    from linbench.runner.plan import count_points
    from linbench.sweep.spec import build_spec, read_suite, suite_command

    command = suite_command(path, read_suite(path))
    spec = build_spec({}, path, command)
    load_plugins([Path(p) for p in spec.plugins])
    return SuiteInfo(path.stem, path, first_comment(path), command, count_points(spec))


def suites_folder(folder: Path | None) -> Path:
    if folder is not None:
        if not folder.is_dir():
            raise CliUsageError(f"{str(folder)!r} is not a folder of suites")
        return folder
    for candidate in (Path("suites"), CHECKOUT_SUITES):
        if candidate.is_dir():
            return candidate
    raise CliUsageError("no suites folder here; name one: linbench suites DIR")


def suites_command(
    folder: Annotated[
        Path | None, typer.Argument(help="A folder of suite files. Default: ./suites, else linbench's own.")
    ] = None,
) -> None:
    """List the suites: what each reproduces, the command that runs it, and its point count."""
    with usage_errors():
        where = suites_folder(folder)
        found = [describe_suite(path) for path in sorted(where.glob("*.toml"))]
        if not found:
            raise CliUsageError(f"{str(where)!r} holds no suite (*.toml)")
    table = Table(title=f"suites in {where}", title_justify="left")
    for column in ("suite", "reproduces", "command", "points"):
        table.add_column(column, justify="right" if column == "points" else "left", no_wrap=column != "reproduces")
    for info in found:
        table.add_row(info.name, escape(info.summary), info.command, str(info.points))
    console = stdout_console()
    console.print(table)
    console.print(f"run one with: linbench run --suite {where}/NAME.toml (decode suites: linbench decode --suite ...)")
