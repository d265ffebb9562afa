"""Resolving ``--variant`` and ``--against`` names against the registry, for a device.

For ``linbench run`` the names select impls; for ``linbench decode`` they select decoders,
which run wherever torch does.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import torch

from linbench.runner.kind_protocol import Kind
from linbench.runner.run_kind import RUN


@dataclass(frozen=True)
class Targets:
    """The (variant, impl) pairs to run, baselines last, and notes on impls left out."""

    pairs: tuple[tuple[str, str], ...]
    baselines: tuple[tuple[str, str], ...]
    notes: tuple[str, ...]
    # The pairs --variant asked for (a baseline may be among them, as softmax against softmax).
    chosen: tuple[tuple[str, str], ...] = ()
    # The pairs named as VARIANT:IMPL (not by a bare variant name): they run wherever asked.
    named: frozenset[tuple[str, str]] = frozenset()


def _expand(
    specs: Iterable[str], device: torch.device, notes: list[str], kind: Kind, named: set[tuple[str, str]]
) -> list[tuple[str, str]]:
    """``V`` → every impl (decoder) of V that runs on ``device``; ``V:IMPL`` → that one, which
    must run (and is added to ``named``)."""
    specs = list(specs)
    if not specs:  # no baseline; selecting would read "nothing given" as "all"
        return []
    pairs: list[tuple[str, str]] = []
    for pick in kind.select(specs):
        reason = kind.unavailable_reason(pick, device)
        if reason is None:
            pairs.append((pick.variant.name, pick.impl))
            if pick.explicit:
                named.add((pick.variant.name, pick.impl))
        elif pick.explicit and not kind.optional(pick):
            raise ValueError(f"{pick.variant.name}:{pick.impl} cannot run on {device}: {reason}")
        else:
            notes.append(f"{pick.variant.name}:{pick.impl} left out: {reason}")
    return pairs


def resolve_targets(
    variants: Iterable[str], baselines: Iterable[str], device: torch.device, kind: Kind = RUN
) -> Targets:
    """Every impl (decoder, for the decode kind) to run on ``device``; ValueError naming an
    unknown variant or impl."""
    notes: list[str] = []
    named: set[tuple[str, str]] = set()
    chosen = _expand(variants, device, notes, kind, named)
    baseline_pairs = _expand(baselines, device, notes, kind, named)
    pairs = tuple(dict.fromkeys([*chosen, *baseline_pairs]))
    if not pairs:
        why = f" ({'; '.join(dict.fromkeys(notes))})" if notes else ""
        raise ValueError(f"no impl of {', '.join(variants)} can run on {device}{why}")
    return Targets(
        pairs=pairs,
        baselines=tuple(baseline_pairs),
        notes=tuple(dict.fromkeys(notes)),
        chosen=tuple(chosen),
        named=frozenset(named),
    )
