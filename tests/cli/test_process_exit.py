"""A command's process ends without the interpreter's teardown once torch is loaded (device:
cpu, none used): its exit status, its output and its atexit handlers stay what they were.

Each test runs the console-script entry point in a fresh interpreter (the teardown is a
process's own: skipping it in the test process would end pytest), so each pays torch's import
(about 2 s here).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from linbench import __version__
from linbench.cli.process_exit import exit_status

# The entry point as the ``linbench`` script calls it, in a process that holds an object whose
# finalizer runs only in the interpreter's teardown, and an atexit handler that must run;
# torch imported here stands for a measuring command's (the cheapest commands then suffice).
ENTRY = """
import atexit, sys
import torch  # loaded by every measuring command; here without measuring anything

class Marker:
    def __del__(self):
        print("teardown ran", flush=True)

marker = Marker()
atexit.register(lambda: print("atexit ran"))  # buffered: the flush before the exit writes it
from linbench.cli import main
sys.argv = ["linbench", *sys.argv[1:]]
main()
print("main returned")
"""


def _entry(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", ENTRY, *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_a_process_that_loaded_torch_exits_without_the_teardown_and_keeps_its_output() -> None:
    done = _entry("--version")
    assert done.returncode == 0, done.stderr
    # The command's whole output reached the pipe, then atexit's.
    assert done.stdout == f"linbench {__version__}\natexit ran\n"
    assert "teardown ran" not in done.stdout
    assert "main returned" not in done.stdout  # the process ended in main


def test_a_usage_error_keeps_its_status_and_its_line() -> None:
    done = _entry("list", "--no-such-option")
    assert done.returncode == 2
    assert done.stderr.strip().startswith("linbench: error:"), done.stderr
    assert "atexit ran" in done.stdout and "teardown ran" not in done.stdout


@pytest.mark.parametrize(("code", "status"), [(None, 0), (0, 0), (2, 2), ("a message", 1)])
def test_the_status_is_pythons_for_each_kind_of_exit_code(code: object, status: int) -> None:
    assert exit_status(code) == status
