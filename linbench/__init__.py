"""linbench: benchmark and profile linear attention against softmax attention.

The public API is loaded lazily so that ``linbench --help`` and the other commands that
only read results never pay for importing torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from linbench.version import __version__

__all__ = [
    "BETA",
    "CHANNEL_GATE",
    "HEAD_GATE",
    "Decoder",
    "ExtraInput",
    "Impl",
    "ImplUnavailableError",
    "Param",
    "SweepRequest",
    "Variant",
    "__version__",
    "attention",
    "get_variant",
    "list_variants",
    "load_run",
    "plan_sweep",
    "register_variant",
    "run_sweep",
]
_API_NAMES = ("attention", "get_variant", "list_variants")
_SWEEP_NAMES = ("plan_sweep", "run_sweep")
# What a plugin needs to declare a variant (docs/plugins.md).
_REGISTRY_NAMES = ("Decoder", "Impl", "Param", "Variant", "register_variant")
# The built-in gated variants' extra inputs, for a plugin to declare the same ones with.
_GATE_NAMES = ("BETA", "CHANNEL_GATE", "HEAD_GATE")

if TYPE_CHECKING:
    from linbench.api import attention, get_variant, list_variants
    from linbench.errors import ImplUnavailableError
    from linbench.results.loaded import load_run
    from linbench.runner.sweeps import plan_sweep, run_sweep
    from linbench.sweep.request import SweepRequest
    from linbench.variants.declarations import Decoder, Impl, Param
    from linbench.variants.extra_inputs import ExtraInput
    from linbench.variants.gated.gates import BETA, CHANNEL_GATE, HEAD_GATE
    from linbench.variants.registry import register_variant
    from linbench.variants.variant import Variant


def __getattr__(name: str) -> Any:
    if name in _API_NAMES:
        from linbench import api

        return getattr(api, name)
    if name in _SWEEP_NAMES:
        from linbench.runner import sweeps

        return getattr(sweeps, name)
    if name == "ImplUnavailableError":  # what an impl raises for a point it cannot run
        from linbench.errors import ImplUnavailableError

        return ImplUnavailableError
    if name == "load_run":  # a run folder's rows, typed (no torch)
        from linbench.results.loaded import load_run

        return load_run
    if name == "SweepRequest":
        from linbench.sweep.request import SweepRequest

        return SweepRequest
    if name == "ExtraInput":  # what a plugin declares its gates and β with
        from linbench.variants.extra_inputs import ExtraInput

        return ExtraInput
    if name in _GATE_NAMES:
        from linbench.variants.gated import gates

        return getattr(gates, name)
    if name in _REGISTRY_NAMES:
        from linbench.variants import registry

        return getattr(registry, name)
    raise AttributeError(f"module 'linbench' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The public names, loaded or not (they are loaded on first use, by __getattr__)."""
    return sorted({*globals(), *__all__})
