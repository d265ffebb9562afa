"""Errors that more than one layer raises or catches.

They live at the bottom of the package so that the compiled ops (``kernels/``), the variants
that call them and the correctness gate above can share one type without one importing another.
"""

from __future__ import annotations


class ImplUnavailableError(RuntimeError):
    """An impl exists but cannot run here (wrong device, missing backend, failed build)."""
