"""meta.json's provenance: what ran, on what, with which software — everything a reader needs
to trust or compare a results folder."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import shlex
import sys
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from linbench.machine.facts import cpu_model, device_info, git_commit_time, git_sha
from linbench.version import __version__

if TYPE_CHECKING:
    import torch


def collect_meta(argv: list[str], device: torch.device) -> dict[str, Any]:
    """The run's provenance, recorded before the first point."""
    import torch

    return {
        "command": shlex.join(["linbench", *argv]),
        "linbench_version": __version__,
        "git_sha": git_sha(),
        "git_commit_time": git_commit_time(),
        "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "hostname": platform.node(),
        **device_info(device),
        **optional_library_versions(),
    }


def optional_library_versions() -> dict[str, str]:
    """Versions of the optional libraries the registered impls declare (``Impl.library``),
    where installed: ``{"fla_core": "0.6.0"}`` for the ``fla`` impls' fla-core, with whether
    fla's hand-off to other kernel libraries was off (``fla_backend_dispatch``) and those
    libraries' versions where installed (``flash_qla``, ``flash_kda``)."""
    from linbench.variants.registry import optional_libraries

    versions = {}
    for library in optional_libraries():
        version = installed_version(library)
        if version is not None:
            versions[library.replace("-", "_")] = version
    if "fla_core" in versions:  # whether an `fla` number is fla's own kernel, or another library's
        from linbench.variants.feature_forms.fla import dispatch_record

        versions |= dispatch_record()
    return versions


def installed_version(distribution: str) -> str | None:
    """The installed version of ``distribution``, or None when it is not installed."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None
