"""Parsing shared by the commands: devices (linbench/devices.py), dtypes, comma lists, and the output consoles.

torch is imported inside the functions so that merely building the CLI (``--help``)
never pays for it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from linbench.cli.errors import CliUsageError
from linbench.devices import DEVICE_HELP, resolve_device
from linbench.dtypes import parse_dtypes, split_list, torch_dtype

if TYPE_CHECKING:
    import torch

# Re-exported: the commands import their parsing helpers from here.
__all__ = [
    "DEVICE_HELP",
    "PLUGIN_HELP",
    "REPORT_FORMATS",
    "load_plugins",
    "one_cpu_thread",
    "output_format",
    "parse_dtypes",
    "resolve_device",
    "split_list",
    "stdout_console",
    "torch_dtype",
    "warn_left_out",
]

REPORT_FORMATS = ("table", "md", "json")


PLUGIN_HELP = "A Python file that registers variants (repeatable)."
KV_HEADS_HELP = (
    "Key/value heads, each dividing every --heads (fewer: grouped-query attention, 1: multi-query). "
    "Default: as many as --heads."
)
V_HEADS_HELP = (
    "Value heads, each a multiple of every --heads (more: GVA, as Qwen3-Next's Gated DeltaNet; the state, "
    "gates and beta per value head). Gated and delta-rule variants only. Default: as many as --heads."
)
PRESET_HELP = (
    "A model's attention shape (heads, kv-heads, dim, lengths), or a linear-attention hybrid's two layer kinds "
    "(qwen3-next-80b, kimi-linear-48b, minimax-m1, ...: report then gives the model's cost); flags override it. "
    "linbench suites lists them."
)
GATES_HELP = (
    "The gate profile of every gated variant of the run: weak, strong, production (-exp(A_log) * "
    "softplus(x + dt_bias), as Mamba2 / Gated DeltaNet / Kimi Linear compute it) or lower-bound (KDA's -5 bound); "
    "a variant whose gate lacks it is refused. --param V.gate_regime=... sets one variant's."
)
TP_HELP = (
    "N-way tensor parallelism: the preset's head counts as one rank holds them (each must divide by N; "
    "key/value heads fewer than N are replicated, one per rank)."
)


def load_plugins(paths: list[Path] | None) -> None:
    """Import each ``--plugin`` file; a missing or broken file is a usage error (PluginError)."""
    from linbench.variants.plugins import load_plugin_file

    for path in paths or ():
        load_plugin_file(path)


def stdout_console() -> Console:
    """A console for tables; when piped, wide enough that tables are not squeezed to 80 columns."""
    console = Console(highlight=False)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = 200
    return console


@contextmanager
def one_cpu_thread(device: torch.device) -> Iterator[None]:
    """Run torch single-threaded on CPU for the block, then restore the thread count.

    The checked shapes are tiny, so a thread pool only adds synchronisation: one thread is
    several times faster, and on a busy 2-core machine the pool's spinning threads made the
    default matrix 70x slower (80 s against 1 s).
    """
    import torch

    threads = torch.get_num_threads()
    if device.type == "cpu":
        torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def output_format(chosen: str, as_json: bool) -> str:
    """The format of ``report`` and ``compare`` from ``--format`` and its ``--json`` alias."""
    name = chosen.strip().lower()
    if name not in REPORT_FORMATS:
        raise CliUsageError(f"unknown --format {chosen!r}; use {', '.join(REPORT_FORMATS)}")
    if as_json and name not in ("table", "json"):
        raise CliUsageError(f"--json and --format {name} contradict each other; give one")
    return "json" if as_json else name


def warn_left_out(warnings: Iterable[str]) -> None:
    """Each line naming rows a reader left out (torn or malformed: linbench/results/rows.py), on
    stderr, so the report or figure on stdout stays what it was."""
    import typer

    for line in warnings:
        typer.echo(f"warning: {line}", err=True)


# Set by the console-script entry point (main): this process is the command, so its start is
# the command's. The app run inside a longer-lived process (a test's CliRunner) leaves it unset.
_COMMAND_PROCESS: dict[str, bool] = {"this": False}


def mark_command_process() -> None:
    """This process runs one command, from its start (linbench.cli.main)."""
    _COMMAND_PROCESS["this"] = True


def is_command_process() -> bool:
    """Whether this process runs one linbench command from its start (not a host process, such
    as a test or a notebook, that calls the command line in-process)."""
    return _COMMAND_PROCESS["this"]


def command_began() -> float | None:
    """When this command began, on time.monotonic's clock: its process's start (Python and the
    imports included) where the process is the command; None otherwise, or where the OS does
    not say when a process started."""
    from linbench.machine.process_age import process_age_s

    age = process_age_s() if _COMMAND_PROCESS["this"] else None
    return None if age is None else time.monotonic() - age
