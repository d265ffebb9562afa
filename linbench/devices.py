"""The device a command runs on: ``--device auto``, ``cpu``, ``cuda`` or ``cuda:N``, checked
against this machine.

torch is imported inside the function so that importing this module (the CLI does, for
``--help``) never pays for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

DEVICE_HELP = "auto (cuda when available, else cpu), cpu, cuda or cuda:N"


class DeviceError(ValueError):
    """A device that is unknown or absent on this machine; the message says which exist."""


def resolve_device(spec: str) -> torch.device:
    """The device ``spec`` names; DeviceError when it is unknown or absent here."""
    import torch

    spec = spec.strip().lower()
    if spec == "auto":
        spec = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        device = torch.device(spec)
    except RuntimeError:
        raise DeviceError(f"unknown device {spec!r}; use {DEVICE_HELP}") from None
    if device.type == "cpu":
        return device
    if device.type != "cuda":
        raise DeviceError(f"unsupported device {spec!r}; use {DEVICE_HELP}")
    if not torch.cuda.is_available():
        why = f"torch {torch.__version__} is a CPU-only build" if torch.version.cuda is None else "no GPU was found"
        raise DeviceError(f"--device {spec}: CUDA is not available on this machine ({why})")
    count = torch.cuda.device_count()
    if device.index is not None and device.index >= count:
        raise DeviceError(f"--device {spec}: there is no such GPU; this machine has {count} (cuda:0..{count - 1})")
    # Always name the GPU: results from "cuda" and "cuda:0" must compare as the same device.
    return device if device.index is not None else torch.device("cuda", torch.cuda.current_device())


__all__ = ["DEVICE_HELP", "DeviceError", "resolve_device"]
