"""Gated and delta-rule linear attention: retention, simple-gla, gla, deltanet, gated-deltanet.

Each family's package builds its ``VARIANT``; ``gated_variants`` imports them all. They are
not in the registry's built-in list yet: a benchmark run, ``linbench check`` and ``decode``
must first draw and cut their extra inputs (``Variant.extra_inputs``). Until then a caller
registers them itself (``register_variant``) or calls their impls directly.
"""

from __future__ import annotations

import importlib

from linbench.variants.registry import Variant

# Package of each variant, in the order the families build on each other.
PACKAGES = {
    "retention": "retention",
    "simple-gla": "simple_gla",
    "gla": "gla",
    "deltanet": "deltanet",
    "gated-deltanet": "gated_deltanet",
}


def gated_variants() -> tuple[Variant, ...]:
    """Every gated variant, built (importing its package) but not registered."""
    return tuple(importlib.import_module(f"{__name__}.{package}").VARIANT for package in PACKAGES.values())
