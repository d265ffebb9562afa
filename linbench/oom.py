"""Telling an out-of-memory failure from other failures, on GPU and CPU."""

from __future__ import annotations

# What torch and the C library say when an allocation fails: CUDA's OutOfMemoryError,
# the CPU allocator under an address-space limit, and a plain MemoryError.
_OOM_MARKERS = ("out of memory", "not enough memory", "can't allocate memory", "cannot allocate memory")


def is_out_of_memory(exc: BaseException) -> bool:
    """True when ``exc`` means an allocation failed."""
    if isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError":
        return True
    return isinstance(exc, RuntimeError) and any(marker in str(exc).lower() for marker in _OOM_MARKERS)
