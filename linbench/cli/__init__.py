"""The ``linbench`` command line.

No command module imports torch at the top: torch, and every variant module that imports it,
are imported inside the command's function (a test runs ``--help`` and finds torch unimported),
so ``linbench --help`` answers at once.
"""

from __future__ import annotations

import pathlib
import typing
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import typer
from typer.core import TyperCommand, TyperGroup

from linbench.cli.ab_cmd import ab_command
from linbench.cli.budget_cmd import budget_command
from linbench.cli.build_cmd import build_command
from linbench.cli.check_cmd import check_command
from linbench.cli.common import mark_command_process
from linbench.cli.compare_cmd import compare_command
from linbench.cli.decode_cmd import decode_command
from linbench.cli.doctor_cmd import doctor_command
from linbench.cli.errors import exit_usage_error
from linbench.cli.history_cmd import history_command
from linbench.cli.list_cmd import list_command
from linbench.cli.merge_cmd import merge_command
from linbench.cli.plot_cmd import plot_command
from linbench.cli.process_exit import exit_now, teardown_worth_skipping
from linbench.cli.profile_cmd import profile_command
from linbench.cli.report_cmd import report_command
from linbench.cli.run_cmd import run_command
from linbench.cli.suites_cmd import suites_command
from linbench.cli.warm_cmd import warm_command

__all__ = ["app", "main"]


@contextmanager
def _one_line_usage_errors() -> Iterator[None]:
    """Typer's own usage errors (an unknown option, a missing argument or value) as linbench's
    one line and exit 2, not a boxed panel; the bare command still prints its help."""
    from typer._click.exceptions import NoArgsIsHelpError, UsageError

    try:
        yield
    except NoArgsIsHelpError:
        raise
    except UsageError as exc:
        where = f"; see {exc.ctx.command_path} --help" if exc.ctx is not None else ""
        exit_usage_error(exc.format_message().rstrip(".") + where)


class LinbenchGroup(TyperGroup):
    """The command group, with usage errors reported the linbench way."""

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any) -> Any:
        with _one_line_usage_errors():
            return super().make_context(info_name, args, parent, **extra)

    def invoke(self, ctx: Any) -> Any:
        with _one_line_usage_errors():
            return super().invoke(ctx)


class LinbenchCommand(TyperCommand):
    """A command that refuses an option of one value given more than once: Typer would keep
    the last one silently (``--seq 64 --seq 128`` sweeping 128 alone)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        raw, _, order = self.make_parser(ctx).parse_args(args=list(args))
        for param in self.get_params(ctx):
            single = param.param_type_name == "option" and not param.multiple and not getattr(param, "is_flag", False)
            count = sum(1 for seen in order if seen is param)
            if single and count > 1:
                ctx.fail(f"{param.opts[0]} given {count} times; give it once")
            _refuse_empty_path(ctx, param, raw.get(param.name))
        return super().parse_args(ctx, args)


def _refuse_empty_path(ctx: Any, param: Any, given: Any) -> None:
    """An empty path ('') fails: as a Path it would be the current folder (compare RUN '' run
    from inside a run folder compared against that run)."""
    values = given if isinstance(given, (list, tuple)) else [given]
    if "" in values and _is_path_param(param):
        name = param.opts[0] if param.param_type_name == "option" else str(param.name).upper()
        ctx.fail(f"{name} is an empty path; give a file or folder")


def _is_path_param(param: Any) -> bool:
    """Whether a parameter takes paths: its annotation where this Typer keeps one (0.2x's
    ``type_descriptor``), else its click type's name (older Typer's ``type``)."""
    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is not None:
        return _takes_paths(getattr(descriptor, "annotation", None))
    return getattr(getattr(param, "type", None), "name", None) == "path"


def _takes_paths(annotation: Any) -> bool:
    """Whether a parameter's annotation is a Path (Path | None, list[Path] included)."""
    return annotation is pathlib.Path or any(_takes_paths(inner) for inner in typing.get_args(annotation))


app = typer.Typer(
    cls=LinbenchGroup,
    name="linbench",
    help="Benchmark and check linear attention variants against softmax attention.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)


def _add(name: str, command: Callable[..., None]) -> None:
    """Register ``command``; the command list shows its docstring's first paragraph as one
    line of text, wrapped to the terminal (the list would keep the docstring's line breaks)."""
    summary = " ".join((command.__doc__ or "").split("\n\n")[0].split())
    app.command(name, short_help=summary, cls=LinbenchCommand)(command)


for _name, _command in (
    ("list", list_command),
    ("check", check_command),
    ("run", run_command),
    ("warm", warm_command),
    ("decode", decode_command),
    ("plot", plot_command),
    ("report", report_command),
    ("compare", compare_command),
    ("ab", ab_command),
    ("history", history_command),
    ("budget", budget_command),
    ("merge", merge_command),
    ("suites", suites_command),
    ("doctor", doctor_command),
    ("build", build_command),
    ("profile", profile_command),
):
    _add(_name, _command)


def _print_version(value: bool) -> None:
    if value:
        from linbench import __version__

        typer.echo(f"linbench {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Benchmark and check linear attention variants against softmax attention."""


def main() -> None:
    """Console-script entry point; the fixed name keeps usage lines right under ``python -m``.

    A command that loaded torch ends its process here without the interpreter's teardown
    (cli/process_exit.py: a second after a run); one that did not (``--help``, the reports)
    raises SystemExit as usual, so a caller in Python gets control back."""
    mark_command_process()
    try:
        app(prog_name="linbench")
    except SystemExit as done:
        if teardown_worth_skipping():
            exit_now(done.code)
        raise
    if teardown_worth_skipping():
        exit_now(0)
