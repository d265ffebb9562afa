"""NVML read for the doctor: one snapshot of the device, and a sampler for a load.

Every reading is optional: a field NVML does not give (a driver without power readings,
a container without process visibility) stays None, and NVML missing altogether leaves
``available`` False with the reason in ``error``.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from linbench.measure.nvml import Periodic, load_nvml, nvml_handle, read_throttle_mask


def _try(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except Exception:
        return None


@dataclass
class Snapshot:
    sm_clock_mhz: int | None = None
    max_sm_clock_mhz: int | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    temp_c: int | None = None
    throttle_mask: int | None = None
    utilization_pct: int | None = None
    used_bytes: int | None = None
    processes: list[tuple[int, int | None]] = field(default_factory=list)  # (pid, used bytes)


class NvmlDevice:
    """NVML's view of torch's CUDA device ``index``; close() when done."""

    def __init__(self, index: int) -> None:
        self.error: str | None = None
        self.nvml: Any = None
        try:
            self.nvml = load_nvml()
            self.handle = nvml_handle(self.nvml, index)
        except Exception as exc:
            self.error = f"NVML unavailable: {type(exc).__name__}: {exc}"
            self.nvml = None

    @property
    def available(self) -> bool:
        return self.nvml is not None

    def close(self) -> None:
        if self.nvml is not None:
            _try(self.nvml.nvmlShutdown)
            self.nvml = None

    def used_bytes(self) -> int | None:
        if self.nvml is None:
            return None
        info = _try(self.nvml.nvmlDeviceGetMemoryInfo, self.handle)
        return None if info is None else int(info.used)

    def processes(self) -> list[tuple[int, int | None]]:
        """(pid, bytes used) of each compute process NVML sees on the device."""
        if self.nvml is None:
            return []
        found = _try(self.nvml.nvmlDeviceGetComputeRunningProcesses, self.handle) or []
        out = []
        for proc in found:
            used = getattr(proc, "usedGpuMemory", None)
            # NVML marks a figure it may not show (another container's process) as all ones.
            out.append((int(proc.pid), int(used) if isinstance(used, int) and used < (1 << 62) else None))
        return out

    def snapshot(self, *, full: bool = True) -> Snapshot:
        """The device now; ``full`` adds utilisation, memory and the process list."""
        shot = Snapshot()
        if self.nvml is None:
            return shot
        nvml, handle = self.nvml, self.handle
        shot.sm_clock_mhz = _try(nvml.nvmlDeviceGetClockInfo, handle, nvml.NVML_CLOCK_SM)
        power = _try(nvml.nvmlDeviceGetPowerUsage, handle)
        shot.power_w = None if power is None else power / 1000
        shot.temp_c = _try(nvml.nvmlDeviceGetTemperature, handle, nvml.NVML_TEMPERATURE_GPU)
        shot.throttle_mask = _try(read_throttle_mask, nvml, handle)
        if full:
            shot.max_sm_clock_mhz = _try(nvml.nvmlDeviceGetMaxClockInfo, handle, nvml.NVML_CLOCK_SM)
            limit = _try(nvml.nvmlDeviceGetEnforcedPowerLimit, handle)
            shot.power_limit_w = None if limit is None else limit / 1000
            rates = _try(nvml.nvmlDeviceGetUtilizationRates, handle)
            shot.utilization_pct = None if rates is None else int(rates.gpu)
            shot.used_bytes = self.used_bytes()
            shot.processes = self.processes()
        return shot


@dataclass
class LoadSampler:
    """Context manager: samples clock, power, temperature and throttling every ``interval_s``
    on a background thread while a load runs."""

    device: NvmlDevice
    interval_s: float = 0.02
    shots: list[Snapshot] = field(default_factory=list)
    _periodic: Periodic | None = field(default=None, repr=False)

    def __enter__(self) -> LoadSampler:
        if self.device.available:
            self._periodic = Periodic(self._sample, self.interval_s, "linbench-doctor-nvml").start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._periodic is not None:
            self._periodic.stop()

    def _sample(self) -> None:
        self.shots.append(self.device.snapshot(full=False))

    def summary(self) -> dict[str, Any]:
        """Median and lowest SM clock, highest power and temperature, every throttle reason seen;
        the first quarter of the samples (clocks ramping up) is left out."""
        shots = self.shots[len(self.shots) // 4 :] or self.shots
        clocks = [s.sm_clock_mhz for s in shots if s.sm_clock_mhz is not None]
        powers = [s.power_w for s in shots if s.power_w is not None]
        temps = [s.temp_c for s in shots if s.temp_c is not None]
        masks = [s.throttle_mask for s in shots if s.throttle_mask is not None]
        mask = 0
        for m in masks:
            mask |= m
        return {
            "samples": len(shots),
            "sm_clock_mhz": statistics.median(clocks) if clocks else None,
            "min_sm_clock_mhz": min(clocks) if clocks else None,
            "max_power_w": max(powers) if powers else None,
            "max_temp_c": max(temps) if temps else None,
            "throttle_mask": mask if masks else None,
        }
