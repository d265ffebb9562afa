"""A background NVML sampler: device-wide memory, SM clock, temperature and throttling.

PyTorch's allocator sees only its own process's tensors. NVML sees the whole device:
the CUDA context, library workspaces (cuBLAS, cuDNN) and other processes. Sampling it
every couple of milliseconds during a measured region gives the device-wide peak, and
the clock, temperature and throttle reasons say whether the GPU ran at full speed.

The sampler is a Python thread, and a sample (four NVML calls through ctypes, each handing
the GIL back and forth) taken while the timing thread queues a timed call would be host time
inside that call's events, for a call whose GPU waits on its host. So the sampler samples
only under its ``quiet`` lock, which the CUDA timer holds while it queues the timed
repetitions (linbench/measure/cuda_timer.py): it samples through the first call and the
warm-up, while the host waits for the GPU to finish the repetitions, and after them, never
among them. A thread waiting for the lock holds no GIL; the one wake-up that finds it held
asks for the GIL once, not a sample's worth of calls.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

# The reason bit NVML sets while the GPU idles (between the kernels of a small op, say).
GPU_IDLE = 0x1
# NVML's clock-event (throttle) reason bits, named as nvidia-smi names them.
THROTTLE_REASONS = {
    GPU_IDLE: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}


def throttle_names(mask: int) -> str:
    """``sw_power_cap|hw_slowdown`` for a reason bit mask; empty for none."""
    return "|".join(name for bit, name in THROTTLE_REASONS.items() if mask & bit)


def load_nvml() -> Any:
    """The ``pynvml`` module, initialised; the caller calls ``nvmlShutdown()`` when done."""
    import pynvml  # nvidia-ml-py

    pynvml.nvmlInit()
    return pynvml


def nvml_handle(nvml: Any, device_index: int) -> Any:
    """NVML's handle for torch's CUDA device ``device_index``.

    torch numbers devices after CUDA_VISIBLE_DEVICES; NVML numbers all of them. The UUID
    is the same in both, so match on it and fall back to the index.
    """
    import torch

    uuid = str(getattr(torch.cuda.get_device_properties(device_index), "uuid", "") or "")
    for candidate in (f"GPU-{uuid}", uuid):
        if uuid:
            try:
                return nvml.nvmlDeviceGetHandleByUUID(candidate)
            except Exception:
                continue
    return nvml.nvmlDeviceGetHandleByIndex(device_index)


def driver_version() -> str | None:
    """The NVIDIA driver version, or None without NVML."""
    try:
        nvml = load_nvml()
    except Exception:
        return None
    try:
        version = nvml.nvmlSystemGetDriverVersion()
        return version.decode() if isinstance(version, bytes) else str(version)
    finally:
        nvml.nvmlShutdown()


def read_throttle_mask(nvml: Any, handle: Any) -> int:
    """The device's clock-event (throttle) reason bits now."""
    # nvidia-ml-py renamed "throttle reasons" to "clocks event reasons"; accept either.
    getter = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
    getter = getter or nvml.nvmlDeviceGetCurrentClocksThrottleReasons
    return int(getter(handle))


class Periodic:
    """Calls ``sample`` every ``interval_s`` on a daemon thread, from ``start()`` until ``stop()``,
    each time under ``hold`` where one is given (a sample waits while another thread holds it).

    Both NVML samplers (this module's, for a point, and the doctor's, for its load) run on it.
    """

    def __init__(
        self,
        sample: Callable[[], object],
        interval_s: float,
        name: str,
        hold: AbstractContextManager[object] | None = None,
    ) -> None:
        self._sample, self._interval_s, self._hold = sample, interval_s, hold
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)

    def start(self) -> Periodic:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop and wait for the thread: no sample is taken after this returns."""
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        while not self._stop.wait(self._interval_s):
            with self._hold or nullcontext():
                if not self._stop.is_set():
                    self._sample()


@dataclass
class NvmlSampler:
    """Context manager sampling the device every ``interval_s`` on a background thread, never
    while another thread holds ``quiet`` (the CUDA timer, queueing timed calls).

    When NVML cannot be used, ``error`` says why and the figures stay None: the run goes
    on with the allocator's figures alone.
    """

    device_index: int
    interval_s: float = 0.002
    peak_used_bytes: int | None = None
    min_sm_clock_mhz: int | None = None
    max_temp_c: int | None = None
    throttle_mask: int = 0
    samples: int = 0
    error: str | None = None
    quiet: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _periodic: Periodic | None = field(default=None, repr=False)

    def __enter__(self) -> NvmlSampler:
        try:
            self._nvml = load_nvml()
            self._handle = nvml_handle(self._nvml, self.device_index)
            self._sample()
        except Exception as exc:
            self.error = f"NVML unavailable: {type(exc).__name__}: {exc}"
            return self
        self._periodic = Periodic(self._sample, self.interval_s, "linbench-nvml", hold=self.quiet).start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._periodic is None:
            return
        self._periodic.stop()
        self._sample()
        self._nvml.nvmlShutdown()

    def _sample(self) -> None:
        nvml, handle = self._nvml, self._handle
        used = int(nvml.nvmlDeviceGetMemoryInfo(handle).used)
        clock = int(nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM))
        temp = int(nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU))
        self.peak_used_bytes = max(self.peak_used_bytes or 0, used)
        self.min_sm_clock_mhz = clock if self.min_sm_clock_mhz is None else min(self.min_sm_clock_mhz, clock)
        self.max_temp_c = max(self.max_temp_c or temp, temp)
        self.throttle_mask |= read_throttle_mask(nvml, handle)
        self.samples += 1
