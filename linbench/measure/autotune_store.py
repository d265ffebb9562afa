"""Triton autotune choices kept on disk, keyed by the point they were tuned at.

Triton's own on-disk autotune cache (``cache_results``, which fla-core 0.6.0 turns on through
``FLA_CACHE_RESULTS``) keys a choice by the kernel's autotune key alone, and fla's keys leave the
sequence length out: a config tuned at 16 tokens would be read back at 16k. This store keys a
choice by its *scope* (the point: shape, length, dtype, mode, device, library versions, as the
runner spells it) and, inside a scope, by the kernel and its autotune key: a later process of the
same point reads the choice back instead of tuning again, and no other point ever sees it.

One JSON file per scope, written whole and atomically (a reader never sees half a file), with a
lock file beside it: the first process to tune a scope holds the lock while it compiles and tunes,
and the others wait for it, then read (measure/autotune.py). ``linbench warm`` fills the store
ahead of a run.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

# Where the store lives: this variable's folder, else the user's cache folder.
FOLDER_VARIABLE = "LINBENCH_AUTOTUNE_DIR"
# A scope's file: {"scope": text, "kernels": {kernel id: {key as JSON: config}}, "tune_s": ..., "compile_s": ...}
Entries = dict[str, dict[str, dict[str, Any]]]


def default_folder() -> Path:
    """$LINBENCH_AUTOTUNE_DIR, else $XDG_CACHE_HOME/linbench/autotune (~/.cache by default)."""
    given = os.environ.get(FOLDER_VARIABLE)
    if given:
        return Path(given)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "linbench" / "autotune"


class ConfigStore:
    """The autotune choices of every scope tuned on this machine, in ``folder``."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder if folder is not None else default_folder()

    def path(self, scope: str) -> Path:
        return self.folder / f"{_digest(scope)}.json"

    def has(self, scope: str) -> bool:
        """Whether a process has tuned ``scope`` here before (a read-only look)."""
        return self.path(scope).is_file()

    def read(self, scope: str) -> dict[str, Any]:
        """The scope's file as written ({} where there is none or it does not read)."""
        try:
            data = json.loads(self.path(scope).read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) and data.get("scope") == scope else {}

    def load(self, scope: str) -> Entries:
        """The configs kept for ``scope``: kernel id → autotune key (JSON) → config."""
        kernels = self.read(scope).get("kernels")
        return kernels if isinstance(kernels, dict) else {}

    def save(self, scope: str, entries: Entries, tune_s: float, compile_s: float) -> None:
        """Add ``entries`` to the scope's file, and the seconds their tuning took to its tally;
        a store that cannot be written is skipped (the choice is then made again next time)."""
        if not entries:
            return
        old = self.read(scope)
        kernels: Entries = old.get("kernels", {}) if isinstance(old.get("kernels"), dict) else {}
        for kernel, keys in entries.items():
            kernels.setdefault(kernel, {}).update(keys)
        data = {
            "scope": scope,
            "kernels": kernels,
            "tune_s": round(float(old.get("tune_s", 0.0)) + tune_s, 3),
            "compile_s": round(float(old.get("compile_s", 0.0)) + compile_s, 3),
        }
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile("w", dir=self.folder, suffix=".tmp", delete=False) as handle:
                json.dump(data, handle, sort_keys=True)
            os.replace(handle.name, self.path(scope))
        except OSError:
            return

    @contextmanager
    def first_tuning(self, scope: str) -> Iterator[None]:
        """Held while a process compiles and tunes ``scope``: another process of the same scope
        on this machine waits here, then finds the choices in the store. Without a writable
        folder, nothing is held."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            handle = open(self.folder / f"{_digest(scope)}.lock", "w")  # noqa: SIM115 (held across the yield)
        except OSError:
            yield
            return
        with handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)


def _digest(scope: str) -> str:
    return hashlib.sha256(scope.encode()).hexdigest()[:32]
