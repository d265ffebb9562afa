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

import functools
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
import typer.main
import typer.testing
from _pytest.mark.structures import ParameterSet
from shared_modules import SHARED_MODULES

# One torch thread per test process: the suite's numeric tests are small, and two threads
# per process on a two-core machine (or beside other work) make each op wait at a barrier
# for a descheduled sibling. A test that needs more threads sets them itself.
torch.set_num_threads(1)

# Typer's CliRunner builds the app's click command anew on every invoke: every command's options
# from its signature and annotations, about 55 ms, a third of the CLI tests' time (they invoke the
# app some thousand times). Built once per test process instead: the app is complete once imported,
# and no test changes it (what a command calls can still be monkeypatched; a command function
# replaced in its module would not be seen, and no test replaces one).
typer.testing._get_command = functools.cache(typer.main.get_command)  # type: ignore[attr-defined]

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


# The tests run in parallel worker processes (pytest-xdist: `-n auto --dist loadgroup` in
# pyproject.toml), one more than the cores; SHARED_MODULES (tests/shared_modules.py) run in one.
# At most this many workers: each imports torch (a few hundred MB) and many tests start
# processes of their own, so more buy memory use rather than time.
MOST_WORKERS = 4


def pytest_configure(config: pytest.Config) -> None:
    """In a parallel worker, Ctrl-C as in a plain pytest process: xdist's workers ignore SIGINT
    (their controller handles it), and an ignored signal is inherited by every process a test
    starts, so a `linbench run` a test interrupts would never see its Ctrl-C."""
    if hasattr(config, "workerinput"):
        signal.signal(signal.SIGINT, signal.default_int_handler)
    _private_autotune_store()


def _private_autotune_store() -> None:
    """Triton's autotune choices kept in a folder of this test process's own, inherited by every
    process a test starts: never the user's store (~/.cache/linbench/autotune), where a choice
    an earlier run kept would stand in for the tuning a test asserts on."""
    folder = tempfile.mkdtemp(prefix="linbench-autotune-")
    os.environ["LINBENCH_AUTOTUNE_DIR"] = folder
    _REMOVED_AT_EXIT.append(folder)


_REMOVED_AT_EXIT: list[str] = []


def pytest_unconfigure(config: pytest.Config) -> None:
    for folder in _REMOVED_AT_EXIT:
        shutil.rmtree(folder, ignore_errors=True)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto``: one worker more than the cores this process may run on, at most MOST_WORKERS;
    none (the tests run in this process) on one core. The long tests wait on what no core of
    theirs is busy with (Slurm's scheduler, Ray's daemons, a process starting, a kill's grace),
    and the extra worker fills those waits: on two cores the suite took 3 min 53 s in three
    workers against 4 min 11 s in two, and beside a process spinning on one core 5 min 5 s
    against 5 min 33 s (back to back, 2026-11-25). Not fewer on a busy machine: on two cores
    shared with other jobs the suite took 9.6 minutes in two workers and 11.7 minutes for its
    first sixth in one process. PYTEST_XDIST_AUTO_NUM_WORKERS, or ``-n N``, sets the count by
    hand."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # xdist's own hook reads it
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return min(MOST_WORKERS, cores + 1) if cores >= 2 else 0


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist loadgroup`: each test on the first free worker, the tests of SHARED_MODULES'
    groups on one worker, one after the other."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class SharedModulesScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return SHARED_MODULES.get(nodeid.split("::", 1)[0], nodeid)

    return SharedModulesScheduling(config, log)


def _module(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


EXTENDED_OPTION = "--extended"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        EXTENDED_OPTION,
        action="store_true",
        help="also run the tests marked extended (the long end-to-end runs and full matrices CI's suite leaves to "
        "the extended workflow: .ci/run --extended)",
    )


def extended(config: pytest.Config) -> bool:
    """Whether this session runs the extended tests too (``--extended``)."""
    return bool(config.getoption(EXTENDED_OPTION))


# The matrices CI's suite runs at half their crossings: every row (an impl, a family) runs, at
# every other crossing of the other parameters, alternating from row to row, so each crossing
# runs for half of the rows; --extended runs them all. Every impl is still proven in CI at each
# shape, mask, dtype and length it is listed with, only not at every crossing of them.
HALVED_MATRICES = {
    "tests/variants/test_equivalence.py::test_impl_matches_reference",
    "tests/variants/test_heads.py::test_impl_matches_reference_on_grouped_heads",
    "tests/variants/test_head_dims.py::test_impl_matches_reference_at_large_head_dims",
    "tests/variants/test_gated_forms.py::test_chunked_equals_the_recurrent_reference",
    "tests/variants/test_gated_forms.py::test_quadratic_equals_the_recurrent_reference",
}


def _in_the_other_half(item: pytest.Item) -> bool:
    """Whether ``item`` is a crossing of a halved matrix that only --extended runs: the sum of
    the positions of its values in their parametrize marks' lists is odd."""
    callspec = getattr(item, "callspec", None)
    if callspec is None or item.nodeid.split("[", 1)[0] not in HALVED_MATRICES:
        return False
    return sum(_position(mark, callspec.params) for mark in item.iter_markers("parametrize")) % 2 == 1


def _position(mark: pytest.Mark, params: dict[str, Any]) -> int:
    """Where the item's values stand in ``mark``'s list of values."""
    names = [name.strip() for name in mark.args[0].split(",")] if isinstance(mark.args[0], str) else list(mark.args[0])
    wanted = tuple(params[name] for name in names)
    for position, value in enumerate(mark.args[1]):
        values = value.values if isinstance(value, ParameterSet) else (value if len(names) > 1 else (value,))
        if tuple(values) == wanted:
            return position
    raise LookupError(f"{wanted} is not among the values of {names}")


def _extended_only(item: pytest.Item) -> bool:
    return item.get_closest_marker("extended") is not None or _in_the_other_half(item)


def _named_files(config: pytest.Config) -> set[Path]:
    """The test files named on the command line (alone or by a test in them): they run whole,
    their extended tests too, so that `pytest tests/fleet/test_ray.py` runs what it names."""
    files = {Path(config.invocation_params.dir, arg.split("::", 1)[0]).resolve() for arg in config.args}
    return {path for path in files if path.is_file()}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not extended(config):  # CI's suite: the extended tests are deselected, and counted so
        named = _named_files(config)
        left_out = [item for item in items if _extended_only(item) and item.path.resolve() not in named]
        if left_out:
            config.hook.pytest_deselected(items=left_out)
            dropped = set(map(id, left_out))
            items[:] = [item for item in items if id(item) not in dropped]
    if hasattr(config, "workerinput"):  # a worker: the long tests first, so none is left to run alone at the end
        items.sort(key=lambda item: item.get_closest_marker("slow") is None and _module(item) not in SHARED_MODULES)
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


SLURM_SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "slurm_local.sh"


@pytest.fixture(scope="session")
def slurm_conf(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A running single-node Slurm with 4 fake GPUs, shared by the Slurm tests (marked
    ``slurm``); its slurm.conf, for SLURM_CONF. Skips where it cannot run (not root, or
    Slurm's Debian packages missing: scripts/slurm_local.sh install)."""
    if os.geteuid() != 0 or not all(shutil.which(t) for t in ("slurmctld", "slurmd", "munged", "sbatch")):
        pytest.skip("needs root and Slurm's Debian packages (scripts/slurm_local.sh install)")
    folder = tmp_path_factory.mktemp("slurm")
    started = subprocess.run(["bash", str(SLURM_SCRIPT), "start", str(folder), "4"], capture_output=True, text=True)
    try:
        if started.returncode != 0:
            pytest.skip(f"Slurm would not start here: {started.stderr.strip()[-300:]}")
        yield str(folder / "slurm.conf")
    finally:
        subprocess.run(["bash", str(SLURM_SCRIPT), "stop", str(folder)], check=False)
