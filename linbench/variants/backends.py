"""Which library and kernel answered an impl's call: results.csv's ``backend`` column.

An impl whose call decides at run time what runs (fla's kernel for the arguments given, the
backend SDPA picks, fla's dispatch to another library) says so with ``note_backend`` as it
runs; the worker takes the last note after the timed calls. An impl that notes nothing ran
what it declares (``declared_backend``): its ``backend``, else its library, else PyTorch's
own operators.
"""

from __future__ import annotations

from linbench.variants.declarations import Impl

EAGER = "torch eager"
_noted: str | None = None


def note_backend(name: str) -> None:
    """Record that the call now running runs ``name`` (library, then kernel)."""
    global _noted
    _noted = name


def amend_noted(suffix: str) -> None:
    """The note of the call now running with ``suffix`` added (how it was called); none: none."""
    global _noted
    if _noted is not None and not _noted.endswith(suffix):
        _noted = f"{_noted} {suffix}"


def take_noted() -> str | None:
    """The last backend a call noted since the last take (None: none noted), forgotten."""
    global _noted
    noted, _noted = _noted, None
    return noted


def declared_backend(impl: Impl | None) -> str:
    """What ``impl`` runs when its call notes nothing (PyTorch's operators for an unknown impl)."""
    if impl is None:
        return EAGER
    return impl.backend or impl.library or EAGER
