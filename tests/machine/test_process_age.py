"""process_age_s: how long this process has existed, by the kernel's record of its start."""

from __future__ import annotations

import subprocess
import sys

from linbench.machine.process_age import process_age_s

# /proc counts a process's start in clock ticks (10 ms): a reading may fall short by one.
TICK_S = 0.011


def test_a_fresh_process_is_at_least_as_old_as_the_time_its_own_code_waited() -> None:
    """Whatever the machine's load, a process that slept 0.3 s is older than 0.3 s: the age
    counts from its start, the interpreter's start and imports included."""
    code = (
        "import time; began = time.monotonic(); time.sleep(0.3)\n"
        "from linbench.machine.process_age import process_age_s\n"
        "print(process_age_s(), time.monotonic() - began)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    age, waited = (float(word) for word in done.stdout.split())
    assert age >= waited - TICK_S


def test_this_process_has_an_age() -> None:
    age = process_age_s()
    assert age is not None and age > 0
