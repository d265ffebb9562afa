"""The fork server as a fork of the command's own process, once it holds the worker's imports.

multiprocessing's fork server is a fresh interpreter that imports torch, the worker module and
the built-in variants before it forks a worker: 1.5-1.6 s of CPU on the 2-core development
machine, which every ``linbench run`` paid a second time, since the command imports the same
modules to plan its sweep. Forked from the command right after those imports, before it has
run a single torch op, touched CUDA or started a thread, the server holds them already, at the
cost of a fork: a run's imports cost half the CPU, and on a machine with no idle core they no
longer take turns with the server's.

The server forked here runs multiprocessing's own server loop (``forkserver.main``), with the
listening socket and the "alive" pipe set up as ``ForkServer.ensure_running`` sets them up, so
the workers are started, watched and ended exactly as with a spawned server. That loop's
signature and the ``ForkServer`` fields it fills are private to CPython: where they are not
the ones this was written against (3.10-3.13), or the process is not in a state to be forked
(a second thread, CUDA initialised), the caller spawns the server as before.
"""

from __future__ import annotations

import contextlib
import inspect
import multiprocessing.forkserver as forkserver
import os
import socket
import sys
import threading
import traceback
from multiprocessing import connection, resource_tracker, util
from typing import Any, cast

_SERVER_PARAMETERS = ["listener_fd", "alive_r", "preload", "main_path", "sys_path"]
_SERVER_FIELDS = ("_forkserver_address", "_forkserver_alive_fd", "_forkserver_pid")


def can_fork_server() -> bool:
    """Whether this Python's fork server can be run in a fork (its private API as expected)."""
    server = getattr(forkserver, "_forkserver", None)
    if not hasattr(os, "fork") or server is None or not all(hasattr(server, f) for f in _SERVER_FIELDS):
        return False
    return list(inspect.signature(forkserver.main).parameters) == _SERVER_PARAMETERS


def fork_server(imported: str) -> bool:
    """Fork the fork server from this process, which must hold ``imported`` (the worker module);
    False, changing nothing, where it cannot be: a server already runs, the API differs, the
    module is not imported, another thread runs or CUDA is initialised (a fork would inherit
    a broken copy of either)."""
    server: Any = forkserver._forkserver  # its fields are private: not in the stubs
    if server._forkserver_pid is not None or not can_fork_server() or imported not in sys.modules:
        return False
    torch = sys.modules.get("torch")
    if threading.active_count() > 1 or (torch is not None and torch.cuda.is_initialized()):
        return False
    resource_tracker.ensure_running()  # as ensure_running does: the workers share the tracker
    with socket.socket(socket.AF_UNIX) as listener:
        address = cast(Any, connection).arbitrary_address("AF_UNIX")
        listener.bind(address)
        if not util.is_abstract_socket_namespace(address):
            os.chmod(address, 0o600)
        listener.listen()
        alive_r, alive_w = os.pipe()  # the server ends when every holder of alive_w has
        for stream in (sys.stdout, sys.stderr):  # nothing buffered is written twice
            stream.flush()
        pid = os.fork()
        if pid == 0:
            _serve(listener.fileno(), alive_r)
        os.close(alive_r)
    server._forkserver_address = address
    server._forkserver_alive_fd = alive_w
    server._forkserver_pid = pid
    return True


def _serve(listener_fd: int, alive_r: int) -> None:
    """The forked server: only its socket, its end of the alive pipe and the standard streams
    stay open (as a spawned server's), then multiprocessing's loop until the command ends.
    Never returns: the command's atexit handlers and buffers are not the server's."""
    status = 0
    try:
        _close_fds_but({0, 1, 2, listener_fd, alive_r})
        forkserver.main(listener_fd, alive_r, [], None, None)
    except SystemExit:  # the loop's end: every client is gone
        pass
    except BaseException:
        traceback.print_exc()
        status = 1
    finally:
        os._exit(status)


def _close_fds_but(keep: set[int]) -> None:
    """Close every file descriptor of this process but ``keep``."""
    try:
        opened = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        opened = list(range(os.sysconf("SC_OPEN_MAX") if hasattr(os, "sysconf") else 1024))
    for fd in opened:
        if fd not in keep:
            with contextlib.suppress(OSError):  # the listing's own descriptor, or one never open
                os.close(fd)
