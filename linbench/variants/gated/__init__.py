"""Gated and delta-rule linear attention: retention, lightning, simple-gla, gla, deltanet, gated-deltanet, kda,
Mamba2's SSD (mamba2), Gated DeltaNet-2 (gdn2) and
RWKV-7 (rwkv7).

Each family's package builds and registers its ``VARIANT`` (they are built-in variants:
``linbench list`` shows them); ``gated_variants`` imports them all.
"""

from __future__ import annotations

import importlib

from linbench.variants.variant import Variant

# Package of each variant, in the order the families build on each other.
PACKAGES = {
    "retention": "retention",
    "lightning": "lightning",
    "simple-gla": "simple_gla",
    "gla": "gla",
    "deltanet": "deltanet",
    "gated-deltanet": "gated_deltanet",
    "kda": "kda",
    "mamba2": "mamba2",
    "gdn2": "gdn2",
    "rwkv7": "rwkv7",
}


def gated_variants() -> tuple[Variant, ...]:
    """Every gated variant (importing its package registers it)."""
    return tuple(importlib.import_module(f"{__name__}.{package}").VARIANT for package in PACKAGES.values())
