"""The variant registry: how a variant is registered, and how one is found by name.

A variant is declared with the classes of linbench/variants/declarations.py (Param, Impl,
Decoder) and linbench/variants/variant.py (Variant); the built-in variants register
themselves when their package is imported, and plugins through an entry point or a file
(linbench/variants/plugins.py).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import logging

# What a plugin declares a variant with (its classes, the functions they hold, the error an
# impl raises) is importable from here too, as docs/python-api.md says.
from linbench.errors import ImplUnavailableError
from linbench.variants.declarations import (
    Decoder,
    Impl,
    ImplFn,
    MaskedFn,
    PackedFn,
    Param,
    PrefillFn,
    StreamFn,
    exponent_in_s,
)
from linbench.variants.variant import Variant

__all__ = [
    "BUILTIN_VARIANTS",
    "ENTRY_POINT_GROUP",
    "Decoder",
    "Impl",
    "ImplFn",
    "ImplUnavailableError",
    "MaskedFn",
    "PackedFn",
    "Param",
    "PrefillFn",
    "StreamFn",
    "Variant",
    "exponent_in_s",
    "get_variant",
    "list_variants",
    "optional_libraries",
    "register_variant",
    "unregister_variant",
]

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "linbench.variants"

_REGISTRY: dict[str, Variant] = {}
_plugins_loaded = False


def register_variant(variant: Variant, *, replace: bool = False) -> Variant:
    """Add ``variant`` to the registry; a name already taken raises unless ``replace``."""
    if not isinstance(variant, Variant):
        raise TypeError(f"register_variant expects a Variant, got {type(variant).__name__}")
    if variant.name in _REGISTRY and not replace:
        raise ValueError(f"a variant called {variant.name!r} is already registered")
    _REGISTRY[variant.name] = variant
    return variant


def unregister_variant(name: str) -> None:
    """Remove a variant (plugins and tests use this to clean up)."""
    _REGISTRY.pop(name, None)


BUILTIN_VARIANTS = (
    *("softmax", "cosine", "cosformer", "heinsen", "linear"),
    *("retention", "lightning", "simple-gla", "gla", "deltanet", "gated-deltanet", "kda"),
    "mamba2",
    "gdn2",
    "rwkv7",
)
# The package of each built-in variant whose name is not its package's (a hyphen).
_BUILTIN_PACKAGES = {
    "retention": "gated.retention",
    "lightning": "gated.lightning",
    "simple-gla": "gated.simple_gla",
    "gla": "gated.gla",
    "deltanet": "gated.deltanet",
    "gated-deltanet": "gated.gated_deltanet",
    "kda": "gated.kda",
    "mamba2": "gated.mamba2",
    "gdn2": "gated.gdn2",
    "rwkv7": "gated.rwkv7",
}


def load_builtin_variants() -> None:
    """Import every built-in variant's package, which registers it. Done lazily so importing
    the registry (and so `linbench --help`) stays cheap; a worker's fork server calls it once,
    so that the workers it forks hold the variants from their start."""
    for name in BUILTIN_VARIANTS:
        importlib.import_module(f"linbench.variants.{_BUILTIN_PACKAGES.get(name, name)}")


def _load_entry_point_plugins() -> None:
    """Register variants that installed packages expose under the ``linbench.variants`` group.

    An entry point names a Variant, or a callable returning a Variant or a list of them.
    A broken plugin is logged and skipped: it must not take the built-in variants down.
    """
    for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            obj = entry.load()
            produced = obj() if callable(obj) and not isinstance(obj, Variant) else obj
            for variant in produced if isinstance(produced, list | tuple) else [produced]:
                register_variant(variant, replace=True)
        except Exception as exc:  # any plugin failure is reported, never raised
            log.warning("linbench plugin %s failed to load: %s", entry.name, exc)


def _ensure_loaded() -> None:
    global _plugins_loaded
    load_builtin_variants()
    if not _plugins_loaded:
        _plugins_loaded = True
        _load_entry_point_plugins()


def list_variants() -> list[str]:
    """Names of every registered variant: the built-in ones in their order (whichever was
    imported first), then the plugins' in the order they registered."""
    _ensure_loaded()
    builtin = [name for name in BUILTIN_VARIANTS if name in _REGISTRY]
    return builtin + [name for name in _REGISTRY if name not in BUILTIN_VARIANTS]


def optional_libraries() -> list[str]:
    """The distributions the registered impls run on (``Impl.library``), each named once."""
    _ensure_loaded()
    declared = (impl.library for variant in _REGISTRY.values() for impl in variant.impl_list if impl.library)
    return list(dict.fromkeys(declared))


def get_variant(name: str) -> Variant:
    """The variant called ``name``; ValueError listing the variants when there is none."""
    _ensure_loaded()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown variant {name!r}; variants: {', '.join(_REGISTRY)}") from None
