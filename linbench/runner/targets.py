"""Resolving ``--variant`` and ``--baseline`` names against the registry, for a device.

For ``linbench run`` the names select impls; for ``linbench decode`` they select decoders,
which run wherever torch does.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import torch

from linbench.variants.selection import select_decoders, select_impls


@dataclass(frozen=True)
class Targets:
    """The (variant, impl) pairs to run, baselines last, and notes on impls left out."""

    pairs: tuple[tuple[str, str], ...]
    baselines: tuple[tuple[str, str], ...]
    notes: tuple[str, ...]


def _expand(specs: Iterable[str], device: torch.device, notes: list[str], decode: bool) -> list[tuple[str, str]]:
    """``V`` → every impl of V that runs on ``device``; ``V:IMPL`` → that impl, which must run."""
    specs = list(specs)
    if not specs:  # no baseline; select_impls would read "nothing given" as "all"
        return []
    if decode:
        return [(pick.variant.name, pick.impl) for pick in select_decoders(specs)]
    pairs: list[tuple[str, str]] = []
    for pick in select_impls(specs):
        reason = pick.variant.impls[pick.impl].unavailable_reason(device)
        if reason is None:
            pairs.append((pick.variant.name, pick.impl))
        elif pick.explicit and not pick.variant.impls[pick.impl].optional:
            raise ValueError(f"{pick.variant.name}:{pick.impl} cannot run on {device}: {reason}")
        else:
            notes.append(f"{pick.variant.name}:{pick.impl} left out: {reason}")
    return pairs


def resolve_targets(
    variants: Iterable[str], baselines: Iterable[str], device: torch.device, decode: bool = False
) -> Targets:
    """Every impl (decoder, for ``decode``) to run on ``device``; ValueError naming an
    unknown variant or impl."""
    notes: list[str] = []
    chosen = _expand(variants, device, notes, decode)
    baseline_pairs = _expand(baselines, device, notes, decode)
    pairs = tuple(dict.fromkeys([*chosen, *baseline_pairs]))
    if not pairs:
        why = f" ({'; '.join(dict.fromkeys(notes))})" if notes else ""
        raise ValueError(f"no impl of {', '.join(variants)} can run on {device}{why}")
    return Targets(pairs=pairs, baselines=tuple(baseline_pairs), notes=tuple(dict.fromkeys(notes)))
