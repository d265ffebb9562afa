"""Resolving ``--variant`` and ``--baseline`` names against the registry, for a device."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import torch

from linbench.variants.registry import get_variant, list_variants


@dataclass(frozen=True)
class Targets:
    """The (variant, impl) pairs to run, baselines last, and notes on impls left out."""

    pairs: tuple[tuple[str, str], ...]
    baselines: tuple[tuple[str, str], ...]
    notes: tuple[str, ...]


def _expand(specs: Iterable[str], device: torch.device, notes: list[str]) -> list[tuple[str, str]]:
    """``V`` → every impl of V that runs on ``device``; ``V:IMPL`` → that impl, which must run."""
    pairs: list[tuple[str, str]] = []
    for spec in specs:
        name, _, impl_name = spec.partition(":")
        names = list_variants() if name.strip() == "all" else [name.strip()]
        for variant_name in names:
            variant = get_variant(variant_name)
            if impl_name.strip():
                impl = variant.impl(impl_name.strip())
                reason = impl.unavailable_reason(device)
                if reason is not None:
                    raise ValueError(f"{variant.name}:{impl.name} cannot run on {device}: {reason}")
                pairs.append((variant.name, impl.name))
                continue
            for impl in variant.impls.values():
                reason = impl.unavailable_reason(device)
                if reason is None:
                    pairs.append((variant.name, impl.name))
                else:
                    notes.append(f"{variant.name}:{impl.name} left out: {reason}")
    return pairs


def resolve_targets(variants: Iterable[str], baselines: Iterable[str], device: torch.device) -> Targets:
    """Every impl to run on ``device``; ValueError naming an unknown variant or impl."""
    notes: list[str] = []
    chosen = _expand(variants, device, notes)
    base = [pair for pair in _expand(baselines, device, notes) if pair not in chosen]
    pairs = tuple(dict.fromkeys([*chosen, *base]))
    if not pairs:
        raise ValueError(f"no impl of {', '.join(variants)} can run on {device}")
    baseline_pairs = tuple(p for p in _expand(baselines, device, []) if p in pairs)
    return Targets(pairs=pairs, baselines=baseline_pairs, notes=tuple(dict.fromkeys(notes)))
