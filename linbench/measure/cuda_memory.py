"""Peak memory of a region on a CUDA device, from PyTorch's caching allocator."""

from __future__ import annotations

from dataclasses import dataclass
from types import TracebackType

import torch


@dataclass
class CudaPeak:
    """Context manager: ``peak_bytes`` is the allocator's peak inside the block minus the
    bytes allocated before it; ``reserved_bytes`` is the most the allocator held from the
    driver meanwhile (what other processes could not use).

    The peak statistics are reset on entry, so the figure does not depend on what ran
    earlier in the process.
    """

    device: torch.device
    baseline_bytes: int = 0
    peak_bytes: int = 0
    reserved_bytes: int = 0

    def __enter__(self) -> CudaPeak:
        torch.cuda.synchronize(self.device)
        torch.cuda.reset_peak_memory_stats(self.device)
        self.baseline_bytes = torch.cuda.memory_allocated(self.device)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        torch.cuda.synchronize(self.device)
        self.peak_bytes = max(0, torch.cuda.max_memory_allocated(self.device) - self.baseline_bytes)
        self.reserved_bytes = torch.cuda.max_memory_reserved(self.device)
