"""Helpers for the CLI tests (a module apart from conftest.py, whose name is not unique)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

import torch
from typer.testing import Result

from linbench.variants.registry import Impl, Variant

PLANTED = "planted_for_cli_tests"
Invoke = Callable[..., Result]
# The commands whose --device defaults to auto: cuda wherever CUDA is present.
DEVICE_COMMANDS = ("run", "decode", "check", "list", "ab")


def assert_device_stated(args: Sequence[object]) -> None:
    """Refuse a run, decode, check or list that leaves the device to ``auto``.

    A test written on a CPU machine would otherwise run on CUDA wherever CUDA is present:
    other timings, other tables, minutes of GPU sweeps. ``--resume`` takes the device of
    the run folder it finishes, and ``--help`` runs nothing.
    """
    words = [str(arg) for arg in args]
    if not words or words[0] not in DEVICE_COMMANDS:
        return
    if not {"--device", "--resume", "--help"} & set(words):
        raise AssertionError(f"linbench {words[0]} without --device: say which device the test means ({words})")


def linbench_argv(*args: object) -> list[str]:
    """The command line of ``python -m linbench ARGS`` for a subprocess, its device stated."""
    assert_device_stated(args)
    return [sys.executable, "-m", "linbench", *map(str, args)]


def _scaled(factor: float) -> Callable[..., torch.Tensor]:
    # q and k enter with weight zero so that autograd has a gradient for every input.
    def fn(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool) -> torch.Tensor:
        return v * factor + 0.0 * (q + k).sum(-1, keepdim=True)

    return fn


def _impl(name: str, factor: float, availability: Callable[[torch.device], str | None] | None = None) -> Impl:
    return Impl(name, _scaled(factor), f"v times {factor}", "O(sd)", "O(sd)", availability=availability)


def planted_variant() -> Variant:
    """A variant whose ``wrong`` impl is 10% off and whose ``away`` impl runs nowhere."""
    return Variant(
        name=PLANTED,
        summary="O = V",
        impl_list=(_impl("ref", 1.0), _impl("wrong", 1.1), _impl("away", 1.0, lambda device: "needs a planted chip")),
        reference="ref",
        param_specs=(),
        flop_formula=lambda *args: 0.0,
        time_complexity="O(1)",
        memory_complexity="O(1)",
    )


def assert_usage_error(result: Result, *fragments: str) -> None:
    """Exit 2 with exactly one ``linbench: error:`` line on stderr and no traceback."""
    assert result.exit_code == 2, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("linbench: error: ")
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in lines[0]
