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
from linbench.sweep.suites import SUITE_DIRS


@dataclass(frozen=True)
class SuiteInfo:
    name: str
    path: Path
    summary: str
    command: str
    points: int | None
    broken: str | None = None  # why the file cannot be read or planned


def read_suite_info(path: Path) -> SuiteInfo:
    """describe_suite, or a SuiteInfo marked broken with the reason, so that one bad file does
    not hide the others."""
    try:
        return describe_suite(path)
    except (ValueError, CliUsageError, OSError) as exc:
        reason = " ".join(str(exc).split())
        for prefix in (f"suite file {str(path)!r}: ", f"suite file {str(path)!r} "):
            reason = reason.removeprefix(prefix)
        return SuiteInfo(path.stem, path, "", "-", None, reason)


def first_comment(path: Path) -> str:
    """The suite's first comment line: what it reproduces, in one line."""
    for line in path.read_text().splitlines():
        if line.strip().startswith("#"):
            return line.strip().lstrip("#").strip()
    return ""


def describe_suite(path: Path) -> SuiteInfo:
    """Name, summary, command and point count of one suite; ValueError naming what is wrong."""
    from linbench.runner.plan import count_points
    from linbench.sweep.request import SweepRequest
    from linbench.sweep.spec import build_spec
    from linbench.sweep.suites import read_suite, suite_command

    command = suite_command(path, read_suite(path))
    spec = build_spec(SweepRequest(suite=path, command=command))
    load_plugins([Path(p) for p in spec.plugins])
    return SuiteInfo(path.stem, path, first_comment(path), command, count_points(spec))


def suites_folder(folder: Path | None) -> Path:
    if folder is not None:
        if not folder.is_dir():
            raise CliUsageError(f"{str(folder)!r} is not a folder of suites")
        return folder
    for candidate in SUITE_DIRS:
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
        found = [read_suite_info(path) for path in sorted(where.glob("*.toml"))]
        if not found:
            raise CliUsageError(f"{str(where)!r} holds no suite (*.toml)")
    table = Table(title=f"suites in {where}", title_justify="left")
    for column in ("suite", "reproduces", "command", "points"):
        table.add_column(column, justify="right" if column == "points" else "left", no_wrap=column != "reproduces")
    for info in found:
        summary = escape(info.summary) if info.broken is None else f"[red]broken[/]: {escape(info.broken)}"
        table.add_row(info.name, summary, info.command, "-" if info.points is None else str(info.points))
    console = stdout_console()
    console.print(table)
    broken = [info.path.name for info in found if info.broken is not None]
    if broken:
        console.print(f"{len(broken)} suite(s) cannot be read: {', '.join(broken)}", markup=False, soft_wrap=True)
    # A name finds a suite of the folders --suite looks in; another folder's suites need their path.
    named = any(where.resolve() == d.resolve() for d in SUITE_DIRS if d.is_dir())
    how = "NAME" if named else f"{where}/NAME.toml"
    console.print(f"run one with: linbench run --suite {how} (decode suites: linbench decode --suite {how})")
    console.print(presets_table())
    console.print(hybrids_table())
    console.print(
        "use one with: linbench run --preset NAME (or decode) [--tp N]; --heads, --seq and the rest override it; "
        "report gives a hybrid's model-level cost"
    )


def presets_table() -> Table:
    """The model presets (linbench/sweep/presets.py): each one's attention shape and source."""
    from linbench.sweep.presets import PRESETS

    table = Table(title="presets (--preset NAME): one layer's attention shape", title_justify="left")
    for column in ("preset", "heads", "kv heads", "dim", "lengths", "source"):
        table.add_column(column, justify="right" if column in ("heads", "kv heads", "dim") else "left")
    for preset in PRESETS.values():
        cells = (preset.name, str(preset.heads), str(preset.kv_heads), str(preset.dim), preset.lengths)
        table.add_row(*cells, escape(preset.source))
    return table


def hybrids_table() -> Table:
    """The hybrid presets (linbench/hybrids.py): both layer kinds, their counts and the source."""
    from linbench.hybrids import HYBRIDS

    table = Table(title="hybrid presets (--preset NAME [--tp N]): linear layers + softmax layers", title_justify="left")
    for column in ("preset", "linear layers", "softmax layers", "lengths", "source"):
        table.add_column(column)
    for hybrid in HYBRIDS.values():
        linear, softmax = hybrid.linear, hybrid.softmax
        v_heads = f"/{linear.v_heads} v" if linear.v_heads and linear.v_heads != linear.heads else ""
        left = f"{linear.layers} × {linear.variant} {linear.heads}{v_heads} heads, {linear.dim}/{linear.dim_v}"
        right = f"{softmax.layers} × {softmax.heads} q/{softmax.kv_heads} kv heads, {softmax.dim}/{softmax.dim_v}"
        table.add_row(hybrid.name, left, right, hybrid.lengths, escape(hybrid.source))
    return table
