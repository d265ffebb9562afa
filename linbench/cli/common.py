"""Parsing shared by the commands: devices, dtypes, comma lists, and the output consoles.

torch is imported inside the functions so that merely building the CLI (``--help``)
never pays for it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from linbench.cli.errors import CliUsageError
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
]

DEVICE_HELP = "auto (cuda when available, else cpu), cpu, cuda or cuda:N"
REPORT_FORMATS = ("table", "md", "json")


PLUGIN_HELP = "A Python file that registers variants (repeatable)."


def load_plugins(paths: list[Path] | None) -> None:
    """Import each ``--plugin`` file; a missing or broken file is a usage error (PluginError)."""
    from linbench.plugins import load_plugin_file

    for path in paths or ():
        load_plugin_file(path)


def resolve_device(spec: str) -> torch.device:
    """The device for ``--device``; CliUsageError when it is unknown or absent here."""
    import torch

    spec = spec.strip().lower()
    if spec == "auto":
        spec = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        device = torch.device(spec)
    except RuntimeError:
        raise CliUsageError(f"unknown device {spec!r}; use {DEVICE_HELP}") from None
    if device.type == "cpu":
        return device
    if device.type != "cuda":
        raise CliUsageError(f"unsupported device {spec!r}; use {DEVICE_HELP}")
    if not torch.cuda.is_available():
        why = f"torch {torch.__version__} is a CPU-only build" if torch.version.cuda is None else "no GPU was found"
        raise CliUsageError(f"--device {spec}: CUDA is not available on this machine ({why})")
    count = torch.cuda.device_count()
    if device.index is not None and device.index >= count:
        raise CliUsageError(f"--device {spec}: there is no such GPU; this machine has {count} (cuda:0..{count - 1})")
    # Always name the GPU: results from "cuda" and "cuda:0" must compare as the same device.
    return device if device.index is not None else torch.device("cuda", torch.cuda.current_device())


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
