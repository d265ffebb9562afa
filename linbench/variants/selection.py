"""Reading ``V``, ``V:IMPL`` and ``all`` (as ``--variant`` takes them) against the registry.

``linbench decode`` reads the same forms against the variants' decoders: ``cosine`` is
every decoder of cosine, ``softmax:kvcache`` one decoder.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from linbench.variants.registry import get_variant, list_variants
from linbench.variants.variant import Variant


@dataclass(frozen=True)
class Selected:
    """One impl picked by a spec; ``explicit`` when the spec named the impl itself."""

    variant: Variant
    impl: str
    explicit: bool


def select_impls(specs: Iterable[str]) -> list[Selected]:
    """Each impl that ``specs`` name, once, in order: ``V`` is every impl of V, ``V:IMPL`` one
    impl, ``all`` (or no spec at all) every impl of every variant but those selected only by
    name (the compiled impls: ``V:compiled``). ValueError on unknown names.

    The registry is read now, not at import, so variants registered at run time are seen.
    """

    def impls(variant: Variant, name: str) -> list[str]:
        if name:
            return [variant.impl(name).name]
        return [impl.name for impl in variant.impls.values() if not impl.by_name]

    return _select(specs, impls)


def select_decoders(specs: Iterable[str]) -> list[Selected]:
    """Each decoder that ``specs`` name, once, in order: ``V`` is every decoder of V,
    ``V:DECODER`` one decoder, ``all`` every decoder of every variant that has one.
    ValueError for unknown names and for a variant or name that cannot decode."""

    def decoders(variant: Variant, name: str) -> list[str]:
        if name or not variant.decoders:
            return [variant.decoder(name).name]  # raises, naming the decoders there are (or none)
        return list(variant.decoders)

    named: list[str] = []
    for spec in list(specs) or ["all"]:
        if spec.strip() == "all":  # every variant that can decode, not every variant
            named += [name for name in list_variants() if get_variant(name).decoders]
        else:
            named.append(spec)
    return _select(named, decoders)


def _select(specs: Iterable[str], forms: Callable[[Variant, str], list[str]]) -> list[Selected]:
    selected: dict[tuple[str, str], Selected] = {}
    for spec in list(specs) or ["all"]:
        name, colon, impl = (part.strip() for part in spec.partition(":"))
        if colon and not impl:  # "cosine:" once meant every impl of cosine, as "cosine" does
            raise ValueError(f"{spec.strip()!r} names no impl after the colon: give V:IMPL, or V for every impl")
        for variant in [get_variant(n) for n in list_variants()] if name == "all" else [get_variant(name)]:
            for form in forms(variant, impl):
                selected.setdefault((variant.name, form), Selected(variant, form, bool(impl)))
    return list(selected.values())
