"""The end of a command's process, without the interpreter's teardown once torch is loaded.

After a run, Python's finalization (freeing every module's objects, torch's among them, one
by one) took 1.0-1.1 s of CPU at load 6 on the 2-core development machine, after the run's
last line and before the shell saw the exit (strace: no system call in that second). The
operating system takes the memory back at once; what must happen at exit still does: the
``atexit`` handlers (multiprocessing's clean-up of the fork server and its temporary folder,
logging's flush) run, and the standard streams are flushed, before ``os._exit``.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading


def teardown_worth_skipping() -> bool:
    """Whether this process has a teardown worth skipping (torch is loaded) and nothing that
    a normal exit would wait for (a thread other than the main one and daemon threads)."""
    if "torch" not in sys.modules:
        return False
    main = threading.main_thread()
    return all(thread is main or thread.daemon for thread in threading.enumerate())


def exit_status(code: object) -> int:
    """The process's exit status for ``SystemExit(code)``, as Python gives it: None is 0, an
    int itself, anything else printed to stderr and 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def exit_now(code: object) -> None:
    """End the process with ``code``'s status: atexit handlers, then the streams, then
    ``os._exit`` (module doc)."""
    status = exit_status(code)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe or stream: nothing to write to
            stream.flush()
    os._exit(status)
