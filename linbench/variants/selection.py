"""Reading ``V``, ``V:IMPL`` and ``all`` (as ``--variant`` takes them) against the registry."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from linbench.variants.registry import Variant, get_variant, list_variants


@dataclass(frozen=True)
class Selected:
    """One impl picked by a spec; ``explicit`` when the spec named the impl itself."""

    variant: Variant
    impl: str
    explicit: bool


def select_impls(specs: Iterable[str]) -> list[Selected]:
    """Each impl that ``specs`` name, once, in order: ``V`` is every impl of V, ``V:IMPL`` one
    impl, ``all`` (or no spec at all) every impl of every variant. ValueError on unknown names.

    The registry is read now, not at import, so variants registered at run time are seen.
    """
    selected: dict[tuple[str, str], Selected] = {}
    for spec in list(specs) or ["all"]:
        name, _, impl = (part.strip() for part in spec.partition(":"))
        for variant in [get_variant(n) for n in list_variants()] if name == "all" else [get_variant(name)]:
            impls = [variant.impl(impl).name] if impl else list(variant.impls)
            for impl_name in impls:
                selected.setdefault((variant.name, impl_name), Selected(variant, impl_name, bool(impl)))
    return list(selected.values())
