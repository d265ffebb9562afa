"""Shared fixtures: the tests run on CPU unless a CUDA-marked test finds a GPU.

Where each test runs is stated, never left to the machine:
* tensors made without a device are CPU tensors whether or not CUDA is present (torch's
  default device, which no test changes);
* ``linbench run``, ``decode``, ``check`` and ``list`` pick CUDA wherever it is present
  unless told otherwise, so every test gives them ``--device`` (the CLI tests' helpers
  refuse one that does not: tests/cli/cli_helpers.py);
* a test that needs a GPU is marked ``cuda`` and is skipped where there is none.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

# One torch thread per test process: the suite's numeric tests are small, and two threads
# per process on a two-core machine (or beside other work) make each op wait at a barrier
# for a descheduled sibling. A test that needs more threads sets them itself.
torch.set_num_threads(1)

# Environment variables that change how rich lays out the CLI's tables: COLUMNS narrows
# them; the others make rich treat a pipe as a terminal, 80 columns wide unless COLUMNS says.
CONSOLE_VARIABLES = ("COLUMNS", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")


@pytest.fixture(autouse=True)
def _deterministic() -> None:
    torch.manual_seed(0)


@pytest.fixture(autouse=True)
def _piped_console(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI's output as a pipe gets it (tables 200 columns wide, no colour), whatever
    terminal width or colour forcing the machine running the tests exports: the tests read
    cells and lines out of those tables. Subprocesses inherit it."""
    for name in CONSOLE_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device; none is available here")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _registry_as_found() -> Iterator[None]:
    """Variants a test registers (a plugin loaded in-process by the CLI, a planted variant)
    leave with it, and so do the plugin files it loaded (a later test loading one imports it
    afresh): the next test sees the built-in variants and nothing else."""
    from linbench.variants import plugins, registry

    registry.list_variants()  # built-ins load once per process; keep them in the snapshot
    before, loaded = dict(registry._REGISTRY), dict(plugins._loaded)
    yield
    registry._REGISTRY.clear()
    registry._REGISTRY.update(before)
    plugins._loaded.clear()
    plugins._loaded.update(loaded)
