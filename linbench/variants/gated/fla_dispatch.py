"""fla with its dispatch on: the ``fla-dispatch`` impls of gated-deltanet and kda.

fla-core 0.6 hands chunk_gated_delta_rule to FlashQLA (SM90/SM100, K = V = 128, fp16/bf16) and
chunk_kda to FlashKDA (no gradient) where those packages are installed. linbench pins that off
for the ``fla`` impls before fla is first imported (feature_forms/fla.py), which also leaves
fla's kernels undecorated, so this impl makes fla's own choice itself, with fla's own backends
and its own rule (fla.backends.BackendRegistry.dispatch): the first backend by priority that is
installed, enabled and whose verifier accepts the call runs it, else fla's Triton kernel. Each
call notes which one answered, or why each declined (results.csv's ``backend``). The switch
linbench set to pin dispatch off (FLA_FLASH_KDA=0) is lifted for the choice; one the user set
stays.

Where fla 0.6.0 keeps the backends differs per kernel: FlashQLA on the *operation* registry
(``@register('gated_delta_rule') class FlashQLABackend``), FlashKDA on the *function* registry
of chunk_kda (``@register(chunk_kda) class FlashKDABackend``, fla/ops/kda/backends/flash_kda.py),
which fla fills only with its dispatch on (fla/backends.py ``register``): so chunk_kda's backend
classes are made here from where fla declares them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from linbench.variants.backends import note_backend
from linbench.variants.feature_forms import fla as fla_common

DISPATCH = "fla-dispatch"
# The gated kernels fla may hand to another library: on fla's operation registry, by operation,
OPERATIONS = {"chunk_gated_delta_rule": "gated_delta_rule"}
# or registered on the function itself: (module, class) of each backend fla 0.6.0 declares for it.
FUNCTION_BACKENDS = {"chunk_kda": (("fla.ops.kda.backends.flash_kda", "FlashKDABackend"),)}


def fla_registry(operation: str) -> Any:
    """fla's registry of backends for ``operation`` (looked up per call, so tests can stand one in)."""
    backends = fla_common.import_fla("fla.backends")
    return backends._load_operation_registry(operation)


def fla_backends(name: str) -> list[Any]:
    """The backends fla's dispatch would consult for kernel ``name``, by priority."""
    if name in OPERATIONS:
        return list(fla_registry(OPERATIONS[name])._get_sorted_backends())
    made = [getattr(fla_common.import_fla(module), cls)() for module, cls in FUNCTION_BACKENDS[name]]
    return sorted(made, key=lambda backend: backend.priority)


def run_dispatched(name: str, default: Callable[..., Any], **kwargs: Any) -> Any:
    """fla's kernel ``name`` on ``kwargs`` as fla's dispatch would run it, noting who answered
    (or why each backend declined)."""
    declined = []
    with _pins_lifted():
        for backend in fla_backends(name):
            if not (backend.is_available() and backend.is_enabled()):
                declined.append(f"{backend.backend_type}: not installed or disabled")
                continue
            accepted, reason = backend.verify(name, **kwargs)
            implementation = backend.get_implementation(name) if accepted else None
            if implementation is not None:
                note_backend(f"fla dispatch: {backend.backend_type} ({name})")
                return implementation(**kwargs)
            declined.append(f"{backend.backend_type}: {reason}")
    why = "; ".join(declined) or "no other backend"
    note_backend(f"fla dispatch: {fla_common.backend_name(name, kwargs['q'].device)} ({why})")
    return default(**kwargs)


@contextmanager
def _pins_lifted() -> Iterator[None]:
    """The per-backend switches linbench set (not the user) unset while fla chooses."""
    lifted = {name: os.environ.pop(name) for name in fla_common.pinned_by_linbench() if name in os.environ}
    try:
        yield
    finally:
        os.environ.update(lifted)
